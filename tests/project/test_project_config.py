"""fxscope.project.config and fxscope.project.files: [tool.fxscope] parsing, roots, workspace files."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from engine_support import write_tree
from fxscope.project import (
    DEFAULT_EXCLUDE,
    Config,
    ConfigError,
    TargetConfig,
    find_root,
    is_included,
    load_config,
    module_name_for,
    relpath,
    workspace_files,
)
from fxscope.project import files as files_module


def write(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files, lstrip=False)  # line numbers count the sources' first, empty line


def pyproject(root: Path, body: str) -> None:
    write(root, {"pyproject.toml": "[project]\nname = 'demo'\n\n" + textwrap.dedent(body)})


# ---------------------------------------------------------------------------------------------
# defaults and keys


def test_defaults_without_pyproject(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.root == tmp_path.resolve()
    assert config.source is None
    assert config.include == ("**/*.py", "**/*.ipynb")
    assert config.exclude == DEFAULT_EXCLUDE
    assert config.python_path == (tmp_path.resolve(),)
    assert config.auto_targets is True
    assert config.preload == () and config.leaf_modules == () and config.targets == ()
    assert config.wrap_functions == ()
    assert config.timeout == 30.0 and config.device == "meta"
    assert config.workers is None and config.cache_dir is None
    assert config.memory_limit_mb == 4096


def test_defaults_with_pyproject_without_table_and_src_layout(tmp_path: Path) -> None:
    pyproject(tmp_path, "[tool.black]\nline-length = 100\n")
    (tmp_path / "src").mkdir()
    config = load_config(tmp_path)
    root = tmp_path.resolve()
    assert config.source == root / "pyproject.toml"
    assert config.python_path == (root, root / "src")
    assert config.timeout == 30.0


def test_relative_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(Path(".")).root == tmp_path.resolve()


def test_every_key(tmp_path: Path) -> None:
    pyproject(tmp_path, """
        [tool.fxscope]
        include = ["models/**/*.py"]
        exclude = ["legacy", "tests/fixtures/**"]
        python-path = [".", "lib"]
        auto-targets = false
        preload = ["transformers", "pkg.heavy"]
        timeout = 12
        device = "cpu"
        leaf-modules = ["pkg.layers.FancyAttention"]
        wrap-functions = ["pkg.layers:rel_pos", "einops:rearrange"]
        workers = 3
        cache-dir = ".cache/fx"
        memory-limit-mb = 1024

        [tool.fxscope.targets.gpt2-small]
        factory = "pkg.models:build_gpt2"
        concrete-args = { use_cache = false, n = 2 }

        [tool.fxscope.targets.tiny]
        factory = "pkg.models:Tiny.build"
    """)
    config = load_config(tmp_path)
    root = tmp_path.resolve()
    assert config.include == ("models/**/*.py",)
    assert config.exclude == DEFAULT_EXCLUDE + ("legacy", "tests/fixtures/**")
    assert config.python_path == (root, root / "lib")
    assert config.auto_targets is False
    assert config.preload == ("transformers", "pkg.heavy")
    assert config.timeout == 12.0 and isinstance(config.timeout, float)
    assert config.device == "cpu"
    assert config.leaf_modules == ("pkg.layers.FancyAttention",)
    assert config.wrap_functions == ("pkg.layers:rel_pos", "einops:rearrange")
    assert config.workers == 3
    assert config.cache_dir == root / ".cache" / "fx"
    assert config.memory_limit_mb == 1024
    assert config.targets == (
        TargetConfig("gpt2-small", "pkg.models:build_gpt2", {"use_cache": False, "n": 2}),
        TargetConfig("tiny", "pkg.models:Tiny.build", {}),
    )
    assert config.targets[0].concrete_args == {"use_cache": False, "n": 2}
    hash(config)  # frozen and hashable, even with dict-valued concrete args


def test_fingerprint_and_json(tmp_path: Path) -> None:
    body = """
        [tool.fxscope]
        timeout = 10
        [tool.fxscope.targets.t]
        factory = "pkg:build"
        concrete-args = { flag = true }
    """
    a, b = tmp_path / "a", tmp_path / "b"
    pyproject(a, body)
    pyproject(b, body)
    config = load_config(a)
    fingerprint = config.fingerprint()
    assert len(fingerprint) == 64 and fingerprint == load_config(a).fingerprint()
    assert fingerprint == load_config(b).fingerprint(), "root-relative: moving the workspace keeps it"

    extended = "timeout = 10\nworkers = 4\ncache-dir = 'x'"
    text = (b / "pyproject.toml").read_text().replace("timeout = 10", extended)
    (b / "pyproject.toml").write_text(text)
    assert load_config(b).workers == 4
    assert load_config(b).fingerprint() == fingerprint, "workers and cache-dir do not change traces"

    for change in ("timeout = 11", "device = 'cpu'", "preload = ['x']", "leaf-modules = ['a.B']",
                   "wrap-functions = ['a:f']", "auto-targets = false", "memory-limit-mb = 512", "exclude = ['old']"):
        (b / "pyproject.toml").write_text(text.replace("timeout = 10", change))
        assert load_config(b).fingerprint() != fingerprint, change

    data = config.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["root"] == str(config.root) and data["timeout"] == 10.0
    assert data["targets"] == [{"name": "t", "factory": "pkg:build", "concrete_args": {"flag": True}}]
    assert Config.from_json(data) == config


def test_sandbox_is_on_by_default_and_turning_it_off_changes_the_fingerprint(tmp_path: Path) -> None:
    default = load_config(tmp_path)
    assert default.sandbox is True
    pyproject(tmp_path, "[tool.fxscope]\nsandbox = false\n")
    off = load_config(tmp_path)
    assert off.sandbox is False
    assert off.fingerprint() != default.fingerprint()  # results computed unsandboxed are not reused
    assert Config.from_json(json.loads(json.dumps(off.to_json()))).sandbox is False
    assert Config.from_json(default.to_json()).sandbox is True


# ---------------------------------------------------------------------------------------------
# errors


def _error(tmp_path: Path, body: str) -> ConfigError:
    pyproject(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path.resolve() / "pyproject.toml"))
    return info.value


@pytest.mark.parametrize(
    ("body", "key", "expected"),
    [
        ('timeout = "abc"', "timeout", "[tool.fxscope] 'timeout' must be a number, got str 'abc'"),
        ("timeout = true", "timeout", "'timeout' must be a number, got bool True"),
        ("timeout = 0", "timeout", "'timeout' must be a positive number"),
        ('include = "*.py"', "include", "'include' must be a list of strings, got str '*.py'"),
        ("exclude = [1]", "exclude", "'exclude' must be a list of strings"),
        ('python-path = "src"', "python-path", "'python-path' must be a list of strings"),
        ("auto-targets = 1", "auto-targets", "'auto-targets' must be true or false, got int 1"),
        ('sandbox = "off"', "sandbox", "'sandbox' must be true or false, got str 'off'"),
        ('preload = ["not a module"]', "preload", "'preload' entries must be dotted module names"),
        ('device = "cuda"', "device", "'device' must be 'meta' or 'cpu', got str 'cuda'"),
        ('leaf-modules = ["Attention"]', "leaf-modules", "'leaf-modules' entries must be qualified class names"),
        ('wrap-functions = ["pkg.mod.func"]', "wrap-functions",
         "'wrap-functions' entries must be functions like 'pkg.module:function', got 'pkg.mod.func'"),
        ('wrap-functions = "pkg:f"', "wrap-functions", "'wrap-functions' must be a list of strings"),
        ("workers = 0", "workers", "'workers' must be >= 1, got 0"),
        ("workers = 1.5", "workers", "'workers' must be an integer, got float 1.5"),
        ("cache-dir = 3", "cache-dir", "'cache-dir' must be a path string, got int 3"),
        ("memory-limit-mb = 100", "memory-limit-mb", "'memory-limit-mb' must be >= 256, got 100"),
        ("targets = 3", "targets", "'targets' must be a table of tables, got int 3"),
        ('analyses = "compile"', "analyses", "'analyses' must be a non-empty list of 'fx', 'compile', 'export'"),
        ("analyses = []", "analyses", "'analyses' must be a non-empty list of"),
        ('analyses = ["fx", "jit"]', "analyses", "'analyses' entries must be one of 'fx', 'compile', 'export', got 'jit'"),
        ('analyses = ["fx", "fx"]', "analyses", "'analyses' lists an analysis twice"),
        ('compile-dynamic = "yes"', "compile-dynamic", "'compile-dynamic' must be true, false or \"auto\", got str"),
        ("export-strict = 1", "export-strict", "'export-strict' must be true or false, got int 1"),
        ('export-dynamic-batch = "no"', "export-dynamic-batch", "'export-dynamic-batch' must be true or false"),
    ],
)
def test_wrong_types(tmp_path: Path, body: str, key: str, expected: str) -> None:
    error = _error(tmp_path, "[tool.fxscope]\n" + body + "\n")
    assert expected in str(error)
    assert f"'{key}'" in str(error)
    assert error.key == key
    assert error.line == 5  # [project], name, blank, [tool.fxscope], the key


def test_unknown_key_suggests(tmp_path: Path) -> None:
    error = _error(tmp_path, "[tool.fxscope]\ntimout = 3\n")
    assert str(error).endswith(": unknown key 'timout' in [tool.fxscope] (did you mean 'timeout'?)")
    assert error.key == "timout" and error.line == 5
    error = _error(tmp_path, "[tool.fxscope]\nwhatever = 3\n")
    assert "unknown key 'whatever' in [tool.fxscope] (known keys: include," in str(error)


def test_invalid_toml(tmp_path: Path) -> None:
    error = _error(tmp_path, "[tool.fxscope]\ntimeout = = 3\n")
    assert ":5: invalid TOML: " in str(error)
    assert str(error).startswith(str(tmp_path.resolve() / "pyproject.toml") + ":5: invalid TOML")
    assert error.line == 5 and error.key is None


def test_fxscope_not_a_table(tmp_path: Path) -> None:
    error = _error(tmp_path, "[tool]\nfxscope = 3\n")
    assert "[tool.fxscope] must be a table, got int 3" in str(error)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('[tool.fxscope.targets.gpt]\nfactory = "pkg.models.build"\n',
         "[tool.fxscope.targets.gpt] 'factory' must look like 'module.path:callable', "
         "got str 'pkg.models.build'"),
        ('[tool.fxscope.targets.gpt]\nfactory = 3\n', "'factory' must look like 'module.path:callable', got int 3"),
        ("[tool.fxscope.targets.gpt]\nconcrete-args = {}\n",
         "[tool.fxscope.targets.gpt] missing required key 'factory'"),
        ('[tool.fxscope.targets.gpt]\nfactori = "a:b"\n',
         "unknown key 'factori' in [tool.fxscope.targets.gpt] (did you mean 'factory'?)"),
        ('[tool.fxscope.targets.gpt]\nfactory = "a:b"\nconcrete-args = 3\n',
         "[tool.fxscope.targets.gpt] 'concrete-args' must be a table, got int 3"),
        ('[tool.fxscope.targets.gpt]\nfactory = "a:b"\nconcrete-args = { when = 1979-05-27 }\n',
         "'concrete-args' value of 'when' must be a string, number, boolean, array or table"),
        ('[tool.fxscope.targets."a.b"]\nfactory = "a:"\n', "[tool.fxscope.targets.\"a.b\"] 'factory' must look like"),
        ('[tool.fxscope.targets]\ngpt = "pkg:build"\n',
         "[tool.fxscope.targets] 'gpt' must be a table with a 'factory' key, got str 'pkg:build'"),
        ('[tool.fxscope.targets.gpt]\nfactory = "a:b"\nanalyses = ["export", "onnx"]\n',
         "[tool.fxscope.targets.gpt] 'analyses' entries must be one of 'fx', 'compile', 'export', got 'onnx'"),
        ('[tool.fxscope.targets.gpt]\nfactory = "a:b"\nanalyses = []\n',
         "[tool.fxscope.targets.gpt] 'analyses' must be a non-empty list"),
    ],
)
def test_bad_target_tables(tmp_path: Path, body: str, expected: str) -> None:
    error = _error(tmp_path, body)
    assert expected in str(error)
    assert error.key is not None and error.key.startswith("targets.")
    assert error.line is not None


def test_analyses_per_workspace_and_per_target(tmp_path: Path) -> None:
    pyproject(tmp_path, """
        [tool.fxscope]
        analyses = ["fx", "compile"]
        compile-dynamic = false
        export-strict = true
        export-dynamic-batch = true

        [tool.fxscope.targets.exported]
        factory = "pkg:build"
        analyses = ["export"]

        [tool.fxscope.targets.plain]
        factory = "pkg:build"
        """)
    config = load_config(tmp_path)
    assert config.analyses == ("fx", "compile")
    assert config.analyses_for("exported") == ("export",)
    assert config.analyses_for("plain") == config.analyses_for("pkg/m.py::Net") == ("fx", "compile")
    assert (config.compile_dynamic, config.export_strict, config.export_dynamic_batch) == (False, True, True)
    assert config.uses_pt2
    again = Config.from_json(json.loads(json.dumps(config.to_json())))
    assert again == config and again.fingerprint() == config.fingerprint()
    for body in ('compile-dynamic = "auto"', "compile-dynamic = true"):
        pyproject(tmp_path, "[tool.fxscope]\n" + body + "\n")
        assert load_config(tmp_path).compile_dynamic is (None if "auto" in body else True)


def test_the_default_analyses_keep_the_fingerprint_of_a_config_without_them(tmp_path: Path) -> None:
    pyproject(tmp_path, "[tool.fxscope]\ntimeout = 5\n")
    plain = load_config(tmp_path)
    assert plain.analyses == ("fx",) and plain.compile_dynamic is None and not plain.uses_pt2
    assert "analyses" not in plain.to_json()  # results cached before these settings existed stay valid
    pyproject(tmp_path, '[tool.fxscope]\ntimeout = 5\nanalyses = ["fx"]\ncompile-dynamic = "auto"\n')
    assert load_config(tmp_path).fingerprint() == plain.fingerprint()
    pyproject(tmp_path, '[tool.fxscope]\ntimeout = 5\nanalyses = ["fx", "export"]\n')
    assert load_config(tmp_path).fingerprint() != plain.fingerprint()


# ---------------------------------------------------------------------------------------------
# find_root


def test_find_root_prefers_fxscope_table(tmp_path: Path) -> None:
    pyproject(tmp_path, "[tool.fxscope]\n")
    pyproject(tmp_path / "sub", "[tool.black]\n")
    write(tmp_path, {"sub/pkg/model.py": "x = 1\n"})
    assert find_root(tmp_path / "sub" / "pkg" / "model.py") == tmp_path
    assert find_root(tmp_path / "sub" / "pkg") == tmp_path


def test_find_root_falls_back_to_pyproject_or_git(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    write(tmp_path, {"repo/a/b/m.py": "", "proj/pyproject.toml": "[project]\nname='p'\n", "proj/x/m.py": ""})
    assert find_root(tmp_path / "repo" / "a" / "b" / "m.py") == tmp_path / "repo"
    assert find_root(tmp_path / "proj" / "x") == tmp_path / "proj"


def test_find_root_broken_pyproject_with_table_is_still_the_root(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.fxscope]\ntimeout = = 1\n", "inner/pyproject.toml": "", "inner/m.py": "",
    })
    assert find_root(tmp_path / "inner" / "m.py") == tmp_path


def test_find_root_without_markers_is_start_dir(tmp_path: Path) -> None:
    if any((p / "pyproject.toml").exists() or (p / ".git").exists() for p in tmp_path.parents):
        pytest.skip("an ancestor of the temp dir is a project")
    write(tmp_path, {"a/m.py": ""})
    assert find_root(tmp_path / "a" / "m.py") == tmp_path / "a"


# ---------------------------------------------------------------------------------------------
# files


def _tree(root: Path) -> None:
    write(root, {
        "model.py": "",
        "README.md": "",
        "pkg/__init__.py": "",
        "pkg/layers.py": "",
        "pkg/data_gen.py": "",
        "legacy/old.py": "",
        "tests/fixtures/f.py": "",
        "tests/test_x.py": "",
        ".venv/lib/site.py": "",
        "build/lib/pkg/layers.py": "",
        "deep/x.egg-info/y.py": "",
        "src/spkg/__init__.py": "",
        "src/spkg/mod.py": "",
        "my-dir/m.py": "",
    })


def test_workspace_files_prunes_excluded_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    pyproject(tmp_path, '[tool.fxscope]\nexclude = ["legacy", "tests/fixtures/**", "*_gen.py"]\n')
    config = load_config(tmp_path)
    visited: list[str] = []
    real_scandir = os.scandir

    def scandir(directory):  # type: ignore[no-untyped-def]
        visited.append(os.path.relpath(directory, config.root).replace(os.sep, "/"))
        return real_scandir(directory)

    monkeypatch.setattr(files_module.os, "scandir", scandir)
    found = workspace_files(config)
    monkeypatch.undo()
    assert "pkg" in visited  # the directories listed are seen
    assert all(p.is_absolute() for p in found)
    assert [relpath(config, p) for p in found] == [
        "model.py", "my-dir/m.py", "pkg/__init__.py", "pkg/layers.py",
        "src/spkg/__init__.py", "src/spkg/mod.py", "tests/test_x.py",
    ]
    for pruned in (".venv", ".venv/lib", "build", "legacy", "tests/fixtures", "deep/x.egg-info"):
        assert pruned not in visited


def test_include_patterns(tmp_path: Path) -> None:
    _tree(tmp_path)
    pyproject(tmp_path, '[tool.fxscope]\ninclude = ["pkg/**/*.py", "src/*/mod.py"]\n')
    config = load_config(tmp_path)
    assert [relpath(config, p) for p in workspace_files(config)] == [
        "pkg/__init__.py", "pkg/data_gen.py", "pkg/layers.py", "src/spkg/mod.py",
    ]
    assert is_included(config, tmp_path / "pkg" / "new" / "unsaved.py")  # need not exist
    assert not is_included(config, "model.py")


def test_is_included_and_relpath(tmp_path: Path) -> None:
    _tree(tmp_path)
    config = load_config(tmp_path)
    assert is_included(config, tmp_path / "pkg" / "layers.py")
    assert is_included(config, "pkg/layers.py")
    assert not is_included(config, tmp_path / ".venv" / "lib" / "site.py")
    assert not is_included(config, tmp_path / "README.md")
    assert not is_included(config, tmp_path.parent / "elsewhere.py")
    assert relpath(config, tmp_path / "pkg" / "layers.py") == "pkg/layers.py"
    assert relpath(config, "pkg/layers.py") == "pkg/layers.py"
    assert relpath(config, Path("/opt/site-packages/torch/nn.py")) == "/opt/site-packages/torch/nn.py"


def test_module_names(tmp_path: Path) -> None:
    _tree(tmp_path)
    config = load_config(tmp_path)
    root = config.root
    assert config.python_path == (root, root / "src")
    assert module_name_for(config, root / "src" / "spkg" / "mod.py") == "spkg.mod"
    assert module_name_for(config, root / "src" / "spkg" / "__init__.py") == "spkg"
    assert module_name_for(config, root / "pkg" / "layers.py") == "pkg.layers"
    assert module_name_for(config, root / "model.py") == "model"
    assert module_name_for(config, "pkg/__init__.py") == "pkg"
    assert module_name_for(config, root / "my-dir" / "m.py") is None
    assert module_name_for(config, root / "README.md") is None
    assert module_name_for(config, root.parent / "x.py") is None
