"""The modelopt-style ("seed") tracing API: RobustTracer, leaf registration, failure records,
GraphCollection and recursive_trace; modelopt's failure scenarios; per-node scope and source;
execution order."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from torch.fx import Graph, GraphModule, Proxy
from torch.fx.proxy import TraceError

from fxscope.trace import GraphCollection, RobustTracer, recursive_trace
from trace_support import MODELS_DIR, is_user_file, model_class

pytestmark = pytest.mark.requires_torch


def ops(graph: Graph) -> list[tuple[str, str]]:
    return [(n.op, str(n.target)) for n in graph.nodes]


def call_modules(graph: Graph) -> list[str]:
    return [str(n.target) for n in graph.nodes if n.op == "call_module"]


def source_line(file: str, text: str) -> int:
    lines = (MODELS_DIR / file).read_text().splitlines()
    (line,) = [i for i, t in enumerate(lines, 1) if text in t]
    return line


# ---------------------------------------------------------------------- small models
class KeyErrorInner(nn.Module):
    """Raises (a real exception, not a hook) from inside the forward: KeyError on a traced key."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.table = {2: 1.0}

    def forward(self, x):
        return self.proj(x) * self.table[x.dim()]


class KeyErrorMiddle(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.inner = KeyErrorInner()
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.inner(self.pre(x)) + x)


class KeyErrorOuter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.middle = KeyErrorMiddle()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        y = self.middle(x).relu()
        return self.head(y)


# ---------------------------------------------------------------------- RobustTracer basics
def test_trace_returns_a_graph_like_fx() -> None:
    model = model_class("clean", "LayerStack")()
    tracer = RobustTracer()
    graph = tracer.trace(model)
    assert isinstance(graph, Graph) and tracer.graph is graph and tracer.root is model
    assert ops(graph) == ops(torch.fx.Tracer().trace(model))
    x = torch.randn(2, 3, 16)
    torch.testing.assert_close(GraphModule(model, graph)(x), model(x))
    assert tracer.findings.items() == [] and not tracer.is_failed(model)
    assert len(tracer.module_stack) == 0


def test_trace_restores_proxy_and_fx_behaviour_afterwards() -> None:
    before = {name: Proxy.__dict__.get(name) for name in ("__len__", "__setitem__", "__index__", "__array__")}
    with pytest.raises(RuntimeError) as plain_before:
        torch.fx.symbolic_trace(model_class("length", "Inner")())
    RobustTracer().trace(model_class("length", "Outer")())
    assert {name: Proxy.__dict__.get(name) for name in before} == before
    with pytest.raises(RuntimeError) as plain_after:  # plain fx fails as it did before, with torch's own text
        torch.fx.symbolic_trace(model_class("length", "Inner")())
    assert str(plain_after.value) == str(plain_before.value)


def test_a_function_root_reports_without_failing() -> None:
    def fn(x):
        if x.sum() > 0:
            return x
        return -x

    tracer = RobustTracer()
    graph = tracer.trace(fn)
    (finding,) = tracer.findings.items()
    assert finding.code == "FXS101" and finding.scopes == []
    assert finding.location.line == inspect.getsourcelines(fn)[1] + 1
    assert [op for op, _ in ops(graph)][0] == "placeholder"


def test_a_failed_root_gives_an_empty_graph() -> None:
    model = model_class("control_flow", "IfOnTensor")()
    tracer = RobustTracer()
    graph = tracer.trace(model)
    assert list(graph.nodes) == []
    assert tracer.is_failed(model) and tracer.failure_msg(model).startswith("FXS101")
    assert tracer.completed == []


def test_leaf_root() -> None:
    model = nn.Linear(2, 3)
    tracer = RobustTracer()
    graph = tracer.trace(model)
    assert [op for op, _ in ops(graph)] == ["placeholder", "call_module", "output"]
    assert tracer.completed == [("", "leaf")]
    assert tracer.forward_order == [""] and tracer.param_order == ["weight", "bias"]
    assert not tracer.is_failed(model) and not tracer.is_unvisited(model)


