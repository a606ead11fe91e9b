"""Shape-aware tracing: example inputs answer shape questions (FXS501 at the exact expression,
a specialised graph equal to eager on tensors of those shapes), value questions stay FXS101,
targets without inputs are traced exactly as before; config ``inputs``, factories returning
inputs, the runner and ``fxscope graph`` through the real CLI."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from hf_models import small_hf_models
from torch import nn

from fxscope.cli.graph_output import render_graphs
from fxscope.project.config import ConfigError, load_config
from fxscope.trace.analysis import analyze, graph_to_json
from fxscope.trace.build import BuildError, build_model
from fxscope.model.codes import CODES
from fxscope.trace.inputs import InputSpec, default_inputs, example_tensors, parse_inputs, resolve_inputs
from fxscope.trace.shapes import ShapeAwareTracer
from fxscope.trace.tracer import RobustTracer
from trace_support import MODELS_DIR, assert_located, describe, is_user_file, model_class

pytestmark = pytest.mark.requires_torch

X = (2, 4, 8)

#: class -> (marker tag, offending expression, code with inputs) for every marked line.
SHAPE_CASES: dict[str, list[tuple[str, str, str]]] = {
    "ProjectIfWidthDiffers": [("FXS101 width", "x.size(-1) != self.dim", "FXS501")],
    "RankBranch": [("FXS101 rank", "x.dim() == 2", "FXS501")],
    "LenScale": [("FXS103 len", "len(x)", "FXS501")],
    "LoopOverBatch": [("FXS104 range", "range(x.shape[0])", "FXS501")],
    "IterateHeads": [("FXS102 unbind", "x.unbind(1)", "FXS501")],
    "StarView": [("FXS102 view", "x.view(*x.shape[:-1], 2, -1)", "FXS501")],
    "MixedShapeAndValue": [("FXS101 shape", "x.shape[1] > 2", "FXS501"),
                           ("FXS101 value", "x.sum() > 0", "FXS101")],
    "Stack": [("FXS101 block", "t > 1", "FXS501")],
    "TwoInputs": [("FXS101 pair", "x.shape != y.shape", "FXS501")],
}

MESSAGES = {
    "ProjectIfWidthDiffers": "specialised on x.size(-1) != 16; this graph is valid only for that shape",
    "RankBranch": "specialised on x.dim() != 2; this graph is valid only for that shape",
    "LenScale": "specialised on len(x) == 2; this graph is valid only for that shape",
    "LoopOverBatch": "specialised on x.shape[0] == 2; this graph is valid only for that shape",
    "IterateHeads": "specialised on len(x.unbind(1)) == 4; this graph is valid only for that shape",
    "StarView": "specialised on len(x.shape[:-1]) == 2; this graph is valid only for that shape",
    "Stack": "specialised on x.shape[1] > 1; this graph is valid only for that shape",
}


def _inputs(name: str) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    out = {"x": torch.randn(X, generator=gen)}
    if name == "TwoInputs":
        out["y"] = torch.randn((1, 4, 8), generator=gen)
    return out


def _sorted(findings: list) -> list:
    return sorted(findings, key=lambda f: (f.location.line, f.location.column or 0))


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_questions_are_answered_with_fxs501(name: str) -> None:
    built = build_model(model_class("shapes_control", name), device="cpu", is_user_file=is_user_file)
    model = built.model.eval()
    plain = analyze(model, is_user_file=is_user_file)
    shaped = analyze(model, is_user_file=is_user_file, inputs=_inputs(name))
    cases = SHAPE_CASES[name]

    # Without inputs: the FXS10x of each marker.
    got = _sorted(plain.findings)
    assert [f.code for f in got] == [tag.split()[0] for tag, _, _ in cases], describe(got)
    for finding, (tag, expr, _) in zip(got, cases):
        assert_located(finding.location, "shapes_control.py", tag, expr)

    # With inputs: FXS501 (info, with a hint) at the same expressions; values stay FXS101.
    got = _sorted(shaped.findings)
    assert [f.code for f in got] == [code for _, _, code in cases], describe(got)
    for finding, (tag, expr, code) in zip(got, cases):
        assert_located(finding.location, "shapes_control.py", tag, expr)
        assert finding.severity == CODES[code].severity
        if code == "FXS501":
            assert finding.severity == "info" and finding.hint
            assert plain.findings[0].scopes == got[0].scopes or name == "MixedShapeAndValue"
    if name in MESSAGES:
        assert got[0].message == MESSAGES[name]
    if any(code == "FXS101" for _, _, code in cases):
        assert shaped.status == "failed"
        return

    # The specialised graph is complete and equals eager on tensors of the example shapes.
    assert shaped.status == "traced", describe(shaped.findings)
    assert all(m["status"] != "failed" for m in shaped.modules)
    graph = shaped.collection.graph_for("")
    gm = torch.fx.GraphModule(model, copy.deepcopy(graph))
    real = _inputs(name)
    with torch.no_grad():
        torch.testing.assert_close(gm(**real), model(**real))
    # Every tensor node knows its shape and dtype.
    nodes = graph_to_json(graph)
    tensor_nodes = [n for n in nodes if n["op"] not in ("output",) and "shape" in n]
    assert tensor_nodes and all(n["dtype"] == "f32" for n in tensor_nodes)
    assert next(n for n in nodes if n["name"] == "x")["shape"] == list(X)
    out_node = next(n for n in graph.nodes if n.op == "output").args[0]
    assert list(out_node.meta["fxscope_shape"]) == list(model(**real).shape)


def test_stack_finding_covers_both_instances() -> None:
    model = model_class("shapes_control", "Stack")()
    report = analyze(model, is_user_file=is_user_file, inputs={"x": torch.empty(X, device="meta")})
    (finding,) = report.findings
    assert [path for path, _ in finding.scopes] == ["blocks.0", "blocks.1"]
    assert report.status == "traced"
    rows = {m["path"]: m["status"] for m in report.modules}
    assert rows["blocks.0"] == rows["blocks.1"] == "traced"


def test_value_dependent_control_flow_stays_fxs101() -> None:
    model = model_class("control_flow", "IfOnTensor")()
    report = analyze(model, is_user_file=is_user_file, inputs={"x": torch.empty(2, 3)})
    assert [f.code for f in report.findings] == ["FXS101"]
    assert_located(report.findings[0].location, "control_flow.py", "FXS101 if", "x.sum() > 0")
    assert report.status == "failed"


def test_shape_questions_answered_inside_a_child_traced_on_its_own() -> None:
    """A failed module's children are traced on their own with the example values seen at their
    call site: their shape questions are answered there too."""

    class Child(nn.Module):
        def forward(self, x):
            return x / len(x)

    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = Child()

        def forward(self, x):
            y = self.child(x)
            if y.sum() > 0:
                return y
            return -y

    report = analyze(Parent(), inputs={"x": torch.empty(3, 5)})
    codes = sorted(f.code for f in report.findings)
    assert codes == ["FXS101", "FXS501"]
    child_graph = report.collection.graph_for("child")
    assert child_graph is not None
    shapes = {n.name: n.meta.get("fxscope_shape") for n in child_graph.nodes}
    assert shapes["x"] == (3, 5) and shapes["truediv"] == (3, 5)


# ------------------------------------------------------------------------------ no inputs


def _all_corpus_classes() -> list[tuple[str, str]]:
    import importlib
    import inspect

    out = []
    for path in sorted(MODELS_DIR.glob("*.py")):
        if path.stem == "hf_wrappers":
            continue
        module = importlib.import_module(path.stem)
        unbuildable = set(getattr(module, "NEEDS_ARGUMENTS", ()))
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == path.stem \
                    and name not in unbuildable:
                out.append((path.stem, name))
    return out


def test_without_inputs_the_plain_tracer_runs_and_nothing_changes() -> None:
    """Every corpus class without inputs: only RobustTracer (never the shape-aware subclass),
    no example values or shapes on nodes, and ``inputs=None`` equals leaving it out."""
    for module, name in _all_corpus_classes():
        built = build_model(model_class(module, name), is_user_file=is_user_file)
        default = analyze(built.model, built.concrete_args, is_user_file=is_user_file, sites=built.sites)
        # A model of its own: a trace names tensor constants after those already on the root.
        built = build_model(model_class(module, name), is_user_file=is_user_file)
        explicit = analyze(built.model, built.concrete_args, is_user_file=is_user_file, sites=built.sites,
                           inputs=None)
        assert all(type(t) is RobustTracer for t in default.collection.tracers), (module, name)
        for _, _, graph in default.collection.graphs():
            assert not any(k.startswith(("fxscope_val", "fxscope_shape", "fxscope_dtype"))
                           for n in graph.nodes for k in n.meta)
            assert not any("shape" in n or "dtype" in n for n in graph_to_json(graph))
        assert json.dumps(default.to_json(graphs=True)) == json.dumps(explicit.to_json(graphs=True))
        assert not any(f.code == "FXS501" for f in default.findings)


def test_shape_aware_tracer_leaves_proxy_hooks_as_they_were() -> None:
    before = torch.fx.Proxy.__dict__.get("__index__")
    saved = {n: getattr(torch, n) for n in ("ones", "zeros", "finfo")}
    analyze(model_class("shapes_control", "LoopOverBatch")(), inputs={"x": torch.empty(X)})
    assert torch.fx.Proxy.__dict__.get("__index__") is before
    assert {n: getattr(torch, n) for n in saved} == saved


def test_traced_sizes_passed_one_by_one_to_a_factory_stay_symbolic() -> None:
    class Ones(nn.Module):
        def forward(self, x):
            b, s = x.size()[:-1]
            return torch.ones(b, s) + x.sum(-1)

    report = analyze(Ones(), inputs={"x": torch.empty(2, 3, 4)})
    assert report.status == "traced" and report.findings == []  # nothing specialised
    gm = torch.fx.GraphModule(Ones(), report.collection.graph_for(""))
    x = torch.randn(5, 6, 4)  # other shapes work too: the sizes are graph values
    torch.testing.assert_close(gm(x), Ones()(x))


def test_dtype_and_device_questions() -> None:
    class Casts(nn.Module):
        def forward(self, x):
            if x.dtype == torch.float16:
                x = x.float()
            if x.device.type == "cpu":
                x = x + torch.finfo(x.dtype).eps
            return x

    report = analyze(Casts(), inputs={"x": torch.empty(2, 3)})
    assert report.status == "traced"
    messages = sorted(f.message.split(";")[0] for f in report.findings)
    assert messages == ["specialised on x.device.type == 'cpu'", "specialised on x.dtype != torch.float16",
                        "specialised on x.dtype == torch.float32"]
    gm = torch.fx.GraphModule(Casts(), report.collection.graph_for(""))
    x = torch.randn(2, 3)
    torch.testing.assert_close(gm(x), Casts()(x))


# ------------------------------------------------------------------------------ inputs


def test_parse_inputs_and_errors() -> None:
    specs = parse_inputs({"x": [2, 16], "ids": {"shape": [1, 8], "dtype": "int64"}})
    assert specs == {"x": InputSpec((2, 16), "float32"), "ids": InputSpec((1, 8), "int64")}
    tensors = example_tensors(specs)
    assert tensors["ids"].dtype == torch.int64 and tensors["ids"].is_meta
    for bad, text in [({"x": [2, -1]}, "non-negative"), ({"x": {"shape": [2], "dtype": "f8"}}, "unknown dtype"),
                      ({"x": {"size": [2]}}, "shape list"), ({"x": "2,3"}, "non-negative")]:
        with pytest.raises(ValueError, match=text):
            parse_inputs(bad)


def test_factory_returns_inputs() -> None:
    model = model_class("shapes_control", "LenScale")
    built = build_model(lambda: (model(), None, {"x": [3, 4, 8]}), is_user_file=is_user_file)
    assert built.inputs == {"x": [3, 4, 8]}
    inputs = resolve_inputs({}, built.inputs, built.model)
    report = analyze(built.model, is_user_file=is_user_file, inputs=inputs)
    assert [f.message.split(";")[0] for f in report.findings] == ["specialised on len(x) == 3"]
    # Configured inputs win over the factory's.
    assert resolve_inputs({"x": {"shape": [5], "dtype": "float32"}}, built.inputs, built.model)["x"].shape == (5,)
    with pytest.raises(BuildError, match="example inputs"):
        build_model(lambda: (model(), None, [1, 2]))
    with pytest.raises(ValueError, match="auto"):
        resolve_inputs("auto", None, model())


def _write_config(root: Path, body: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(body)
    return root


def test_config_inputs_key(tmp_path: Path) -> None:
    base = '[tool.fxscope.targets.m]\nfactory = "pkg:build"\n'
    plain = load_config(_write_config(tmp_path / "a", base))
    assert plain.targets[0].inputs == {} and "inputs" not in plain.targets[0].to_json()
    config = load_config(_write_config(
        tmp_path / "b", base + 'inputs = { x = [2, 16], input_ids = { shape = [1, 8], dtype = "int64" } }\n'))
    assert config.targets[0].inputs == {"x": {"shape": [2, 16], "dtype": "float32"},
                                        "input_ids": {"shape": [1, 8], "dtype": "int64"}}
    assert config.fingerprint() != plain.fingerprint()
    again = type(config).from_json(json.loads(json.dumps(config.to_json())))
    assert again.targets[0].inputs == config.targets[0].inputs and again.fingerprint() == config.fingerprint()
    auto = load_config(_write_config(tmp_path / "c", base + 'inputs = "auto"\n'))
    assert auto.targets[0].inputs == "auto" and auto.fingerprint() not in (plain.fingerprint(), config.fingerprint())
    other = load_config(_write_config(tmp_path / "d", base + "inputs = { x = [2, 17] }\n"))
    assert other.fingerprint() != config.fingerprint()


@pytest.mark.parametrize("value,text", [
    ("inputs = [2, 16]", "'inputs' must be a table of shapes"),
    ("inputs = { x = [2, -3] }", "shape of 'x'"),
    ("inputs = { x = [2.5] }", "shape of 'x'"),
    ('inputs = { x = { shape = [2], dtype = "f8" } }', "dtype of 'x'"),
    ('inputs = { x = { size = [2] } }', "'x' must be a shape list"),
    ('inputs = { "not-a-name" = [2] }', "parameter names"),
])
def test_config_inputs_errors(tmp_path: Path, value: str, text: str) -> None:
    root = _write_config(tmp_path, f'[tool.fxscope.targets.m]\nfactory = "pkg:build"\n{value}\n')
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert info.value.key == "targets.m.inputs"
    assert text in str(info.value) and "\n" not in str(info.value)
    assert info.value.line == 3


# ------------------------------------------------------------------------------ CLI


MODEL_FILE = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        if x.size(-1) != 16:
            x = torch.nn.functional.pad(x, (0, 16 - x.size(-1)))
        return self.fc(x).relu()


def build():
    return Net()
'''


def test_cli_config_inputs_give_fxs501_and_shapes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "net.py").write_text(MODEL_FILE)
    (root / "pyproject.toml").write_text(
        '[tool.fxscope]\nauto-targets = false\ncache-dir = ".cache"\n'
        '[tool.fxscope.targets.shaped]\nfactory = "net:build"\ninputs = { x = [2, 16] }\n'
        '[tool.fxscope.targets.plain]\nfactory = "net:build"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "daemon")

    def fxscope(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fxscope", *args], cwd=root, env=env, text=True,
                              capture_output=True, timeout=240, stdin=subprocess.DEVNULL)

    proc = fxscope("check", "--format", "json")
    doc = json.loads(proc.stdout)
    by_target: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        by_target.setdefault(f["target"], []).append(f)
    assert [f["code"] for f in by_target["shaped"]] == ["FXS501"], proc.stdout
    assert by_target["shaped"][0]["message"].startswith("specialised on x.size(-1) == 16")
    assert by_target["shaped"][0]["line"] == 11 and by_target["shaped"][0]["severity"] == "info"
    assert [f["code"] for f in by_target["plain"]] == ["FXS101"]
    assert proc.returncode == 1  # the plain target's error

    graph = fxscope("graph", "shaped")
    assert graph.returncode == 0, graph.stderr
    lines = graph.stdout.splitlines()
    assert any(ln.strip().startswith("x: f32[2, 16]") for ln in lines), graph.stdout
    assert any(ln.strip().startswith("relu: f32[2, 16]") for ln in lines), graph.stdout
    plain = fxscope("graph", "plain", "--format", "json")
    assert not any("shape" in n for g in json.loads(plain.stdout)["graphs"] for n in g["nodes"])


def test_render_graphs_prints_shapes() -> None:
    from fxscope.model import Graphs, Report, ReportTarget, Summary

    graphs = Graphs(json=[
        {"module": "", "nodes": [
            {"name": "add_3", "op": "call_function", "target": "operator.add", "scope": "", "scope_type": "m.Net",
             "shape": [2, 16, 64], "dtype": "f32"},
            {"name": "size", "op": "call_method", "target": "size", "scope": "", "scope_type": "m.Net"}]}])
    report = Report("/w", "", (ReportTarget("t", "class", "m.py", 1, "traced", graphs=graphs),), (), Summary(1))
    text = render_graphs(report, "t", None, "text")
    assert "  add_3: f32[2, 16, 64]  call_function" in text
    assert "  size                   call_method" in text


# ------------------------------------------------------------------------------ transformers


def _hf_configs() -> dict[str, Any]:
    pytest.importorskip("transformers")
    return small_hf_models()


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return _tensors(value.to_tuple()) if hasattr(value, "to_tuple") else []


HF_MODELS = ["gpt2", "bert", "llama", "t5", "vit", "bart", "qwen2", "convnext", "whisper", "distilbert"]


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=() if n == "distilbert" else pytest.mark.slow) for n in HF_MODELS])
def test_transformers_whole_model_graph_equals_eager(name: str) -> None:
    from fxscope.trace.inputs import default_concrete_args

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    model = _hf_configs()[name]().eval()
    specs = default_inputs(model)
    assert specs is not None
    cargs = default_concrete_args(model)
    report = analyze(model, cargs, inputs=example_tensors(specs))
    assert report.status == "traced", describe(report.findings)
    assert {f.code for f in report.findings} <= {"FXS501", "FXS301", "FXS302"}, describe(report.findings)
    custom = [m for m in report.modules if not m["type"].startswith("torch.")]
    assert all(m["status"] in ("traced", "unvisited") for m in custom)

    graph = copy.deepcopy(report.collection.graph_for(""))
    graph.set_codegen(torch.fx.graph.CodeGen())  # fx's pytree codegen cannot take defaulted placeholders
    gm = torch.fx.GraphModule(model, graph)
    gen = torch.Generator().manual_seed(0)
    real = {}
    for key, spec in specs.items():
        t = spec.tensor("cpu")
        real[key] = (torch.randn(t.shape, generator=gen) if t.is_floating_point()
                     else torch.randint(1, 100, t.shape, generator=gen))
    values = {**cargs, **real}
    by_name = {}
    for node in graph.nodes:
        if node.op == "placeholder":
            key = str(node.target)
            key = key if key in values else key.rsplit("_", 1)[0]
            if key in values:
                by_name[node.name] = values[key]
    with torch.no_grad():
        got, want = _tensors(gm(**by_name)), _tensors(model(**values))
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-4)


def test_default_inputs_from_transformers_configs() -> None:
    configs = _hf_configs()
    assert default_inputs(configs["bert"]()) == {"input_ids": InputSpec((2, 8), "int64")}
    assert default_inputs(configs["vit"]()) == {"pixel_values": InputSpec((2, 3, 32, 32))}
    assert default_inputs(configs["t5"]()) == {"input_ids": InputSpec((2, 8), "int64"),
                                               "decoder_input_ids": InputSpec((2, 8), "int64")}
    assert default_inputs(configs["whisper"]())["input_features"] == InputSpec((2, 16, 32))
    assert default_inputs(nn.Linear(2, 2)) is None


def test_shape_aware_tracer_docstring_api() -> None:
    tracer = ShapeAwareTracer(inputs={"x": torch.empty(4, 2)})
    graph = tracer.trace(model_class("shapes_control", "LenScale")())
    assert [f.code for f in tracer.findings.items()] == ["FXS501"]
    assert [n.meta.get("fxscope_shape") for n in graph.nodes if n.op == "placeholder"] == [(4, 2)]


def test_hover_shows_shape_per_instance() -> None:
    from fxscope.lsp.hover import nodes_markdown
    from fxscope.model import NodeInfo

    def node(scope: str, shape: tuple[int, ...]) -> NodeInfo:
        return NodeInfo("add_3", "call_function", "operator.add", scope, "m.Block", shape=shape, dtype="f32",
                        target_id="m.py::Net")

    text = nodes_markdown([node("blocks.0", (2, 16, 64)), node("blocks.1", (2, 16, 64)),
                           node("blocks.2", (2, 8, 64))], markdown=False)
    assert text is not None
    assert text.count("f32[2, 16, 64]") == 1 and text.count("f32[2, 8, 64]") == 1  # two groups
    assert "× 2" in text
