"""The ``[tool.fxscope]`` table of a workspace's ``pyproject.toml``, parsed into typed dataclasses.

Every mistake in the table is a :class:`ConfigError` whose text is one line naming the file and the
key, so a front end can print it as is or turn it into a diagnostic (``.path``, ``.key``, ``.line``).

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> _ = (root / "pyproject.toml").write_text('[tool.fxscope]\\ntimeout = 5\\n')
>>> config = load_config(root)
>>> config.timeout, config.device, config.include
(5.0, 'meta', ('**/*.py', '**/*.ipynb'))
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import keyword
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "ANALYSES",
    "Config",
    "ConfigError",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "TargetConfig",
    "find_root",
    "load_config",
]

#: Files considered by default (root-relative globs, ``**`` spans directories): Python files and
#: Jupyter notebooks.
DEFAULT_INCLUDE: tuple[str, ...] = ("**/*.py", "**/*.ipynb")

#: Directories never walked; a pattern without ``/`` matches a directory of that name anywhere.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".venv", "venv", ".env", "build", "dist", ".git", "__pycache__", ".fxscope_cache",
    "node_modules", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "*.egg-info",
    "site-packages", ".ipynb_checkpoints",
)

_DEVICES = ("meta", "cpu")
#: The analyses fxscope ships (fx symbolic tracing, torch.compile, torch.export; see
#: ``fxscope.job.analyses``); ``analyses`` lists which run, ``["fx"]`` by default. With ``plugins``
#: a workspace adds analyses of its own, named the same way.
ANALYSES = ("fx", "compile", "export")
_DEFAULT_ANALYSES = ("fx",)
#: A setting of an analysis option, as TOML gives it.
OptionValue = Union[str, int, float, bool]
#: Older top-level keys, kept as aliases of an analysis's option: key -> (analysis, option, the
#: value that means its default: set to it, the alias changes nothing, not even the fingerprint).
OPTION_ALIASES: dict[str, tuple[str, str, OptionValue]] = {
    "compile-dynamic": ("compile", "dynamic", "auto"), "export-strict": ("export", "strict", False),
    "export-dynamic-batch": ("export", "dynamic-batch", False)}
_ANALYSIS_NAME_RE = re.compile(r"[a-z][a-z0-9_-]*\Z")
_MIN_MEMORY_MB = 256
_MAX_MEMORY_MB = 1 << 24  # 16 TiB: a larger address-space limit overflows setrlimit
_TABLE = "[tool.fxscope]"
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})*\Z")
_QUALIFIED_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})+\Z")
_FACTORY_RE = re.compile(rf"{_IDENT}(?:\.{_IDENT})*:{_IDENT}(?:\.{_IDENT})*\Z")
#: A target's factory: a function of a module, or of a notebook named by its root-relative path.
_TARGET_FACTORY_RE = re.compile(rf"(?:{_IDENT}(?:\.{_IDENT})*|[^:\n\\]+\.ipynb):{_IDENT}(?:\.{_IDENT})*\Z")
_TOML_POS_RE = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)\s*\Z")


class ConfigError(Exception):
    """A mistake in ``pyproject.toml``; ``str(error)`` is one line naming the file and the key.

    ``path`` is the file, ``key`` the offending TOML key (``None`` for syntax errors) and ``line``
    the 1-based line when it could be located.
    """

    def __init__(
        self, message: str, *, path: Path | None = None, key: str | None = None,
        line: int | None = None, column: int | None = None,
    ) -> None:
        self.message = " ".join(message.split("\n"))
        self.path = path
        self.key = key
        self.line = line
        self.column = column
        where = str(path) if path is not None else "pyproject.toml"
        if key is None and line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {self.message}")


@dataclass(frozen=True)
class TargetConfig:
    """A ``[tool.fxscope.targets.<name>]`` table: a factory ``module.path:callable`` returning a
    module (or ``(module, concrete_args)``), and ``concrete-args`` passed to the tracer.
    ``inputs`` (shape-aware tracing) maps forward parameters to ``{"shape": [...], "dtype": ...}``,
    or is ``"auto"`` (derived from a transformers model's config); empty without example inputs."""

    name: str
    factory: str
    concrete_args: dict[str, Any] = field(default_factory=dict, hash=False)
    inputs: dict[str, Any] | str = field(default_factory=dict, hash=False)
    #: The analyses of this target (``analyses`` in its table); None: the workspace's.
    analyses: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``concrete_args`` keyed as in Python; ``inputs`` and ``analyses`` only
        when set)."""
        out: dict[str, Any] = {"name": self.name, "factory": self.factory,
                               "concrete_args": dict(self.concrete_args)}
        if self.inputs:
            out["inputs"] = self.inputs if isinstance(self.inputs, str) else dict(self.inputs)
        if self.analyses is not None:
            out["analyses"] = list(self.analyses)
        return out


@dataclass(frozen=True)
class Config:
    """The effective configuration of one workspace; every path is absolute.

    ``source`` is the ``pyproject.toml`` that was read (``None`` when there is none). ``exclude``
    holds :data:`DEFAULT_EXCLUDE` followed by the user's patterns.
    """

    root: Path
    source: Path | None = None
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    python_path: tuple[Path, ...] = ()
    auto_targets: bool = True
    preload: tuple[str, ...] = ()
    timeout: float = 30.0
    device: str = "meta"
    leaf_modules: tuple[str, ...] = ()
    wrap_functions: tuple[str, ...] = ()
    targets: tuple[TargetConfig, ...] = ()
    workers: int | None = None
    cache_dir: Path | None = None
    memory_limit_mb: int = 4096
    #: Which analyses run per target (see :data:`ANALYSES`); their settings (analysis name ->
    #: option -> value, from ``[tool.fxscope.analysis.<name>]`` tables and the aliases of
    #: :data:`OPTION_ALIASES`; each analysis declares and checks its options); the modules that
    #: register more analyses (``plugins``).
    analyses: tuple[str, ...] = _DEFAULT_ANALYSES
    analysis_options: Mapping[str, Mapping[str, OptionValue]] = field(default_factory=dict, hash=False)
    plugins: tuple[str, ...] = ()
    #: Run user code in the OS sandbox (``sandbox = false`` in [tool.fxscope], or ``--no-sandbox``).
    sandbox: bool = True

    def __post_init__(self) -> None:
        if not self.python_path:  # Config(root=...) behaves like a workspace without a config
            default = (self.root, self.root / "src") if (self.root / "src").is_dir() else (self.root,)
            object.__setattr__(self, "python_path", default)

    def _trace_inputs(self) -> dict[str, Any]:
        def rel(p: Path) -> str:
            return Path(os.path.relpath(p, self.root)).as_posix()

        return {
            "include": list(self.include),
            "exclude": list(self.exclude),
            "python_path": [rel(p) for p in self.python_path],
            "auto_targets": self.auto_targets,
            "preload": list(self.preload),
            "timeout": self.timeout,
            "device": self.device,
            "leaf_modules": list(self.leaf_modules),
            "wrap_functions": list(self.wrap_functions),
            "targets": [t.to_json() for t in self.targets],
            "memory_limit_mb": self.memory_limit_mb,
            **self._analysis_inputs(),
        }

    def _analysis_inputs(self) -> dict[str, Any]:
        """The analysis settings that differ from the defaults (left out otherwise, so a
        configuration without them keeps the fingerprint it always had)."""
        out: dict[str, Any] = {}
        if self.analyses != _DEFAULT_ANALYSES:
            out["analyses"] = list(self.analyses)
        if self.analysis_options:
            out["analysis_options"] = {k: dict(v) for k, v in self.analysis_options.items() if v}
        if self.plugins:
            out["plugins"] = list(self.plugins)
        if not self.sandbox:  # what user code may do changes what it does
            out["sandbox"] = False
        return out

    def analyses_for(self, target_id: str) -> tuple[str, ...]:
        """The analyses of a target: its own ``analyses`` (a factory target's table), else the
        workspace's."""
        own = next((t.analyses for t in self.targets if t.name == target_id), None)
        return own if own is not None else self.analyses

    def analysis_settings(self, name: str) -> Mapping[str, OptionValue]:
        """The configured options of analysis ``name`` (its table and the aliases)."""
        return self.analysis_options.get(name) or {}

    @property
    def all_analyses(self) -> tuple[str, ...]:
        """Every analysis some target runs (the worker warms each one up once, before it forks)."""
        names = dict.fromkeys(self.analyses)
        for t in self.targets:
            names.update(dict.fromkeys(t.analyses or ()))
        return tuple(names)

    # The older settings, read through their aliases.
    @property
    def compile_dynamic(self) -> bool | None:
        """torch.compile's ``dynamic`` (None: its automatic default); alias ``compile-dynamic``."""
        value = self.analysis_settings("compile").get("dynamic", "auto")
        return None if value == "auto" else bool(value)

    @property
    def export_strict(self) -> bool:
        """Strict export; alias ``export-strict``."""
        return bool(self.analysis_settings("export").get("strict", False))

    @property
    def export_dynamic_batch(self) -> bool:
        """Export with a dynamic batch; alias ``export-dynamic-batch``."""
        return bool(self.analysis_settings("export").get("dynamic-batch", False))

    def fingerprint(self, analyses: tuple[str, ...] | None = None) -> str:
        """sha256 hex of everything that can change a trace result (paths root-relative;
        ``workers`` and ``cache_dir`` excluded), for cache keys. ``analyses``: the fingerprint of
        a job that runs only those (one phase of a target): the other analyses' names and options
        are left out, so changing them keeps that phase's results."""
        inputs = self._trace_inputs()
        if analyses is not None:
            inputs["analyses"] = list(analyses)
            inputs["analysis_options"] = {k: dict(v) for k, v in self.analysis_options.items() if v and k in analyses}
            inputs["targets"] = [{**t, "analyses": [a for a in t.get("analyses", analyses) if a in analyses]}
                                 for t in inputs["targets"]]
        blob = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """Every field as a JSON-able dict (absolute path strings); :meth:`from_json` inverts it."""
        data = self._trace_inputs()
        data.update(
            root=str(self.root),
            source=None if self.source is None else str(self.source),
            python_path=[str(p) for p in self.python_path],
            workers=self.workers,
            cache_dir=None if self.cache_dir is None else str(self.cache_dir),
        )
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Config:
        """Rebuild a :class:`Config` from :meth:`to_json` output (e.g. in a worker process)."""
        return cls(
            root=Path(data["root"]),
            source=None if data.get("source") is None else Path(data["source"]),
            include=tuple(data["include"]),
            exclude=tuple(data["exclude"]),
            python_path=tuple(Path(p) for p in data["python_path"]),
            auto_targets=bool(data["auto_targets"]),
            preload=tuple(data["preload"]),
            timeout=float(data["timeout"]),
            device=data["device"],
            leaf_modules=tuple(data["leaf_modules"]),
            wrap_functions=tuple(data.get("wrap_functions", ())),
            targets=tuple(
                TargetConfig(t["name"], t["factory"], dict(t["concrete_args"]), t.get("inputs") or {},
                             tuple(t["analyses"]) if t.get("analyses") is not None else None)
                for t in data["targets"]
            ),
            workers=data.get("workers"),
            cache_dir=None if data.get("cache_dir") is None else Path(data["cache_dir"]),
            memory_limit_mb=int(data["memory_limit_mb"]),
            analyses=tuple(data.get("analyses") or _DEFAULT_ANALYSES),
            analysis_options={str(k): dict(v) for k, v in (data.get("analysis_options") or {}).items()},
            plugins=tuple(data.get("plugins") or ()),
            sandbox=bool(data.get("sandbox", True)),
        )


# ---------------------------------------------------------------------------------------------
# loading


def load_config(root: Path) -> Config:
    """Read ``root/pyproject.toml``; defaults when it or its ``[tool.fxscope]`` table is absent.

    Raises :class:`ConfigError` for invalid TOML, unknown keys and values of the wrong type.
    """
    root = Path(os.path.abspath(os.path.expanduser(root))).resolve()
    source = root / "pyproject.toml"
    if not source.is_file():
        return _build(root, None, {}, "")
    try:
        text = source.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", path=source) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(source, text, exc) from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"'tool' must be a table, got {_describe(tool)}", path=source, key="tool")
    table = tool.get("fxscope", {})
    if not isinstance(table, dict):
        raise ConfigError(
            f"{_TABLE} must be a table, got {_describe(table)}", path=source, key="tool.fxscope",
            line=_key_line(text, "tool", "fxscope"),
        )
    return _build(root, source, table, text)


def _toml_error(source: Path, text: str, exc: Exception) -> ConfigError:
    message = str(exc)
    line = column = None
    match = _TOML_POS_RE.search(message)
    if match:
        message = message[: match.start()]
        if match.group(1):
            line, column = int(match.group(1)), int(match.group(2))
        else:
            line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    return ConfigError(f"invalid TOML: {message}", path=source, line=line or 1, column=column)


_KEYS = (
    "include", "exclude", "python-path", "auto-targets", "preload", "timeout", "device",
    "leaf-modules", "wrap-functions", "targets", "workers", "cache-dir", "memory-limit-mb",
    "analyses", "analysis", "plugins", *OPTION_ALIASES, "sandbox",
)
_TARGET_KEYS = ("factory", "concrete-args", "inputs", "analyses")
#: dtype names accepted in a target's ``inputs`` (see ``fxscope.trace.inputs.DTYPES``).
_INPUT_DTYPES = (
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32",
    "int", "int16", "int8", "uint8", "bool", "complex64",
)


def _build(root: Path, source: Path | None, table: dict[str, Any], text: str) -> Config:
    def fail(key: str, message: str, section: str = "tool.fxscope", local: str | None = None) -> ConfigError:
        line = _key_line(text, section, key if local is None else local)
        return ConfigError(message, path=source, key=key, line=line)

    _check_keys(table, _KEYS, _TABLE, "tool.fxscope", fail)
    get = _Getter(table, fail)
    include = get.patterns("include") or DEFAULT_INCLUDE
    exclude = DEFAULT_EXCLUDE + tuple(p for p in get.patterns("exclude") or () if p not in DEFAULT_EXCLUDE)
    if "python-path" in table:
        python_path = tuple(_dedupe(_abspath(root, p) for p in get.strings("python-path")))
    else:
        python_path = (root, root / "src") if (root / "src").is_dir() else (root,)
    preload = get.strings("preload", _DOTTED_RE, "dotted module names like 'transformers'")
    leaf = get.strings("leaf-modules", _QUALIFIED_RE, "qualified class names like 'pkg.layers.Attention'")
    wrap = get.strings("wrap-functions", _FACTORY_RE, "functions like 'pkg.module:function'")
    timeout = get.number("timeout", 30.0)
    device = table.get("device", "meta")
    if device not in _DEVICES:
        raise fail("device", f"{_TABLE} 'device' must be 'meta' or 'cpu', got {_describe(device)}")
    workers = get.integer("workers", None, minimum=1)
    memory = get.integer("memory-limit-mb", 4096, minimum=_MIN_MEMORY_MB, maximum=_MAX_MEMORY_MB)
    cache_dir = None
    if "cache-dir" in table:
        value = table["cache-dir"]
        if not isinstance(value, str) or not value.strip():
            raise fail("cache-dir", f"{_TABLE} 'cache-dir' must be a path string, got {_describe(value)}")
        cache_dir = _abspath(root, value)
    plugins = get.strings("plugins", _DOTTED_RE, "dotted module names like 'pkg.fxscope_analyses'")
    analyses = _analyses(table.get("analyses", list(_DEFAULT_ANALYSES)), _TABLE, lambda m: fail("analyses", m),
                         bool(plugins))
    dynamic = table.get("compile-dynamic", "auto")
    if dynamic not in (True, False, "auto"):
        raise fail("compile-dynamic", f"{_TABLE} 'compile-dynamic' must be true, false or \"auto\", "
                                      f"got {_describe(dynamic)}")
    return Config(
        root=root, source=source, include=include, exclude=exclude, python_path=python_path,
        auto_targets=get.boolean("auto-targets", True), preload=preload, timeout=timeout,
        device=device, leaf_modules=leaf, wrap_functions=wrap, targets=_targets(table.get("targets", {}), fail, bool(plugins)),
        workers=workers, cache_dir=cache_dir, memory_limit_mb=memory, analyses=analyses,
        analysis_options=_analysis_options(table, get, fail), plugins=plugins,
        sandbox=get.boolean("sandbox", True),
    )


def _analysis_options(table: dict[str, Any], get: _Getter,
                      fail: Callable[..., ConfigError]) -> dict[str, dict[str, OptionValue]]:
    """The ``[tool.fxscope.analysis.<name>]`` tables (scalars; each analysis checks its own
    options when it runs), with the older top-level keys of :data:`OPTION_ALIASES` added."""
    tables = table.get("analysis", {})
    if not isinstance(tables, dict):
        raise fail("analysis", f"{_TABLE} 'analysis' must be a table of tables ([tool.fxscope.analysis.NAME]), "
                               f"got {_describe(tables)}")
    out: dict[str, dict[str, OptionValue]] = {}
    for name, options in tables.items():
        section = f"tool.fxscope.analysis.{name}"
        if not _ANALYSIS_NAME_RE.match(name) or not isinstance(options, dict):
            raise fail("analysis", f"[{section}] must be a table named after an analysis, got {_describe(options)}")
        for key, value in options.items():
            if not isinstance(value, (str, int, float, bool)):
                raise fail(key, f"[{section}] {key!r} must be a string, number or boolean, got {_describe(value)}",
                           section, key)
        out[name] = dict(options)
    for alias, (name, option, default) in OPTION_ALIASES.items():
        if alias not in table:
            continue
        if option in out.get(name, {}):
            raise fail(alias, f"{_TABLE} {alias!r} and [tool.fxscope.analysis.{name}] {option!r} both set it")
        value = table[alias] if alias == "compile-dynamic" else get.boolean(alias, False)
        if value != default or type(value) is not type(default):
            out.setdefault(name, {})[option] = value
    return out


def _analyses(value: Any, where: str, fail: Callable[[str], ConfigError], plugins: bool = False) -> tuple[str, ...]:
    """An ``analyses`` list: known names (any analysis name when ``plugins`` may register
    more), at least one, none twice."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail(f"{where} 'analyses' must be a non-empty list of {', '.join(map(repr, ANALYSES))}, "
                   f"got {_describe(value)}")
    for name in value:
        if name not in ANALYSES and not (plugins and _ANALYSIS_NAME_RE.match(name)):
            raise fail(f"{where} 'analyses' entries must be one of {', '.join(map(repr, ANALYSES))}, got {name!r}")
    if len(set(value)) != len(value):
        raise fail(f"{where} 'analyses' lists an analysis twice: {value!r}")
    return tuple(value)


class _Getter:
    """Typed accessors on the ``[tool.fxscope]`` table that raise one-line errors."""

    def __init__(self, table: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> None:
        self.table = table
        self.fail = fail

    def strings(self, key: str, pattern: re.Pattern[str] | None = None, what: str = "") -> tuple[str, ...]:
        value = self.table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"{_TABLE} '{key}' must be a list of strings, got {_describe(value)}")
        for item in value:
            if not item.strip() or (pattern is not None and not pattern.match(item)):
                expected = what or "non-empty strings"
                raise self.fail(key, f"{_TABLE} '{key}' entries must be {expected}, got {item!r}")
        return tuple(value)

    def patterns(self, key: str) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.strings(key, None, "non-empty glob patterns"))

    def boolean(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"{_TABLE} '{key}' must be true or false, got {_describe(value)}")
        return value

    def number(self, key: str, default: float) -> float:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"{_TABLE} '{key}' must be a number, got {_describe(value)}")
        if not value > 0 or value == float("inf"):
            raise self.fail(key, f"{_TABLE} '{key}' must be a positive number of seconds, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int | None, *, minimum: int, maximum: int | None = None) -> Any:
        if key not in self.table:
            return default
        value = self.table[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"{_TABLE} '{key}' must be an integer, got {_describe(value)}")
        if value < minimum:
            raise self.fail(key, f"{_TABLE} '{key}' must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.fail(key, f"{_TABLE} '{key}' must be <= {maximum}, got {value}")
        return value


def _targets(value: Any, fail: Callable[..., ConfigError], plugins: bool = False) -> tuple[TargetConfig, ...]:
    if not isinstance(value, dict):
        raise fail("targets", f"{_TABLE} 'targets' must be a table of tables, got {_describe(value)}")
    result = []
    for name, body in value.items():
        section = f"tool.fxscope.targets.{name}"
        header = f"[tool.fxscope.targets.{_toml_key(name)}]"
        if not isinstance(body, dict):
            raise fail(
                f"targets.{name}",
                f"[tool.fxscope.targets] {name!r} must be a table with a 'factory' key, "
                f"got {_describe(body)}",
                "tool.fxscope.targets", name,
            )
        if "::" in name or not name.strip():
            raise fail(f"targets.{name}", f"target name {name!r} must be non-empty and contain no '::'",
                       "tool.fxscope.targets", name)

        def fail_in(key: str, message: str, _section: str = section) -> ConfigError:
            return fail(f"targets.{name}.{key}", message, _section, key)

        _check_keys(body, _TARGET_KEYS, header, section, fail_in)
        factory = body.get("factory")
        if factory is None:
            raise fail_in("factory", f"{header} missing required key 'factory' ('module.path:callable')")
        if not isinstance(factory, str) or not _TARGET_FACTORY_RE.match(factory.strip()):
            raise fail_in(
                "factory", f"{header} 'factory' must look like 'module.path:callable', got {_describe(factory)} "
                "(a notebook's function: 'path/to/notebook.ipynb:callable')")
        args = body.get("concrete-args", {})
        if not isinstance(args, dict):
            raise fail_in("concrete-args", f"{header} 'concrete-args' must be a table, got {_describe(args)}")
        for arg, arg_value in args.items():
            if not arg.isidentifier() or keyword.iskeyword(arg):
                raise fail_in(
                    "concrete-args", f"{header} 'concrete-args' keys must be parameter names, got {arg!r}"
                )
            if not _json_able(arg_value):
                raise fail_in(
                    "concrete-args",
                    f"{header} 'concrete-args' value of {arg!r} must be a string, number, boolean, array "
                    f"or table, got {_describe(arg_value)}",
                )
        inputs = _inputs(body.get("inputs", {}), header, fail_in)
        analyses = (_analyses(body["analyses"], header, functools.partial(fail_in, "analyses"), plugins)
                    if "analyses" in body else None)
        result.append(TargetConfig(name, factory.strip(), dict(args), inputs, analyses))
    return tuple(result)


def _inputs(value: Any, header: str, fail_in: Callable[[str, str], ConfigError]) -> dict[str, Any] | str:
    """A target's ``inputs``: ``"auto"``, or a table of ``name = [shape]`` /
    ``name = { shape = [...], dtype = "int64" }``, normalised to ``{name: {"shape", "dtype"}}``."""
    if value == "auto":
        return "auto"
    if not isinstance(value, dict):
        raise fail_in("inputs", f"{header} 'inputs' must be a table of shapes or \"auto\", got {_describe(value)}")
    out: dict[str, Any] = {}
    for name, spec in value.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            raise fail_in("inputs", f"{header} 'inputs' keys must be parameter names, got {name!r}")
        shape, dtype = spec, "float32"
        if isinstance(spec, dict):
            extra = sorted(set(spec) - {"shape", "dtype"})
            if extra or "shape" not in spec:
                raise fail_in("inputs", f"{header} 'inputs' entry {name!r} must be a shape list or "
                              f"{{ shape = [...], dtype = \"...\" }}, got keys {sorted(spec)}")
            shape, dtype = spec["shape"], spec.get("dtype", "float32")
        if (not isinstance(shape, list)
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise fail_in("inputs", f"{header} 'inputs' shape of {name!r} must be a list of non-negative "
                          f"integers, got {_describe(shape)}")
        if dtype not in _INPUT_DTYPES:
            raise fail_in("inputs", f"{header} 'inputs' dtype of {name!r} must be one of "
                          f"{', '.join(_INPUT_DTYPES)}, got {_describe(dtype)}")
        out[name] = {"shape": list(shape), "dtype": dtype}
    return out


def _check_keys(
    table: dict[str, Any], known: tuple[str, ...], header: str, section: str,
    fail: Callable[[str, str], ConfigError],
) -> None:
    for key in table:
        if key in known:
            continue
        close = difflib.get_close_matches(key.replace("_", "-"), known, n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(known)})"
        raise fail(key, f"unknown key {key!r} in {header}{hint}")


# ---------------------------------------------------------------------------------------------
# helpers


def _describe(value: Any) -> str:
    names: dict[type[Any], str] = {dict: "table", list: "list"}
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{names.get(type(value), type(value).__name__)} {text}"


def _json_able(value: Any) -> bool:
    if isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, list):
        return all(_json_able(v) for v in value)
    if isinstance(value, dict):
        return all(_json_able(v) for v in value.values())
    return False


def _abspath(root: Path, value: str) -> Path:
    return Path(os.path.normpath(root / os.path.expanduser(value)))


def _dedupe(paths: Any) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path not in seen:
            seen.append(path)
    return seen


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


_HEADER_RE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def _norm_header(raw: str) -> str:
    """``tool . "fxscope"`` -> ``tool.fxscope`` (dots inside quotes are kept)."""
    parts, current, quote = [], "", ""
    for char in raw:
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return ".".join(parts)


def target_line(config: Config, name: str) -> int:
    """1-based line of the ``[tool.fxscope.targets.<name>]`` table in ``config.source`` (else of
    ``[tool.fxscope]``, else 1): where a target's findings go when no workspace code is involved."""
    if config.source is None:
        return 1
    try:
        text = Path(config.source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 1
    return _key_line(text, "tool.fxscope.targets", name) or _key_line(text, "tool", "fxscope") or 1


def _key_line(text: str, section: str, key: str) -> int | None:
    """Best-effort 1-based line of ``key = ...`` in ``[section]``, else of ``[section.key]``, else
    of ``[section]``."""
    current = ""
    table_line = section_line = None
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        match = _HEADER_RE.match(line)
        if match:
            current = _norm_header(match.group(1))
            if current == f"{section}.{key}" and table_line is None:
                table_line = number
            if current == section and section_line is None:
                section_line = number
            continue
        if current == section and key_re.match(line):
            return number
    return table_line or section_line


# ---------------------------------------------------------------------------------------------
# root discovery

_FXSCOPE_HEADER_RE = re.compile(r"^\s*\[\[?\s*[\"']?tool[\"']?\s*\.\s*[\"']?fxscope[\"']?\s*[\].]", re.M)


def _has_fxscope_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return bool(_FXSCOPE_HEADER_RE.search(text))  # broken, but meant for us: report it there
    tool = data.get("tool")
    return isinstance(tool, dict) and "fxscope" in tool


def find_root(start: Path) -> Path:
    """The workspace root for ``start`` (a file or directory).

    The nearest ancestor whose ``pyproject.toml`` has a ``[tool.fxscope]`` table; else the nearest
    with a ``pyproject.toml`` or ``.git``; else ``start``'s directory.
    """
    here = Path(os.path.abspath(os.path.expanduser(start)))
    if not here.is_dir():
        here = here.parent
    chain = [here, *here.parents]
    for directory in chain:
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _has_fxscope_table(candidate):
            return directory
    for directory in chain:
        if (directory / "pyproject.toml").is_file() or (directory / ".git").exists():
            return directory
    return here