def test_registered_leaf_root() -> None:
    model = model_class("clean", "Residual")()
    tracer = RobustTracer()
    tracer.register_leaf(model)
    graph = tracer.trace(model)
    assert [op for op, _ in ops(graph)] == ["placeholder", "call_module", "output"]
    assert tracer.completed == [("", "leaf")]


# ---------------------------------------------------------------------- leaves
def test_register_leaf_on_the_class_applies_to_every_tracer() -> None:
    residual = model_class("clean", "Residual")
    model = model_class("clean", "LayerStack")()
    RobustTracer.register_leaf(residual)
    try:
        assert RobustTracer.is_registered_leaf(residual)
        tracer = RobustTracer()
        assert tracer.is_registered_leaf(residual) and tracer.is_registered_leaf(model.layers[0])
        graph = tracer.trace(model)
        assert call_modules(graph) == ["layers.0", "layers.1", "layers.2", "heads.cls", "heads.reg"]
        assert ("layers.1", "leaf") in tracer.completed
    finally:
        RobustTracer.unregister_leaf(residual)
    assert not RobustTracer.is_registered_leaf(residual)
    assert "layers.0.fc" in call_modules(RobustTracer().trace(model))
    RobustTracer.unregister_leaf(residual)  # no error when not registered


def test_register_leaf_instance_on_one_tracer_only() -> None:
    model = model_class("clean", "LayerStack")()
    tracer = RobustTracer()
    tracer.register_leaf(model.layers[1])
    assert tracer.is_registered_leaf(model.layers[1]) and not tracer.is_registered_leaf(model.layers[0])
    assert not RobustTracer.is_registered_leaf(model.layers[1])
    assert not tracer.is_registered_leaf(type(model.layers[1]))
    targets = call_modules(tracer.trace(model))
    assert "layers.1" in targets and "layers.0.fc" in targets and "layers.2.fc" in targets
    assert "layers.1" not in call_modules(RobustTracer().trace(model))
    tracer.unregister_leaf(model.layers[1])
    assert "layers.1" not in call_modules(tracer.trace(model))


def test_register_leaf_instance_on_the_class() -> None:
    model = model_class("clean", "LayerStack")()
    RobustTracer.register_leaf(model.layers[2])
    try:
        assert RobustTracer.is_registered_leaf(model.layers[2])
        assert "layers.2" in call_modules(RobustTracer().trace(model))
    finally:
        RobustTracer.unregister_leaf(model.layers[2])
    assert "layers.2" not in call_modules(RobustTracer().trace(model))


def test_register_leaf_type_on_one_tracer_and_leaf_types() -> None:
    residual = model_class("clean", "Residual")
    model = model_class("clean", "LayerStack")()
    tracer = RobustTracer()
    tracer.register_leaf(residual)
    assert tracer.is_registered_leaf(residual) and not RobustTracer.is_registered_leaf(residual)
    assert call_modules(tracer.trace(model))[:3] == ["layers.0", "layers.1", "layers.2"]
    assert call_modules(RobustTracer(leaf_types=(residual,)).trace(model))[:3] == ["layers.0", "layers.1", "layers.2"]
    assert "layers.0" not in call_modules(RobustTracer().trace(model))


def test_a_registered_leaf_hides_its_problems() -> None:
    model = model_class("shared_class", "Stack")()
    attention = model_class("shared_class", "Attention")
    gc = recursive_trace(model, leaf_types=(attention,))
    assert gc.findings.items() == [] and not gc.is_failed(model.blocks[0].attn)


