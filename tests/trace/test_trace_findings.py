"""The tracing core on the model corpus (tests/models): every finding's code, exact location and
scopes; clean models; faithful graphs; module statuses; call-site concrete args."""

from __future__ import annotations

import importlib
import inspect
import json

import pytest
import torch
from torch import nn
from torch.fx import GraphModule

from fxscope.trace.analysis import analyze
from fxscope.trace.build import build_model
from fxscope.model.codes import CODES
from fxscope.trace.tracer import CONTAINER_TYPES
from trace_support import (
    MODELS_DIR,
    assert_located,
    describe,
    expected_range,
    is_user_file,
    marker_line,
    model_class,
    run,
    statuses,
)

pytestmark = pytest.mark.requires_torch

# (module, class) -> expected findings: (code, file, marker tag, offending expression, scope paths).
# The marker tag is the comment ending the offending line; the expression gives the columns.
EXPECTED: dict[tuple[str, str], list[tuple[str, str, str, str, list[str]]]] = {
    ("control_flow", "IfOnTensor"): [("FXS101", "control_flow.py", "FXS101 if", "x.sum() > 0", [""])],
    # A child traced on its own after its parent failed meets the model as built, not the proxies
    # the parent's forward assigned to it: its own assert, as plain fx on it, never fx's "multiple
    # different tracers".
    ("assigned_attributes", "AdaIN"): [
        ("FXS107", "assigned_attributes.py", "FXS107 assign", "self.bias is not None", [""])],
    ("assigned_attributes", "StyledDecoder"): [
        ("FXS101", "assigned_attributes.py", "FXS101 style", "params.size(1) > 8", [""]),
        ("FXS107", "assigned_attributes.py", "FXS107 assign", "self.bias is not None", ["body.1"])],
    ("control_flow", "WhileOnTensor"): [
        ("FXS101", "control_flow.py", "FXS101 while", "x.abs().max() > 1", [""])],
    ("control_flow", "AssertOnTensor"): [
        ("FXS101", "control_flow.py", "FXS101 assert", "x.min() >= 0", [""])],
    ("control_flow", "BoolCall"): [("FXS101", "control_flow.py", "FXS101 bool", "bool(x.any())", [""])],
    # A bool op is located at the tested operand.
    ("control_flow", "AndOr"): [("FXS101", "control_flow.py", "FXS101 and", "x.any()", [""])],
    ("control_flow", "NotOnTensor"): [("FXS101", "control_flow.py", "FXS101 not", "not x.numel()", [""])],
    ("control_flow", "ConditionalExpression"): [
        ("FXS101", "control_flow.py", "FXS101 ternary", "y.mean() > 0", [""])],
    ("iteration", "ForOverTensor"): [("FXS102", "iteration.py", "FXS102 for", "x", [""])],
    ("iteration", "StarUnpack"): [("FXS102", "iteration.py", "FXS102 star", "first, *rest", [""])],
    ("iteration", "ListOfTensor"): [("FXS102", "iteration.py", "FXS102 list", "list(x)", [""])],
    ("iteration", "StarShape"): [("FXS102", "iteration.py", "FXS102 shape", "torch.randn(*x.shape)", [""])],
    ("iteration", "ZipOverTensor"): [("FXS102", "iteration.py", "FXS102 zip", "zip(x, y)", [""])],
    ("iteration", "ShapeUnpackIsFine"): [],
    ("length", "LenOfTensor"): [("FXS103", "length.py", "FXS103 len", "len(x)", [""])],
    ("length", "LenOfShape"): [("FXS103", "length.py", "FXS103 shape", "len(x.shape)", [""])],
    ("length", "Inner"): [("FXS103", "length.py", "FXS103 inner", "len(x)", [""])],
    ("length", "Middle"): [("FXS103", "length.py", "FXS103 inner", "len(x)", ["inner"])],
    ("length", "Outer"): [("FXS103", "length.py", "FXS103 inner", "len(x)", ["middle.inner"])],
    ("python_number", "IntOfTensor"): [("FXS104", "python_number.py", "FXS104 int", "int(x.sum())", [""])],
    ("python_number", "FloatOfTensor"): [
        ("FXS104", "python_number.py", "FXS104 float", "float(x.std())", [""])],
    ("python_number", "RangeOfSize"): [
        ("FXS104", "python_number.py", "FXS104 range", "range(x.size(0))", [""])],
    ("python_number", "ListIndex"): [
        ("FXS104", "python_number.py", "FXS104 index", "self.scales[x.dim()]", [""])],
    ("setitem", "ZeroFirstColumn"): [("FXS105", "setitem.py", "FXS105 column", "x[:, 0]", [""])],
    ("setitem", "MaskedAssign"): [("FXS105", "setitem.py", "FXS105 mask", "y[y < 0]", [""])],
    ("setitem", "FunctionalIsFine"): [],
    # Inferred-input models (tests/cli/test_structured_inputs.py): every one traces.
    ("token_inputs", "TokenBlock"): [],
    ("token_inputs", "PatchTokens"): [],
    ("token_inputs", "CrossBlock"): [],
    ("token_inputs", "TimeConv"): [],
    ("token_inputs", "GatedResidual"): [],
    ("token_inputs", "ClsTokens"): [],
    ("numpy_use", "NumpyReduction"): [("FXS106", "numpy_use.py", "FXS106 np-sum", "np.sum(x)", [""])],
    ("numpy_use", "NumpyArray"): [("FXS106", "numpy_use.py", "FXS106 asarray", "np.asarray(x)", [""])],
    # Recorded as call_method nodes: plain fx traces them and the traced module computes the same.
    ("numpy_use", "ItemCall"): [],
    ("numpy_use", "ToList"): [],
    ("numpy_use", "ToNumpy"): [],
    ("numpy_use", "ItemDecides"): [("FXS101", "numpy_use.py", "FXS101 item", "peak > 1", [""])],
    ("other_exception", "IsinstanceCheck"): [
        ("FXS107", "other_exception.py", "FXS107 raise",
         'raise TypeError(f"expected a tensor, got {type(x).__name__}")', [""])],
    ("other_exception", "TracedDictKey"): [
        ("FXS107", "other_exception.py", "FXS107 key", "self.table[x.dim()]", [""])],
    ("dead_inplace", "DeadMethod"): [("FXS201", "dead_inplace.py", "FXS201 method", "y.relu_()", [""])],
    ("dead_inplace", "DeadFunction"): [
        ("FXS201", "dead_inplace.py", "FXS201 function", "torch.sigmoid_(y)", [""])],
    ("dead_inplace", "DeadInplaceModule"): [
        ("FXS201", "dead_inplace.py", "FXS201 module", "self.act(y)", [""])],
    ("dead_inplace", "UsedInplaceIsFine"): [],
    ("unused", "UnusedSubmodule"): [("FXS301", "unused.py", "FXS301 spare", "self.spare", ["spare"])],
    ("unused", "UnusedParameter"): [("FXS302", "unused.py", "FXS302 bias", "self.bias", [""])],
    ("unused", "Branchy"): [("FXS301", "unused.py", "FXS301 head-b", "self.head_b", ["head_b"])],
    ("unused", "HeadWhenNoMask"): [("FXS301", "unused.py", "FXS301 head-no-mask", "self.head", ["head"])],
    # Tables indexed by traced positions and caches written at them: one node each, as in plain fx.
    **{("position_tables", name): [] for name in (
        "RotaryTable", "PositionBuffer", "DerivedPositions", "TableRowsByMask")},
    ("cache_writes", "KVCache"): [("FXS107", "cache_writes.py", "FXS107 kv-cache", "KVCache", [""])],
    ("cache_writes", "CachedAttention"): [],
    ("cache_writes", "CounterBuffer"): [],
    ("cache_writes", "WriteThenRead"): [
        ("FXS104", "cache_writes.py", "FXS104 read", "self.cache[:, :, : input_pos.shape[0]]", [""])],
    # No forward: an error at the class; a holder nothing calls is looked through.
    ("no_forward", "StateHolder"): [("FXS107", "no_forward.py", "FXS107 holder", "StateHolder", [""])],
    ("no_forward", "LayerStack"): [("FXS107", "no_forward.py", "FXS107 stack", "LayerStack", [""])],
    ("no_forward", "UsesStateHolder"): [],
    ("no_forward", "FailsAroundStateHolder"): [
        ("FXS101", "no_forward.py", "FXS101 around", "x.sum() > 0", [""])],
    # The model's own `raise` on a branch fxscope picked is never a finding.
    ("guarded_raise", "ShapeCheck"): [
        ("FXS101", "guarded_raise.py", "FXS101 guard", "x.shape[-1] != self.dim", [""]),
        ("FXS101", "guarded_raise.py", "FXS101 guard", "x.sum() > 0", [""])],
    ("guarded_raise", "ValueCheckThenLength"): [
        ("FXS101", "guarded_raise.py", "FXS101 check", "x.min() < 0", [""]),
        ("FXS103", "guarded_raise.py", "FXS103 len", "len(x)", [""])],
    ("guarded_raise", "CheckInHelper"): [("FXS101", "guarded_raise.py", "FXS101 helper", "x.max() > 100", [""])],
    ("sequential_scan", "ScanOverSequence"): [
        ("FXS104", "sequential_scan.py", "FXS104 range", "range(n)", [""])],
    ("sequential_scan", "WrappedScan"): [],
    # Generated forward code: no model frame, still an error finding (at the class).
    ("generated_forward", "GeneratedForward"): [
        ("FXS107", "generated_forward.py", "FXS107 generated", "GeneratedForward", [""])],
    ("shape_answers", "SliceByInputSize"): [],
    ("shape_answers", "BufferLength"): [],
    ("shape_answers", "FinfoOfComputedValue"): [
        ("FXS107", "shape_answers.py", "FXS107 finfo", "torch.finfo(h.dtype)", [""])],
    ("depth", "Rotary"): [],
    ("depth", "Level3"): [("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", [""])],
    ("depth", "Level2"): [
        ("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["inner"]),
        ("FXS103", "depth.py", "FXS103 depth2", "len(x)", [""]),
    ],
    ("depth", "Level1"): [
        ("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["inner.inner"]),
        ("FXS103", "depth.py", "FXS103 depth2", "len(x)", ["inner"]),
        ("FXS104", "depth.py", "FXS104 depth1", "int(x.sum())", [""]),
    ],
    ("depth", "Deep"): [
        ("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["body.inner.inner"]),
        ("FXS103", "depth.py", "FXS103 depth2", "len(x)", ["body.inner"]),
        ("FXS104", "depth.py", "FXS104 depth1", "int(x.sum())", ["body"]),
    ],
    ("depth", "Healthy2"): [("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["inner"])],
    ("depth", "Healthy1"): [("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["inner.inner"])],
    ("depth", "DeepOnlyLeafFails"): [
        ("FXS101", "depth.py", "FXS101 depth3", "x.mean() > 0", ["body.inner.inner"])],
    ("uses_helpers", "UsesHelper"): [("FXS101", "helpers.py", "FXS101 helper", "x.abs().max() > 1", [""])],
    ("uses_helpers", "UsesSafeHelper"): [],
    ("shared_class", "Attention"): [("FXS101", "shared_class.py", "FXS101 causal", "x.size(1) > 1", [""])],
    ("shared_class", "Block"): [("FXS101", "shared_class.py", "FXS101 causal", "x.size(1) > 1", ["attn"])],
    ("shared_class", "Stack"): [
        ("FXS101", "shared_class.py", "FXS101 causal", "x.size(1) > 1",
         ["blocks.0.attn", "blocks.1.attn", "blocks.2.attn"])],
    ("decorated", "DecoratedForward"): [
        ("FXS101", "decorated.py", "FXS101 decorated", "y.mean() > 0", [""])],
    ("decorated", "VarArgs"): [],
    ("decorated", "VarArgsCaller"): [],
    # Traced on its own, a parameter with a default is still a placeholder (fx semantics).
    ("decorated", "DecoratedChild"): [("FXS101", "decorated.py", "FXS101 residual", "residual", [""])],
    ("decorated", "FailingWithDecoratedChildren"): [
        ("FXS103", "decorated.py", "FXS103 parent", "len(y)", [""])],
    ("decorated", "DecoratedKeywordOnly"): [],
    ("call_args", "Scaler"): [
        ("FXS101", "call_args.py", "FXS101 flag", "flag", [""]),
        ("FXS101", "call_args.py", "FXS101 mode", 'mode == "mean"', [""]),
    ],
    ("call_args", "FailingParent"): [("FXS101", "call_args.py", "FXS101 parent", "y.sum() > 0", [""])],
    # With the default flag=False, Scaler never calls proj.
    ("call_args", "Forwarder"): [
        ("FXS301", "call_args.py", "FXS301 proj", "self.proj", ["scaler.proj"]),
        ("FXS102", "call_args.py", "FXS102 kwargs", "self.scaler(x, **kwargs)", [""]),
    ],
    ("call_args", "FailingParentOfForwarder"): [
        ("FXS301", "call_args.py", "FXS301 proj", "self.proj", ["forwarder.scaler.proj"]),
        ("FXS103", "call_args.py", "FXS103 parent", "len(y)", [""]),
    ],
    ("unrecordable", "Layer"): [("FXS101", "unrecordable.py", "FXS101 layer", "x.sum() > 0", [""])],
    ("unrecordable", "CacheStack"): [
        ("FXS101", "unrecordable.py", "FXS101 layer", "x.sum() > 0", ["layers.0", "layers.1"]),
        ("FXS107", "unrecordable.py", "FXS107 call", "layer(x, cache)", [""]),
    ],
    ("unrecordable_output", "ReturnsObject"): [
        ("FXS107", "unrecordable_output.py", "FXS107 object", "return State(self.proj(x))", [""])],
    ("unrecordable_output", "ReturnsDictWithObject"): [
        ("FXS107", "unrecordable_output.py", "FXS107 dict", 'return {"hidden": h, "state": State(h)}', [""])],
    ("unrecordable_output", "ConsumesObject"): [],
    ("unrecordable_output", "FailingCaller"): [
        ("FXS101", "unrecordable_output.py", "FXS101 caller", "state.hidden.sum() > 0", [""])],
    ("multi", "ManyProblems"): [
        ("FXS101", "multi.py", "FXS101 if", "x.sum() > 0", [""]),
        ("FXS103", "multi.py", "FXS103 len", "len(x)", [""]),
        ("FXS104", "multi.py", "FXS104 int", "int(x.max())", [""]),
    ],
    ("meta_fallback", "NeedsRealData"): [
        ("FXS406", "meta_fallback.py", "FXS406 item", "self.freqs.sum().item()", [])],
    # Traced sizes reach torch's argument parser, which hands them to fx: no finding.
    **{("traced_sizes", name): [] for name in (
        "FactoryOfShapeTuple", "RandomPermutation", "NarrowByInputSize", "CausalMaskNarrow", "FactoryManySizes",
    )},
    ("traced_sizes", "SizesOneByOne"): [("FXS104", "traced_sizes.py", "FXS104 varargs", "torch.ones(b, n)", [""])],
    ("traced_sizes", "CausalMaskSlice"): [
        ("FXS104", "traced_sizes.py", "FXS104 buffer", "self.bias[:, :, :T, :T]", [""])],
    # Placeholders cause no findings of their own and exploration goes on after them.
    ("placeholders", "StarShapeUnpack"): [
        ("FXS102", "placeholders.py", "FXS102 star", "*x.shape, self.heads", [""])],
    ("placeholders", "LenThenAssert"): [
        ("FXS103", "placeholders.py", "FXS103 len", "len(embed_ids)", [""]),
        ("FXS101", "placeholders.py", "FXS101 later", "y.mean() > 0", [""]),
    ],
    ("placeholders", "AssertOnLength"): [
        ("FXS103", "placeholders.py", "FXS103 rank", "len(x.shape)", [""]),
        ("FXS101", "placeholders.py", "FXS101 after-assert", "x.max() > 0", [""]),
    ],
    ("placeholders", "WithLengthCheck"): [
        ("FXS103", "placeholders.py", "FXS103 rank", "len(x.shape)", ["check"]),
        ("FXS101", "placeholders.py", "FXS101 after-assert", "x.max() > 0", ["check"]),
    ],
    ("placeholders", "UnpackRest"): [
        ("FXS102", "placeholders.py", "FXS102 rest", "first, second, *rest", [""])],
    # Children traced with stand-in arguments: no error the stand-in call alone causes.
    ("stand_in", "CrossAttention"): [],
    ("stand_in", "FailsBeforeCrossAttention"): [
        ("FXS104", "stand_in.py", "FXS104 parent", "range(x.size(0))", [""])],
    ("stand_in", "Gated"): [("FXS101", "stand_in.py", "FXS101 child", "y.max() > 0", [""])],
    ("stand_in", "FailsBeforeGated"): [
        ("FXS104", "stand_in.py", "FXS104 range", "range(x.size(0))", [""]),
        ("FXS101", "stand_in.py", "FXS101 child", "y.max() > 0", ["gated"]),
    ],
    # Used without being called: iterated, weight read, or holding only None.
    **{("used_submodules", name): [] for name in ("IteratedList", "TiedWeight", "NormsOrNone")},
    ("used_submodules", "StillUnused"): [
        ("FXS301", "used_submodules.py", "FXS301 extra", "self.extra", ["extra"])],
    ("asserts", "ChainedAssert"): [("FXS101", "asserts.py", "FXS101 chained", "0 <= x.min() < 10", [""])],
    ("asserts", "AssertAnd"): [
        ("FXS101", "asserts.py", "FXS101 and", "x.dim() == 2", [""]),
        ("FXS101", "asserts.py", "FXS101 and", "x.size(1) == 4", [""]),
    ],
    ("asserts", "TorchAssert"): [],
    **{("clean", name): [] for name in (
        "MLP", "ConvNet", "Residual", "LayerStack", "SelfAttention", "TiedLM", "WrappedHelper",
        "MathOnSizes", "ConcreteDefault",
    )},
}

#: Corpus modules whose classes are covered by other test files.
ELSEWHERE = {"hf_wrappers", "shapes_control", "einops_calls"}


def corpus_classes(buildable: bool = True) -> list[tuple[str, str]]:
    """Every model class of the corpus (those a module lists in ``NEEDS_ARGUMENTS`` only when
    not ``buildable``)."""
    out = []
    for path in sorted(MODELS_DIR.glob("*.py")):
        if path.stem in ELSEWHERE:
            continue
        module = importlib.import_module(path.stem)
        unbuildable = set(getattr(module, "NEEDS_ARGUMENTS", ()))
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == path.stem \
                    and (name in unbuildable) != buildable:
                out.append((path.stem, name))
    return out


def test_every_corpus_class_has_expectations() -> None:
    assert sorted(corpus_classes()) == sorted(EXPECTED)


def test_every_corpus_class_builds_without_arguments() -> None:
    for module, name in corpus_classes():
        cls = model_class(module, name)
        assert all(
            p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
        ), f"{module}.{name} needs constructor arguments"


def test_classes_listed_as_needing_arguments_do_not_build_without_them() -> None:
    listed = corpus_classes(buildable=False)
    assert ("optional_args", "Quantizer") in listed and ("optional_args", "MixedLinear") in listed
    for module, name in listed:
        with pytest.raises((AssertionError, TypeError)):
            model_class(module, name)()


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0]}.{k[1]}")
def test_findings(key: tuple[str, str]) -> None:
    built, report = run(model_class(*key))
    expected = EXPECTED[key]
    got = sorted(report.findings, key=lambda f: (f.location.file, f.location.line, f.code))
    want = sorted(expected, key=lambda e: (str(MODELS_DIR / e[1]), marker_line(e[1], e[2]), e[0]))
    assert [f.code for f in got] == [e[0] for e in want], describe(got)
    for finding, (code, file, tag, expr, scopes) in zip(got, want):
        assert tag.startswith(code) or code == "FXS406"
        assert_located(finding.location, file, tag, expr)
        assert [path for path, _ in finding.scopes] == scopes, describe([finding])
        for path, type_name in finding.scopes:
            owner = built.model.get_submodule(path)
            assert type_name == f"{type(owner).__module__}.{type(owner).__qualname__}"
        assert finding.severity == CODES[code].severity
        assert finding.message and "\n" not in finding.message
        assert finding.anchor is None  # every location here is user code
    json.dumps([f.to_json() for f in report.findings])  # JSON-able as is


def _error_free(key: tuple[str, str]) -> bool:
    return not any(CODES[e[0]].severity == "error" for e in EXPECTED[key])


@pytest.mark.parametrize("key", [k for k in sorted(EXPECTED) if _error_free(k)], ids=lambda k: f"{k[0]}.{k[1]}")
def test_models_without_errors_trace(key: tuple[str, str]) -> None:
    _, report = run(model_class(*key))
    assert report.status == "traced"
    assert set(statuses(report).values()) <= {"traced", "leaf", "unvisited"}
    assert [path for path, _, _ in report.collection.graphs()] == [""]


@pytest.mark.parametrize("name", [k[1] for k in EXPECTED if k[0] == "clean"])
def test_clean_models_have_no_findings_and_only_traced_or_leaf_modules(name: str) -> None:
    _, report = run(model_class("clean", name))
    assert report.findings == [], describe(report.findings)
    assert report.status == "traced"
    assert set(statuses(report).values()) <= {"traced", "leaf"}, statuses(report)


# Inputs for running graphs against eager mode (CPU builds).
INPUTS = {
    ("clean", "MLP"): lambda: (torch.randn(2, 8),),
    ("clean", "ConvNet"): lambda: (torch.randn(2, 3, 8, 8),),
    ("clean", "Residual"): lambda: (torch.randn(2, 5, 16),),
    ("clean", "LayerStack"): lambda: (torch.randn(2, 5, 16),),
    ("clean", "SelfAttention"): lambda: (torch.randn(2, 5, 16),),
    ("clean", "TiedLM"): lambda: (torch.randint(0, 50, (2, 7)),),
    ("clean", "WrappedHelper"): lambda: (torch.randn(3, 8) * 10,),
    ("clean", "MathOnSizes"): lambda: (torch.randn(2, 4, 8), torch.randn(2, 4, 8)),
    ("clean", "ConcreteDefault"): lambda: (torch.randn(2, 8), torch.tensor(3.0)),
    ("iteration", "ShapeUnpackIsFine"): lambda: (torch.randn(2, 3, 4),),
    ("uses_helpers", "UsesSafeHelper"): lambda: (torch.randn(2, 4) * 5,),
    ("decorated", "DecoratedKeywordOnly"): lambda: (torch.randn(2, 4),),
    ("decorated", "VarArgsCaller"): lambda: (torch.randn(2, 4),),
    # Partial graphs: the failed module is one call_module node and runs eagerly.
    ("length", "Outer"): lambda: (torch.randn(3, 8),),
    ("depth", "DeepOnlyLeafFails"): lambda: (torch.randn(3, 8),),
    ("shared_class", "Stack"): lambda: (torch.randint(0, 32, (2, 5)),),
}


@pytest.mark.parametrize("key", sorted(INPUTS), ids=lambda k: f"{k[0]}.{k[1]}")
def test_root_graph_runs_like_eager(key: tuple[str, str]) -> None:
    """The root graph, failed modules included as call_module nodes, computes what the model
    computes: the graph is faithful."""
    torch.manual_seed(0)
    built, report = run(model_class(*key), device="cpu")
    model = built.model.eval()
    graph = report.collection[model]
    graph.lint()
    gm = GraphModule(model, graph)
    inputs = INPUTS[key]()
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), model(*inputs))


def test_failed_module_is_a_call_module_node_in_its_parent_graph() -> None:
    _, report = run(model_class("shared_class", "Stack"))
    graph = report.collection.graph_for("")
    targets = [n.target for n in graph.nodes if n.op == "call_module"]
    assert [t for t in targets if t.endswith("attn")] == ["blocks.0.attn", "blocks.1.attn", "blocks.2.attn"]
    # Nothing of the failed forward's exploration is left in the graph.
    assert not [n for n in graph.nodes if n.meta.get("fxscope_scope", "").endswith("attn") and n.op != "call_module"]
    assert not any(str(t).startswith("blocks.0.attn.") for t in targets)


def test_children_of_failed_modules_are_traced_on_their_own() -> None:
    _, report = run(model_class("depth", "Deep"))
    assert [path for path, _, _ in report.collection.graphs()] == ["", "body.inner.inner.rotary"]
    rotary = report.collection.graph_for("body.inner.inner.rotary")
    assert {n.meta["fxscope_scope"] for n in rotary.nodes} == {"body.inner.inner.rotary"}
    assert report.status == "partial"
    assert statuses(report) == {
        "": "traced", "stem": "leaf", "body": "failed", "body.inner": "failed",
        "body.inner.inner": "failed", "body.inner.inner.rotary": "traced",
        "body.inner.inner.proj": "leaf", "body.inner.norm": "leaf", "body.gate": "leaf", "head": "leaf",
    }


def test_only_the_failing_module_fails_at_depth_three() -> None:
    _, report = run(model_class("depth", "DeepOnlyLeafFails"))
    assert {p: s for p, s in statuses(report).items() if s == "failed"} == {"body.inner.inner": "failed"}
    root = report.collection.graph_for("")
    modules = [n.target for n in root.nodes if n.op == "call_module"]
    assert modules == ["stem", "body.inner.norm", "body.inner.inner", "body.gate", "head"]


def test_module_statuses() -> None:
    _, report = run(model_class("unused", "UnusedSubmodule"))
    assert statuses(report) == {"": "traced", "used": "leaf", "spare": "unvisited"}
    _, report = run(model_class("clean", "TiedLM"))
    # Submodules of a called leaf (nn.MultiheadAttention.out_proj) run inside it.
    assert statuses(report)["mha"] == "leaf" and statuses(report)["mha.out_proj"] == "leaf"
    _, report = run(model_class("control_flow", "IfOnTensor"))
    assert report.status == "failed" and statuses(report) == {"": "failed"}
    assert len(report.collection) == 0


def test_no_container_is_ever_failed() -> None:
    """Inside a model; a container traced as the model itself has no forward, and fails."""
    for module, name in corpus_classes():
        _, report = run(model_class(module, name))
        for row, (path, m) in zip(report.modules, report.collection.model.named_modules()):
            assert row["path"] == path
            if isinstance(m, CONTAINER_TYPES) and path:
                assert row["status"] != "failed", (module, name, path)
                assert not report.collection.is_failed(m)


def test_containers_take_the_status_of_their_children() -> None:
    _, report = run(model_class("shared_class", "Stack"))
    assert statuses(report)["blocks"] == "traced"
    assert [statuses(report)[f"blocks.{i}.attn"] for i in range(3)] == ["failed"] * 3


def test_call_site_concrete_args_are_used_for_children_of_a_failed_module() -> None:
    built, report = run(model_class("call_args", "FailingParent"))
    assert [f.code for f in report.findings] == ["FXS101"]  # only the parent's own `if`
    assert statuses(report) == {"": "failed", "scaler": "traced", "scaler.proj": "leaf",
                                "positional": "traced", "positional.proj": "leaf"}
    # scaler(x, flag=True) with the default mode="mean": proj runs, then the mean.
    scaler = report.collection.graph_for("scaler")
    assert [n.target for n in scaler.nodes if n.op in ("call_module", "call_method")][:2] == ["proj", "mean"]
    # positional(x, True, "none"): proj runs, no mean.
    positional = report.collection.graph_for("positional")
    calls = [n.target for n in positional.nodes if n.op in ("call_module", "call_method")]
    assert "proj" in calls and "mean" not in calls


def test_empty_kwargs_at_the_call_site_are_concrete_for_the_child() -> None:
    """Forwarder alone: `**kwargs` is one placeholder and `f(**kwargs)` a finding. As a child
    called without extra keywords, its `**kwargs` is concretely empty."""
    _, report = run(model_class("call_args", "FailingParentOfForwarder"))
    assert "FXS102" not in [f.code for f in report.findings]
    assert [path for path, _, _ in report.collection.graphs()] == ["forwarder"]
    assert statuses(report)["forwarder"] == "traced"


def test_a_call_fx_cannot_record_fails_the_caller_and_exploration_goes_on() -> None:
    """`layer(x, cache)`: the failed Layer cannot become a call_module node (fx has no graph form
    for the Cache argument). The caller fails at that line, and the loop goes on: the second
    layer is explored in the same trace."""
    built, report = run(model_class("unrecordable", "CacheStack"))
    root_trace = report.collection.tracers[0]
    assert root_trace.prefix == ""
    by_code = {f.code: f for f in root_trace.findings.items()}
    assert [s for s, _ in by_code["FXS101"].scopes] == ["layers.0", "layers.1"]
    assert "Cache" in by_code["FXS107"].message and "could not be traced" in by_code["FXS107"].message
    assert report.status == "failed"
    assert statuses(report) == {"": "failed", "layers": "traced", "layers.0": "failed", "layers.0.proj": "leaf",
                                "layers.1": "failed", "layers.1.proj": "leaf"}


def test_an_output_fx_cannot_record_is_fxs107_at_the_return_that_ran() -> None:
    """fx fails after the root forward returned, with no model frame on the stack: the finding
    (located by test_findings at the `return` that ran) names the part fx rejected and its type."""
    for name, part in (("ReturnsObject", "it is a"), ("ReturnsDictWithObject", '`output["state"]` is a')):
        with pytest.raises(NotImplementedError) as plain:  # plain fx's own error, kept in the message
            torch.fx.symbolic_trace(model_class("unrecordable_output", name)())
        _, report = run(model_class("unrecordable_output", name))
        (finding,) = report.findings
        assert f"{part} `unrecordable_output.State`" in finding.message, finding.message
        assert f"NotImplementedError: {plain.value}" in finding.message, finding.message
        assert "Return tensors" in finding.hint and "use_cache" not in finding.hint
        assert report.status == "failed"
        assert statuses(report) == {"": "failed", "proj": "leaf"}


def test_a_child_traced_on_its_own_returning_an_object_fails_without_a_finding() -> None:
    """In the model the caller receives the object (fx records that); only the child's graph of
    its own would need it as an output, which is no problem of the model."""
    built, report = run(model_class("unrecordable_output", "FailingCaller"))
    assert [f.code for f in report.findings] == ["FXS101"], describe(report.findings)
    assert statuses(report) == {"": "failed", "inner": "failed", "inner.proj": "leaf"}
    assert "State" in report.collection.failure_msg(built.model.inner)


def test_decorated_and_varargs_children_of_a_failed_module() -> None:
    _, report = run(model_class("decorated", "FailingWithDecoratedChildren"))
    assert [f.code for f in report.findings] == ["FXS103"]
    assert [path for path, _, _ in report.collection.graphs()] == ["varargs", "child"]
    # child was called with residual=False: no residual add in its graph.
    child = report.collection.graph_for("child")
    assert [n.target for n in child.nodes if n.op == "call_module"] == ["proj"]
    # By function name: str() of a function includes its address, whose hex digits can spell "add".
    called = [getattr(n.target, "__name__", n.target) for n in child.nodes if n.op == "call_function"]
    assert not [name for name in called if name in ("add", "iadd")], called


def test_all_problems_of_one_forward_in_one_run() -> None:
    _, report = run(model_class("multi", "ManyProblems"))
    assert [f.code for f in report.findings] == ["FXS101", "FXS103", "FXS104"]
    assert len(report.collection.tracers) == 1  # one trace of the root, nothing retraced


def test_one_finding_with_every_instance_as_scope() -> None:
    _, report = run(model_class("shared_class", "Stack"))
    (finding,) = report.findings
    assert finding.scopes == [(f"blocks.{i}.attn", "shared_class.Attention") for i in range(3)]
    assert [s["path"] for s in finding.to_json()["scopes"]] == ["blocks.0.attn", "blocks.1.attn", "blocks.2.attn"]


def test_finding_in_a_helper_of_another_file_has_the_call_line_as_related() -> None:
    _, report = run(model_class("uses_helpers", "UsesHelper"))
    (finding,) = report.findings
    assert_located(finding.location, "helpers.py", "FXS101 helper", "x.abs().max() > 1")
    assert finding.location.function == "scale"
    call_line, column, end_column = expected_range("uses_helpers.py", "CALL helper", "scale(self.proj(x))")
    (related,) = finding.related
    assert related.file == str(MODELS_DIR / "uses_helpers.py")
    assert (related.line, related.column, related.end_column) == (call_line, column, end_column)
    assert finding.to_json()["related"][0]["line"] == call_line


def test_failures_at_every_depth_carry_the_call_chain() -> None:
    _, report = run(model_class("depth", "Deep"))
    by_code = {f.code: f for f in report.findings}
    chains = {code: [(r.line, r.function) for r in f.related] for code, f in by_code.items()}
    assert [fn for _, fn in chains["FXS104"]] == ["forward"]
    assert len(chains["FXS103"]) == 2 and len(chains["FXS101"]) == 3
    assert chains["FXS101"][:2] == chains["FXS103"]  # outermost first


def test_meta_fallback_builds_on_cpu_with_an_info_finding() -> None:
    built, report = run(model_class("meta_fallback", "NeedsRealData"))
    assert built.device == "cpu" and not built.model.proj.weight.is_meta
    (finding,) = built.findings
    assert finding.code == "FXS406" and finding.severity == "info"
    assert "meta" in finding.message and "item()" in finding.message
    assert_located(finding.location, "meta_fallback.py", "FXS406 item", "self.freqs.sum().item()")
    assert report.status == "traced" and report.findings == [finding]


def test_hazard_locations_without_build_sites() -> None:
    """A model not built by build_model: FXS301/FXS302 fall back to the class source."""
    for key, (code, file, tag, expr, _) in [
        (("unused", "UnusedSubmodule"), EXPECTED[("unused", "UnusedSubmodule")][0]),
        (("unused", "UnusedParameter"), EXPECTED[("unused", "UnusedParameter")][0]),
    ]:
        report = analyze(model_class(*key)(), is_user_file=is_user_file)
        (finding,) = report.findings
        assert finding.code == code
        assert_located(finding.location, file, tag, expr)


def test_concrete_args_of_the_root() -> None:
    _, report = run(model_class("call_args", "Scaler"), concrete_args={"flag": True, "mode": "none"})
    assert report.findings == [] and report.status == "traced"


def test_dead_inplace_graph_really_loses_the_op() -> None:
    """What FXS201 warns about: dead code elimination changes the result."""
    built = build_model(model_class("dead_inplace", "DeadMethod"), device="cpu")
    report = analyze(built.model, is_user_file=is_user_file)
    gm = GraphModule(built.model, report.collection[built.model])
    x = torch.tensor([-2.0, -0.5, 0.5, 2.0])  # negatives: the dropped relu_ changes the result
    assert torch.equal(gm(x), built.model(x))
    gm.graph.eliminate_dead_code()
    gm.recompile()
    assert not torch.equal(gm(x), built.model(x))


def test_report_json_and_graph_json() -> None:
    _, report = run(model_class("shared_class", "Stack"))
    doc = report.to_json(graphs=True)
    json.dumps(doc)
    assert doc["status"] == "partial" and doc["nodes"] == report.nodes
    (graph,) = doc["graphs"]
    node = next(n for n in graph["nodes"] if n["target"] == "blocks.1.attn")
    assert node["op"] == "call_module" and node["scope"] == "blocks.1.attn"
    assert node["file"] == str(MODELS_DIR / "shared_class.py")
    assert node["line"] == next(i for i, t in enumerate((MODELS_DIR / "shared_class.py").read_text().splitlines(), 1)
                                if "x + self.attn(self.norm1(x))" in t)
    rows = {m["path"]: m for m in doc["modules"]}
    assert rows["blocks.0.attn"]["file"] == str(MODELS_DIR / "shared_class.py")
    assert rows["blocks.0.attn"]["params"] == 0 and rows["blocks.0.attn.qkv"]["params"] == 16 * 48 + 48
