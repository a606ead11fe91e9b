"""Find the targets of a workspace (``nn.Module`` classes and configured factories) from the AST
alone, and the static import graph that says which targets an edit can affect. Nothing is imported.

>>> import tempfile
>>> from fxscope.project.config import load_config
>>> root = Path(tempfile.mkdtemp())
>>> _ = (root / "net.py").write_text(
...     "from torch import nn\\n"
...     "class Net(nn.Module):\\n"
...     "    def forward(self, x):\\n"
...     "        return x\\n")
>>> [t.id for t in discover(load_config(root)).targets]
['net.py::Net']
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fxscope.model.inputs import InputCandidate
from fxscope.model.recipe import Recipe

from ._summary import Summary, file_kind, summary_of_file, summary_of_text
from .config import Config
from .files import dotted_module_name, is_example, is_included, relpath, rooted_name, script_module_name, split_rooted, workspace_files
from .notebooks import is_notebook
from .inputs import InputIndex
from .recipes import RecipeIndex

__all__ = ["INHERITED", "Discovery", "FileError", "Target", "discover"]

#: Marker in ``required_args`` when the constructor comes from a class fxscope cannot see.
INHERITED = "<inherited>"

# torch.nn names that are not nn.Module subclasses, and namespaces that hold none.
_TORCH_NON_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
_TORCH_NON_MODULE_NAMESPACES = frozenset({"init", "functional", "utils", "parameter", "grad"})
# torch.nn classes without a forward of their own (containers).
_TORCH_NO_FORWARD = frozenset({"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
# torch.nn classes whose constructor needs no argument.
_TORCH_NO_ARGS = _TORCH_NO_FORWARD | frozenset({
    "Sequential", "Identity", "Flatten", "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid",
    "Hardswish", "Hardsigmoid", "Hardtanh", "ELU", "SELU", "CELU", "LeakyReLU", "Softplus", "Softsign",
    "LogSigmoid", "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "GLU", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "AlphaDropout", "PReLU", "Tanhshrink", "Hardshrink", "Softshrink",
})
# The required parameters of torch.nn classes a workspace class may derive from without a
# constructor of its own (``class GroupNorm32(nn.GroupNorm)``): read from source, since discovery
# never imports torch; the signatures are torch's public, stable ones. Others stay INHERITED.
_TORCH_REQUIRED: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features"), "Bilinear": ("in1_features", "in2_features", "out_features"),
    **{f"Conv{n}d": ("in_channels", "out_channels", "kernel_size") for n in (1, 2, 3)},
    **{f"ConvTranspose{n}d": ("in_channels", "out_channels", "kernel_size") for n in (1, 2, 3)},
    "Embedding": ("num_embeddings", "embedding_dim"), "EmbeddingBag": ("num_embeddings", "embedding_dim"),
    "LayerNorm": ("normalized_shape",), "RMSNorm": ("normalized_shape",), "GroupNorm": ("num_groups", "num_channels"),
    **{f"{norm}{n}d": ("num_features",) for norm in ("BatchNorm", "InstanceNorm") for n in (1, 2, 3)},
    "MultiheadAttention": ("embed_dim", "num_heads"),
    "TransformerEncoderLayer": ("d_model", "nhead"), "TransformerDecoderLayer": ("d_model", "nhead"),
    "PixelShuffle": ("upscale_factor",), "PixelUnshuffle": ("downscale_factor",),
}
# Installed libraries whose public classes named like models are nn.Module subclasses with a
# forward (a class deriving from one is a target like any other; the worker checks it is a module).
_MODEL_LIBRARIES = frozenset({"transformers", "timm", "torchvision", "diffusers", "torchaudio", "open_clip",
                              "segmentation_models_pytorch", "monai", "torch_geometric"})
_LIBRARY_NON_MODELS = ("Config", "Configuration", "Tokenizer", "TokenizerFast", "Processor", "FeatureExtractor",
                       "ImageProcessor", "Output", "Outputs", "Mixin", "Dataset", "Callback", "Trainer", "Pipeline",
                       "Scheduler", "Arguments", "Args", "Error", "Exception", "Enum", "Transform", "Compose",
                       "Loader", "Sampler", "State", "Cache", "Hook", "Registry")
# transformers model classes built from a config: ``BertModel``, ``GPT2LMHeadModel``, ``BertForMaskedLM``.
_HF_MODEL = re.compile(r"(Model|For[A-Z]\w*)$")
# Bases that never define an __init__ that takes arguments.
_PLAIN_BASES = frozenset({
    "object", "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol",
    "typing_extensions.Protocol",
})


@dataclass(frozen=True)
class Target:
    """Something to trace: a discovered ``nn.Module`` class or a configured factory.

    ``id`` is ``path/file.py::ClassName`` (class) or the configured name (factory); ``file`` is
    root-relative (``""`` when a factory's module is not in the workspace); ``needs_args`` marks a
    class whose constructor has ``required_args``; ``recipes`` are the other ways to build a class
    that the workspace shows (cheapest first, see :mod:`~fxscope.project.recipes`). A class that
    needs arguments and has no recipe is reported as skipped (FXS405) without being imported.
    """

    id: str
    kind: str
    file: str
    line: int
    module: str | None
    qualname: str | None
    factory: str | None = None
    concrete_args: dict[str, Any] = field(default_factory=dict, hash=False)
    needs_args: bool = False
    required_args: tuple[str, ...] = ()
    #: Example inputs of a factory target (``TargetConfig.inputs``); empty without them.
    inputs: dict[str, Any] | str = field(default_factory=dict, hash=False)
    recipes: tuple[Recipe, ...] = field(default=(), hash=False)
    #: Example inputs the repository shows for a class (see :mod:`~fxscope.project.inputs`).
    input_hints: tuple[InputCandidate, ...] = field(default=(), hash=False)
    #: Why a class that needs arguments has no recipe (the parameters nothing fits); may be empty.
    unbuilt: str = field(default="", hash=False)
    #: The root-relative directory ``module`` (and every module its recipes name) is imported
    #: from, first on ``sys.path``, for a file under a directory that is no import name
    #: (``mixtral-moe/model.py``: ``model`` from ``mixtral-moe``); empty: the python path.
    import_root: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field (``inputs`` only when set)."""
        out = {
            "id": self.id, "kind": self.kind, "file": self.file, "line": self.line,
            "module": self.module, "qualname": self.qualname, "factory": self.factory,
            "concrete_args": dict(self.concrete_args), "needs_args": self.needs_args,
            "required_args": list(self.required_args),
        }
        if self.inputs:
            out["inputs"] = self.inputs
        if self.recipes:
            out["recipes"] = [r.to_json() for r in self.recipes]
        if self.input_hints:
            out["input_hints"] = [h.to_json() for h in self.input_hints]
        if self.unbuilt:
            out["unbuilt"] = self.unbuilt
        if self.import_root:
            out["import_root"] = self.import_root
        return out

    @functools.cached_property
    def _build_key(self) -> str:
        data: list[Any] = [self.needs_args, [r.to_json() for r in self.recipes]]
        if self.input_hints:
            data.append([h.to_json() for h in self.input_hints])
        if self.unbuilt:
            data.append(self.unbuilt)
        if self.import_root:
            data.append(["import_root", self.import_root, self.module])
        return hashlib.blake2b(json.dumps(data, sort_keys=True).encode(), digest_size=12).hexdigest()

    def build_key(self) -> str:
        """A digest of how the worker may build this target (whether it needs arguments, and its
        recipes): a cached result built under another key is stale."""
        return self._build_key

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Target:
        """Rebuild a target from :meth:`to_json` output."""
        return cls(
            id=data["id"], kind=data["kind"], file=data["file"], line=int(data["line"]),
            module=data.get("module"), qualname=data.get("qualname"), factory=data.get("factory"),
            concrete_args=dict(data.get("concrete_args") or {}), needs_args=bool(data.get("needs_args")),
            required_args=tuple(data.get("required_args") or ()), inputs=data.get("inputs") or {},
            recipes=tuple(Recipe.from_json(r) for r in data.get("recipes") or ()),
            input_hints=tuple(InputCandidate.from_json(h) for h in data.get("input_hints") or ()),
            unbuilt=str(data.get("unbuilt") or ""), import_root=str(data.get("import_root") or ""),
        )


@dataclass(frozen=True)
class FileError:
    """A workspace file that does not parse; ``line`` and ``column`` are 1-based."""

    file: str
    line: int
    column: int
    message: str


@dataclass
class Discovery:
    """The result of :func:`discover`: every target, unparsable files, every included file
    (root-relative) and the static import graph (file -> workspace files it imports, including
    the ``__init__.py`` of its parent packages, which importing it runs)."""

    targets: list[Target]
    file_errors: list[FileError]
    files: list[str]
    imports: dict[str, set[str]]
    #: Installed libraries (of :data:`PRELOADABLE`) that workspace files import, most used first.
    libraries: tuple[str, ...] = ()
    _reverse: dict[str, set[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def dependents(self, file: str) -> set[str]:
        """``file`` and every workspace file that imports it, directly or transitively."""
        if self._reverse is None:
            reverse: dict[str, set[str]] = {}
            for importer, imported in self.imports.items():
                for name in imported:
                    reverse.setdefault(name, set()).add(importer)
            self._reverse = reverse
        seen = {file}
        queue = deque([file])
        while queue:
            for importer in self._reverse.get(queue.popleft(), ()):
                if importer not in seen:
                    seen.add(importer)
                    queue.append(importer)
        return seen

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (persisted between runs); :meth:`from_json` inverts it."""
        return {
            "targets": [t.to_json() for t in self.targets],
            "file_errors": [[e.file, e.line, e.column, e.message] for e in self.file_errors],
            "files": list(self.files),
            "imports": {f: sorted(deps) for f, deps in self.imports.items()},
            "libraries": list(self.libraries),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Discovery:
        """Rebuild a discovery from :meth:`to_json` output."""
        return cls(
            [Target.from_json(t) for t in data["targets"]],
            [FileError(str(f), int(line), int(col), str(msg)) for f, line, col, msg in data["file_errors"]],
            list(data["files"]),
            {f: set(deps) for f, deps in data["imports"].items()},
            tuple(str(name) for name in data.get("libraries") or ()),
        )

    def affected_targets(self, file: str) -> list[Target]:
        """The targets whose file is ``file`` or imports it (transitively)."""
        files = self.dependents(file)
        return [t for t in self.targets if t.file in files]


# ---------------------------------------------------------------------------------------------
# name resolution

# A resolved reference: ("class", rel, name) | ("def", rel, name) | ("module", rel) | ("ext", dotted)
Ref = tuple[str, ...]


@dataclass(frozen=True)
class _Facts:
    is_module: bool = False
    has_forward: bool = False
    init: tuple[str, ...] | None = None  # required params of the first __init__; None: none found
    abstract: frozenset[str] = frozenset()


class _Workspace:
    """Resolves names across the workspace's files through their module-level bindings."""

    def __init__(self, config: Config, summaries: dict[str, Summary]) -> None:
        self.config = config
        self.summaries = summaries
        entries = [relpath(config, entry) for entry in config.python_path]
        prefixes = ["" if e == "." else e + "/" for e in entries if not e.startswith(("/", "../"))]
        self.module_of: dict[str, str | None] = {}
        self.modules: dict[str, str] = {}  # import name -> file, first python_path entry wins
        #: import root -> the top-level names of its modules (they shadow the python path's there)
        self.root_tops: dict[str, set[str]] = {}
        self.root_of: dict[str, str] = {}  # file -> its import root, for a file that has one
        for rel in summaries:
            inside = [rel[len(p):].split("/") for p in prefixes if rel.startswith(p)]
            self.module_of[rel] = dotted_module_name(min(inside, key=len)) if inside else None
        for prefix in prefixes:
            for rel in summaries:
                if rel.startswith(prefix):
                    name = dotted_module_name(rel[len(prefix):].split("/"))
                    if name is not None:
                        self.modules.setdefault(name, rel)
        packages = {rel[:-len("/__init__.py")] for rel in summaries if rel.endswith("/__init__.py")}
        for rel in summaries:  # a file under a directory that is no import name: named from its script directory
            if self.module_of[rel] is None and rel.endswith(".py"):
                entered = [(p, rel[len(p):].split("/")) for p in prefixes if rel.startswith(p)]
                if not entered:
                    continue
                prefix, parts = min(entered, key=lambda found: len(found[1]))
                found = script_module_name(parts, lambda d: prefix + d in packages)
                if found is not None:
                    root, name = prefix + found[0], found[1]
                    self.module_of[rel] = rooted_name(root, name)
                    self.modules.setdefault(rooted_name(root, name), rel)
                    self.root_of[rel] = root
                    self.root_tops.setdefault(root, set()).add(name.partition(".")[0])
        for rel in summaries:  # a notebook is the module named by its path (``nb/model.ipynb``)
            if is_notebook(rel):
                self.module_of[rel] = rel
                self.modules.setdefault(rel, rel)
        self.facts: dict[tuple[str, str], _Facts] = {}
        self.resolved: dict[tuple[str, str], Ref | None] = {}

    # -- references -----------------------------------------------------------------------

    def package_of(self, rel: str) -> str | None:
        module = self.module_of.get(rel)
        if module is None or is_notebook(rel):  # a notebook runs as a script: no package
            return None
        return module if rel.endswith("__init__.py") else module.rpartition(".")[0]

    def absolute(self, rel: str, level: int, module: str) -> str | None:
        """The absolute module name of ``from <level dots><module> import ...`` in ``rel``."""
        if level == 0:
            return module or None
        package = self.package_of(rel)
        if not package:
            return None
        parts = package.split(".")
        if level - 1 >= len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        if module:
            parts += module.split(".")
        return ".".join(parts)

    def find_module(self, origin: str | None, module: str) -> str | None:
        """The file ``import module`` in ``origin`` finds: a notebook's own directory first; in a
        file with an import root, that root's modules first (a name they hold is theirs: the
        python path's module of that name is shadowed there), then the python path's."""
        found = self.near(origin, module)
        if found is not None:
            return found
        root = self.root_of.get(origin) if origin is not None else None
        if root is not None and module.partition(".")[0] in self.root_tops[root]:
            return self.modules.get(rooted_name(root, module))
        found = self.modules.get(module)
        if found is None and origin is not None and "/" in origin and origin.endswith(".py"):
            # a script in a directory of scripts (no ``__init__.py``) imports its own directory's
            # modules by bare name (``from src.model import Net``), as ``python dir/main.py`` runs it;
            # the python path's modules come first, as in the worker (job/target.py)
            directory = origin.rpartition("/")[0]
            if directory + "/__init__.py" not in self.summaries:
                return self._in_directory(directory, module)
        return found

    def _in_directory(self, directory: str, module: str) -> str | None:
        base = (directory + "/" if directory else "") + module.replace(".", "/")
        for candidate in (base + ".py", base + "/__init__.py"):
            if candidate in self.summaries:
                return candidate
        return None

    def near(self, origin: str | None, module: str) -> str | None:
        """The file a notebook's ``import module`` finds in the notebook's own directory (Jupyter
        runs a notebook with its directory first on ``sys.path``); None for a ``.py`` origin."""
        if origin is None or not is_notebook(origin):
            return None
        return self._in_directory(origin.rpartition("/")[0], module)

    def dotted(self, name: str, seen: set[tuple[str, ...]], origin: str | None = None) -> Ref | None:
        """Resolve an absolute dotted name (``pkg.layers.Block``, ``torch.nn.Module``), imported
        by ``origin`` (a notebook finds modules in its own directory first)."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            rel = self.find_module(origin, prefix)
            if rel is not None:
                if end == len(parts):
                    return ("module", rel)
                return self.attribute(rel, parts[end], parts[end + 1 :], seen)
        return ("ext", name)

    def expression(self, rel: str, dotted: str) -> Ref | None:
        """Resolve a dotted expression written in module ``rel`` (a base class, an alias)."""
        key = (rel, dotted)
        if key not in self.resolved:
            head, *rest = dotted.split(".")
            self.resolved[key] = self.attribute(rel, head, rest, set())
        return self.resolved[key]

    def attribute(self, rel: str, name: str, rest: list[str], seen: set[tuple[str, ...]]) -> Ref | None:
        """Resolve ``name.rest...`` as seen from inside module ``rel``."""
        key = (rel, name, *rest)
        if key in seen or len(seen) > 200:
            return None
        seen.add(key)
        summary = self.summaries.get(rel)
        if summary is None:
            return None
        binding = summary.bindings.get(name)
        if binding is None:
            return self.unbound(rel, summary, name, rest, seen)
        kind = binding[0]
        if kind in ("class", "def"):
            return None if rest else (str(kind), rel, name)  # attributes of classes: not followed
        if kind == "module":
            return self.dotted(".".join([str(binding[1]), *rest]), seen, rel)
        if kind == "from":
            base = self.absolute(rel, int(binding[1]), str(binding[2]))
            return None if base is None else self.dotted(".".join([base, str(binding[3]), *rest]), seen, rel)
        if kind == "alias":
            head, *more = str(binding[1]).split(".")
            return self.attribute(rel, head, [*more, *rest], seen)
        return None

    def unbound(
        self, rel: str, summary: Summary, name: str, rest: list[str], seen: set[tuple[str, ...]]
    ) -> Ref | None:
        module = self.module_of.get(rel)
        if module and rel.endswith("__init__.py"):  # a submodule of this package
            sub = self.modules.get(f"{module}.{name}")
            if sub is not None:
                return self.dotted(".".join([module, name, *rest]), seen)
        for level, star in reversed(summary.stars):
            base = self.absolute(rel, level, star)
            if base is None:
                continue
            ref = self.dotted(".".join([base, name, *rest]), seen, rel)
            if ref is not None and (ref[0] != "ext" or _external_kind(ref[1])[0] in ("torch", "hf")):
                return ref
        return ("ext", ".".join([name, *rest]))

    # -- classes ----------------------------------------------------------------------------

    def class_facts(self, rel: str, name: str) -> _Facts:
        """Module-ness, forward, constructor and abstractness of a workspace class (memoized)."""
        key = (rel, name)
        if key in self.facts:
            return self.facts[key]
        self.facts[key] = _Facts()  # cycle guard
        info = self.summaries[rel].classes[name]
        is_module = False
        has_forward = "forward" in info.members
        init = info.init_required
        inherited_abstract: set[str] = set()
        for base in info.bases:
            ref = self.expression(rel, base) if base else None
            kind, base_name = _base_kind(ref)
            if kind == "class" and ref is not None:
                facts = self.class_facts(ref[1], ref[2])
                is_module |= facts.is_module
                has_forward |= facts.has_forward
                inherited_abstract |= facts.abstract
                if init is None:
                    init = facts.init
                elif info.fields_init and facts.init and INHERITED not in facts.init:
                    init = (*facts.init, *(f for f in init if f not in facts.init))  # a dataclass's base fields
            elif kind == "torch":
                is_module = True
                has_forward |= base_name not in _TORCH_NO_FORWARD
                if init is None:
                    init = () if base_name in _TORCH_NO_ARGS else _TORCH_REQUIRED.get(base_name, (INHERITED,))
            elif kind == "hf":
                is_module = True
                has_forward |= not base_name.endswith("PreTrainedModel")  # a model class has its own
                if init is None:
                    init = ("config",)
            elif kind == "lib":  # a library's model class: its constructor is tried with no argument
                is_module = has_forward = True
                if init is None:
                    init = ()
            elif kind != "plain" and init is None:
                init = (INHERITED,)
        abstract = info.abstract | (inherited_abstract - set(info.members))
        facts = _Facts(is_module, has_forward, init, frozenset(abstract))
        self.facts[key] = facts
        return facts

    def member_line(self, ref: Ref | None, rest: list[str]) -> tuple[str, int] | None:
        """(file, line) of a resolved class or function, or of a method of that class."""
        if ref is None or ref[0] not in ("class", "def"):
            return None
        summary = self.summaries[ref[1]]
        if ref[0] == "def":
            binding = summary.bindings.get(ref[2], ())
            line = int(binding[2]) if len(binding) > 2 else 1
            return None if rest else (ref[1], line)
        info = summary.classes.get(ref[2])
        if info is None:
            return None
        if not rest:
            return ref[1], info.line
        return (ref[1], info.members[rest[0]]) if len(rest) == 1 and rest[0] in info.members else None


def _external_kind(dotted: str) -> tuple[str, str]:
    """("torch", Name) for torch.nn module classes, ("hf", Name) for transformers' pretrained
    models, ("plain", dotted) for bases without an __init__, else ("ext", dotted)."""
    parts = dotted.split(".")
    last = parts[-1]
    if len(parts) >= 3 and parts[0] == "torch" and parts[1] == "nn":
        middle = parts[2:-1]
        if (
            last[:1].isupper()
            and last not in _TORCH_NON_MODULES
            and not any(p in _TORCH_NON_MODULE_NAMESPACES or not p.islower() for p in middle)
        ):
            return "torch", last
        return "ext", dotted
    if parts[0] == "transformers" and last.endswith("PreTrainedModel"):
        return "hf", last
    if dotted in _PLAIN_BASES:
        return "plain", dotted
    if parts[0] in _MODEL_LIBRARIES and len(parts) >= 2 and last[:1].isupper() and not last.isupper() \
            and not last.endswith(_LIBRARY_NON_MODELS):
        return ("hf" if parts[0] == "transformers" and _HF_MODEL.search(last) else "lib"), last
    return "ext", dotted


def _base_kind(ref: Ref | None) -> tuple[str, str]:
    if ref is None:
        return "unknown", ""
    if ref[0] == "class":
        return "class", ref[2]
    if ref[0] == "ext":
        return _external_kind(ref[1])
    return "unknown", ""


# ---------------------------------------------------------------------------------------------
# discovery


def discover(
    config: Config, files: list[Path] | None = None, overlays: dict[Path, str] | None = None,
    summary_source: Callable[[str, Path], Summary | None] | None = None,
) -> Discovery:
    """Targets, parse errors and the import graph of the workspace, from source alone.

    ``files`` defaults to :func:`~fxscope.project.files.workspace_files` with the Markdown files
    (their code blocks are examples of how to build the classes); ``overlays`` maps paths
    to unsaved editor contents used instead of the disk (an included path that does not exist on
    disk yet is added). Only files whose content changed since the last call are parsed again.
    ``summary_source(rel, path)`` supplies the summary of a file on disk (e.g. from a persistent
    store keyed by content); by default the in-process cache of :mod:`._summary` does.
    """
    overlay_by_rel = {relpath(config, p): text for p, text in (overlays or {}).items()}
    paths = workspace_files(config, examples=True) if files is None else list(files)
    rels: dict[str, Path] = {}
    for path in paths:
        path = Path(path) if Path(path).is_absolute() else config.root / path
        rel = relpath(config, path)
        if not rel.startswith("/") and not rel.startswith("../"):
            rels.setdefault(rel, path)
    for rel in overlay_by_rel:
        if rel not in rels and (is_included(config, rel) or is_example(config, rel)):
            rels[rel] = config.root / rel

    summaries: dict[str, Summary] = {}
    errors: list[FileError] = []
    for rel in sorted(rels):
        text = overlay_by_rel.get(rel)
        if text is not None:
            summary: Summary | None = summary_of_text(text, kind=file_kind(rel))
        elif summary_source is not None:
            summary = summary_source(rel, rels[rel])
        else:
            summary = summary_of_file(rels[rel])
        if summary is None:
            continue
        summaries[rel] = summary
        if summary.error is not None:
            line, column, message = summary.error
            errors.append(FileError(rel, line, column, message))

    workspace = _Workspace(config, summaries)
    targets = _class_targets(workspace) if config.auto_targets else []
    targets += _factory_targets(workspace)
    targets.sort(key=lambda t: t.id)
    return Discovery(targets, errors, list(summaries), _import_graph(workspace), _libraries(workspace))


#: Installed libraries worth importing once in the worker before it forks a job per target, when
#: the workspace imports them: slow to import (einx pulls in torch._dynamo), and well-behaved at
#: import (no threads, no network, no work).
PRELOADABLE = frozenset({
    "einops", "einx", "timm", "torchvision", "torchaudio", "transformers", "diffusers", "accelerate",
    "numpy", "scipy", "safetensors", "huggingface_hub", "omegaconf", "sentencepiece", "tiktoken",
})


def _libraries(ws: _Workspace) -> tuple[str, ...]:
    """The :data:`PRELOADABLE` libraries workspace files import, most importing files first."""
    count: dict[str, int] = {}
    for rel, summary in ws.summaries.items():
        seen = {module.split(".")[0] for level, module, _ in summary.imports if level == 0 and module}
        for top in seen:
            if top in PRELOADABLE and top not in ws.modules:
                count[top] = count.get(top, 0) + 1
    return tuple(sorted(count, key=lambda name: (-count[name], name)))


def _class_targets(ws: _Workspace) -> list[Target]:
    targets = []
    index = RecipeIndex(ws)
    inputs = InputIndex(ws, index)
    for rel, summary in ws.summaries.items():
        for name, info in summary.classes.items():
            if name.startswith("_") or summary.bindings.get(name) != ("class", name):
                continue
            facts = ws.class_facts(rel, name)
            if not facts.is_module or not facts.has_forward or facts.abstract:
                continue
            required = facts.init or ()
            unbuilt = ""
            module = ws.module_of[rel]
            if module:
                recipes = index.recipes_for(rel, name, tuple(required))
                if not recipes and required:
                    unbuilt = index.unbuilt(rel, name, tuple(required))
            else:
                recipes = () if required else (index.defaults(rel, name),)
            root, module = split_rooted(module) if module else ("", None)
            targets.append(Target(
                id=f"{rel}::{name}", kind="class", file=rel, line=info.line, module=module,
                qualname=name, needs_args=bool(required), required_args=tuple(required), recipes=recipes,
                input_hints=inputs.candidates_for(rel, name), unbuilt=unbuilt, import_root=root,
            ))
    return targets


def _factory_targets(ws: _Workspace) -> list[Target]:
    targets = []
    for tc in ws.config.targets:
        module, _, attr = tc.factory.partition(":")
        head, *rest = attr.split(".")
        file, line = "", 1
        rel = ws.modules.get(module)
        if rel is not None:
            file = rel
            ref = ws.attribute(rel, head, [], set())
            found = ws.member_line(ref, rest)
            if found is not None:
                file, line = found
        targets.append(Target(
            id=tc.name, kind="factory", file=file, line=line, module=module, qualname=attr,
            factory=tc.factory, concrete_args=dict(tc.concrete_args), inputs=tc.inputs,
        ))
    return targets


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _import_graph(ws: _Workspace) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for rel, summary in ws.summaries.items():
        names: set[str] = set()
        own = ws.module_of.get(rel)
        if own:
            names.update(_prefixes(own)[:-1])
        for level, module, imported in summary.imports:
            base = ws.absolute(rel, level, module)
            if base is None:
                continue
            names.update(_prefixes(base))
            for name in imported or ():
                if name != "*":
                    names.add(f"{base}.{name}")
        found = {ws.find_module(rel, n) for n in names}
        graph[rel] = {f for f in found if f is not None} - {rel}
    return graph