# ---------------------------------------------------------------------- failure records
def test_record_call_module() -> None:
    tracer = RobustTracer()
    m = nn.Linear(2, 2)
    assert tracer.is_unvisited(m) and not tracer.is_failed(m) and tracer.failure_msg(m) is None
    tracer.record_call_module(m)
    assert not tracer.is_unvisited(m) and not tracer.is_failed(m)
    tracer.record_call_module(m, ValueError("boom"))
    assert tracer.is_failed(m) and tracer.failure_msg(m) == "ValueError: boom"
    tracer.record_call_module(m, "later")  # the first failure is kept
    assert tracer.failure_msg(m) == "ValueError: boom"
    other = model_class("clean", "Residual")()
    assert not tracer.is_leaf_module(other, "")
    tracer.record_call_module(other, "custom reason")
    assert tracer.failure_msg(other) == "custom reason"
    # A failed module is a leaf from then on.
    assert tracer.is_leaf_module(other, "") and not tracer.is_static_leaf(other)


def test_failure_records_after_a_trace() -> None:
    model = model_class("length", "Outer")()
    tracer = RobustTracer()
    tracer.trace(model)
    assert tracer.is_failed(model.middle.inner)
    assert tracer.failure_msg(model.middle.inner).startswith("FXS103")
    assert not tracer.is_failed(model.middle) and not tracer.is_failed(model)
    assert not tracer.is_unvisited(model.middle.inner.proj)  # visited while exploring

    unused = model_class("unused", "UnusedSubmodule")()
    tracer = RobustTracer()
    tracer.trace(unused)
    assert tracer.is_unvisited(unused.spare) and not tracer.is_unvisited(unused.used)


# ---------------------------------------------------------------------- modelopt's scenarios
def test_failure_two_modules_deep_keeps_the_parent_module_stack() -> None:
    """modelopt on torch 2.x: an exception two modules deep leaves fx's module stack with the
    failed module's entries, so every later node of the parent gets a wrong scope."""
    model = KeyErrorOuter()
    tracer = RobustTracer()
    graph = tracer.trace(model)
    assert len(tracer.module_stack) == 0
    assert tracer.is_failed(model.middle.inner) and not tracer.is_failed(model.middle)
    assert tracer.failure_msg(model.middle.inner).startswith("FXS107: KeyError")
    graph.lint()
    assert call_modules(graph) == ["middle.pre", "middle.inner", "middle.norm", "head"]
    by_target = {str(n.target): n for n in graph.nodes}
    assert by_target["middle.norm"].meta["fxscope_scope"] == "middle.norm"
    assert list(by_target["middle.norm"].meta["nn_module_stack"]) == ["middle", "middle.norm"]
    assert list(by_target["head"].meta["nn_module_stack"]) == ["head"]
    relu = by_target["relu"]
    assert relu.meta["fxscope_scope"] == "" and not relu.meta.get("nn_module_stack")
    add = next(n for n in graph.nodes if n.op == "call_function" and n.target.__name__ == "add")
    assert add.meta["fxscope_scope"] == "middle"
    assert add.meta["fxscope_scope_type"] == f"{__name__}.KeyErrorMiddle"
    # The partial graph is a working module: the failed module runs eagerly.
    x = torch.randn(2, 8)
    gm = GraphModule(model, graph)
    torch.testing.assert_close(gm(x), model(x))


def test_len_in_a_child_fails_only_that_child() -> None:
    """In plain fx `len()` raises RuntimeError; modelopt then fails every ancestor."""
    model = model_class("length", "Outer")()
    with pytest.raises(RuntimeError):
        torch.fx.symbolic_trace(model)
    gc = recursive_trace(model, is_user_file=is_user_file)
    failed = [name for name, m in model.named_modules() if gc.is_failed(m)]
    assert failed == ["middle.inner"]
    graph = gc[model]
    graph.lint()
    assert call_modules(graph) == ["middle.inner", "middle.norm", "head"]
    GraphModule(model, graph)
    assert [path for path, _, _ in gc.graphs()] == [""]  # inner's only child is a leaf


def test_graph_module_builds_when_nothing_failed() -> None:
    for name in ("MLP", "ConvNet", "LayerStack", "SelfAttention", "TiedLM"):
        model = model_class("clean", name)()
        tracer = RobustTracer()
        graph = tracer.trace(model)
        graph.lint()
        gm = GraphModule(model, graph)
        assert gm.code  # compiles


def test_plain_fx_fails_where_robust_tracer_gives_a_partial_graph() -> None:
    model = model_class("shared_class", "Stack")().eval()
    with pytest.raises(TraceError):
        torch.fx.symbolic_trace(model)
    tracer = RobustTracer()
    graph = tracer.trace(model)
    assert [t for t in call_modules(graph) if t.endswith(".attn")] == [f"blocks.{i}.attn" for i in range(3)]
    ids = torch.randint(0, 32, (2, 5))
    torch.testing.assert_close(GraphModule(model, graph)(ids), model(ids))


# ---------------------------------------------------------------------- GraphCollection
def test_graph_collection_iteration_and_getitem() -> None:
    model = model_class("depth", "Deep")()
    gc = recursive_trace(model, is_user_file=is_user_file)
    assert isinstance(gc, GraphCollection)
    rotary = model.body.inner.inner.rotary
    assert list(gc) == [model, rotary] and len(gc) == 2
    assert isinstance(gc[model], Graph) and isinstance(gc[rotary], Graph)
    assert gc.graph_for("body.inner.inner.rotary") is gc[rotary] and gc.graph_for("body") is None
    with pytest.raises(KeyError):
        gc[model.body]
    assert [gc.is_failed(m) for m in (model, model.body, model.body.inner, model.body.inner.inner, rotary)] == [
        False, True, True, True, False]
    assert gc.failure_msg(model.body).startswith("FXS104") and gc.failure_msg(model) is None
    assert not gc.is_unvisited(rotary)
    assert len(gc.tracers) == 4  # the root, then body.inner, body.inner.inner, rotary on their own
    assert [t.prefix for t in gc.tracers] == ["", "body.inner", "body.inner.inner", "body.inner.inner.rotary"]


def test_recursive_trace_with_concrete_args() -> None:
    model = model_class("call_args", "Scaler")()
    gc = recursive_trace(model, {"flag": True, "mode": "none"})
    assert gc.findings.items() == [] and list(gc) == [model]
    assert "proj" in call_modules(gc[model])
    gc = recursive_trace(model)
    assert [f.code for f in gc.findings.items()] == ["FXS101", "FXS101"] and list(gc) == []
    gc2 = GraphCollection()
    gc2.recursive_trace(model, {"flag": False, "mode": "mean"})
    assert list(gc2) == [model] and "proj" not in call_modules(gc2[model])


# ---------------------------------------------------------------------- node annotations
def test_node_scope_type_and_source() -> None:
    model = model_class("clean", "LayerStack")()
    graph = RobustTracer().trace(model)
    clean_py = str(MODELS_DIR / "clean.py")
    residual_line = source_line("clean.py", "return x + self.fc(self.norm(x))")
    for node in graph.nodes:
        assert "fxscope_scope" in node.meta and "fxscope_scope_type" in node.meta
    adds = [n for n in graph.nodes if n.op == "call_function" and n.target.__name__ == "add"]
    assert [n.meta["fxscope_scope"] for n in adds] == ["layers.0", "layers.1", "layers.2"]
    assert {n.meta["fxscope_scope_type"] for n in adds} == {"clean.Residual"}
    assert {n.meta["fxscope_source"] for n in adds} == {(clean_py, residual_line)}
    fc = next(n for n in graph.nodes if n.target == "layers.2.fc")
    assert fc.meta["fxscope_scope"] == "layers.2.fc"
    assert fc.meta["fxscope_scope_type"] == "torch.nn.modules.linear.Linear"
    assert fc.meta["fxscope_source"] == (clean_py, residual_line)
    assert fc.meta["fxscope_caller_scope"] == ("layers.2", "clean.Residual")
    cat = next(n for n in graph.nodes if n.op == "call_function" and n.target is torch.cat)
    assert cat.meta["fxscope_scope"] == "" and cat.meta["fxscope_scope_type"] == "clean.LayerStack"
    assert cat.meta["fxscope_source"] == (clean_py, source_line("clean.py", "return torch.cat(outs, dim=-1)"))
    # Placeholders and the output come from fx itself, not from a line of the model.
    assert all("fxscope_source" not in n.meta for n in graph.nodes if n.op in ("placeholder", "output"))


def test_scopes_of_a_tracer_with_a_prefix() -> None:
    model = model_class("depth", "DeepOnlyLeafFails")()
    tracer = RobustTracer(prefix="body.inner")
    graph = tracer.trace(model.body.inner)
    assert {n.meta["fxscope_scope"] for n in graph.nodes} == {"body.inner", "body.inner.norm", "body.inner.inner"}
    assert call_modules(graph) == ["norm", "inner"]  # targets stay relative to the traced root
    assert tracer.forward_order == [
        "body.inner", "body.inner.norm", "body.inner.inner", "body.inner.inner.proj", "body.inner.inner.rotary"]
    assert tracer.param_order == [
        "body.inner.norm.weight", "body.inner.norm.bias", "body.inner.inner.proj.weight", "body.inner.inner.proj.bias"]
    assert tracer.completed == [("body.inner", "traced"), ("body.inner.norm", "leaf"), ("body.inner.inner", "failed")]
    assert [s for f in tracer.findings.items() for s, _ in f.scopes] == ["body.inner.inner"]


# ---------------------------------------------------------------------- execution order
def eager_forward_order(model: nn.Module, *inputs: torch.Tensor) -> list[str]:
    order: list[str] = []
    names = {m: name for name, m in model.named_modules()}
    hooks = [m.register_forward_pre_hook(lambda m, _: order.append(names[m]) if names[m] not in order else None)
             for m in model.modules()]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    return order


@pytest.mark.parametrize("key,inputs", [
    (("clean", "LayerStack"), lambda: (torch.randn(2, 3, 16),)),
    (("clean", "TiedLM"), lambda: (torch.randint(0, 50, (2, 5)),)),
    (("shared_class", "Stack"), lambda: (torch.randint(0, 32, (2, 5)),)),
    (("depth", "DeepOnlyLeafFails"), lambda: (torch.randn(3, 8),)),
], ids=lambda v: ".".join(v) if isinstance(v, tuple) else "")
def test_forward_order_matches_eager(key: tuple[str, str], inputs) -> None:  # type: ignore[no-untyped-def]
    model = model_class(*key)().eval()
    tracer = RobustTracer()
    tracer.trace(model)
    assert tracer.forward_order == eager_forward_order(model, *inputs())


def test_param_order_matches_eager_use() -> None:
    model = model_class("clean", "LayerStack")()
    tracer = RobustTracer()
    tracer.trace(model)
    names = {id(p): n for n, p in model.named_parameters()}
    used: list[str] = []

    class Recorder(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            for a in [*args, *(kwargs or {}).values()]:
                if isinstance(a, nn.Parameter) and names[id(a)] not in used:
                    used.append(names[id(a)])
            return func(*args, **(kwargs or {}))

    with Recorder(), torch.no_grad():
        model(torch.randn(2, 3, 16))
    assert tracer.param_order == used
    assert tracer.param_order[:4] == ["layers.0.norm.weight", "layers.0.norm.bias", "layers.0.fc.weight", "layers.0.fc.bias"]


def test_param_order_with_get_attr_parameters() -> None:
    model = model_class("clean", "ConcreteDefault")()
    tracer = RobustTracer()
    tracer.trace(model)
    assert tracer.param_order == ["fc.weight", "fc.bias", "shift"]
    assert {id(p) for p in model.parameters()} <= tracer.used_params
