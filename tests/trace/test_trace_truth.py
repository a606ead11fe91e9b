"""Tracer truth: every call site kept, nothing made up, hints that fix.

Each case is a small model of tests/models; the invariant tests compare fxscope with plain
torch.fx over the whole corpus and over transformers models built from small configs."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.fx as fx
from torch import nn
from torch.fx import GraphModule

from fxscope.trace.analysis import analyze
from fxscope.trace.build import build_model
from fxscope.model.codes import CODES
from fxscope.trace.frames import INTERNAL, FrameClassifier
from fxscope.trace.tracer import decorated_root_args
from trace_support import MODELS_DIR, assert_located, describe, is_user_file, model_class, run, statuses

pytestmark = [pytest.mark.requires_torch, pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")]

einops = pytest.importorskip("einops")


def _errors(report: Any) -> list:
    return [f for f in report.findings if f.severity == "error"]


def _site_packages(path: str) -> bool:
    return os.path.isabs(path) and not is_user_file(path)


# ---------------------------------------------------------------------- library call sites
def test_each_call_site_into_a_library_is_its_own_finding_at_its_anchor() -> None:
    _, report = run(model_class("einops_calls", "ThreeCallSites"))
    errors = _errors(report)
    assert len(errors) == 3, describe(errors)
    by_scope = {f.scopes[0][0]: f for f in errors}
    assert sorted(by_scope) == ["merge", "split", "tile"]
    calls = {"split": ('rearrange(x, "b n (h d) -> b h n d", h=2)', "einops:rearrange"),
             "merge": ('rearrange(x, "b h n d -> b n (h d)")', "einops:rearrange"),
             "tile": ('repeat(x, "b n d -> b n d r", r=2)', "einops:repeat")}
    for scope, (expr, entry) in calls.items():
        finding = by_scope[scope]
        assert _site_packages(finding.location.file), finding.location
        assert_located(finding.anchor, "einops_calls.py", f"ANCHOR {scope}", expr)
        assert finding.to_json()["anchor"]["line"] == finding.anchor.line
        # The fix for a library function called from the workspace: wrap it, never a leaf.
        assert f'wrap-functions = ["{entry}"]' in finding.hint and "torch.fx.wrap" in finding.hint
        assert "leaf-modules" not in finding.hint
    # Same library line, three anchors: three distinct keys.
    assert len({f.key() for f in errors}) == 3


def test_instances_of_one_class_calling_a_library_share_one_finding() -> None:
    _, report = run(model_class("einops_calls", "TwoInstances"))
    (finding,) = _errors(report)
    assert [path for path, _ in finding.scopes] == ["first", "second"]
    assert_located(finding.anchor, "einops_calls.py", "ANCHOR split", 'rearrange(x, "b n (h d) -> b h n d", h=2)')


def test_library_layer_failure_names_its_leaf_module_and_the_fix_works() -> None:
    from einops.layers.torch import Rearrange

    _, report = run(model_class("einops_calls", "PatchEmbed"))
    (finding,) = _errors(report)
    assert finding.scopes[0][0] == "to_patches.0"
    assert 'leaf-modules = ["einops.layers.torch.Rearrange"]' in finding.hint
    assert "PatchEmbed" not in finding.hint and "wrap-functions" not in finding.hint
    assert_located(finding.anchor, "einops_calls.py", "ANCHOR layer", "self.to_patches(img)")
    # Following the hint: the layer is one call_module node and nothing fails.
    built = build_model(model_class("einops_calls", "PatchEmbed"), is_user_file=is_user_file)
    fixed = analyze(built.model, is_user_file=is_user_file, leaf_types=(Rearrange,))
    assert _errors(fixed) == [] and fixed.status == "traced"
    graph = fixed.collection.graph_for("")
    assert "to_patches.0" in [n.target for n in graph.nodes if n.op == "call_module"]


def test_a_library_model_traced_directly_is_never_suggested_as_its_own_leaf() -> None:
    transformers = pytest.importorskip("transformers")
    model = transformers.LlamaModel(transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=50, max_position_embeddings=32))
    report = analyze(model, is_user_file=is_user_file)
    root_type = f"{type(model).__module__}.{type(model).__qualname__}"
    for finding in report.findings:
        assert root_type not in (finding.hint or ""), finding


def test_wrap_functions_record_a_library_function_as_one_node() -> None:
    module = importlib.import_module("einops_calls")
    built = build_model(module.WrappedHead, device="cpu", is_user_file=is_user_file)
    before = analyze(built.model, is_user_file=is_user_file)
    assert [f.code for f in _errors(before)] == ["FXS107"]
    report = analyze(built.model, is_user_file=is_user_file, wrap_functions=module.einops_functions())
    assert report.findings == [] and report.status == "traced"
    graph = report.collection.graph_for("")
    assert [n.target for n in graph.nodes if n.op == "call_function"] == [einops.rearrange]
    gm = GraphModule(built.model, graph)
    x = torch.randn(2, 3, 8)
    torch.testing.assert_close(gm(x), built.model(x))
    # Three call sites, all wrapped: nothing left to report.
    _, three = run(model_class("einops_calls", "ThreeCallSites"))
    assert len(_errors(three)) == 3
    built = build_model(module.ThreeCallSites, is_user_file=is_user_file)
    wrapped = analyze(built.model, is_user_file=is_user_file, wrap_functions=module.einops_functions())
    assert _errors(wrapped) == [], describe(wrapped.findings)


def test_the_worker_resolves_wrap_functions_from_the_config(tmp_path: Path) -> None:
    """`wrap-functions` entries reach the tracer through the worker's job; bad entries are warnings."""
    (tmp_path / "heads.py").write_text(textwrap.dedent("""
        from einops import rearrange
        from torch import nn


        class Heads(nn.Module):
            def forward(self, x):
                return rearrange(x, "b n (h d) -> b h n d", h=2)
    """))
    script = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from fxscope.model.outcome import TargetOutcome
        from fxscope.project.config import Config
        from fxscope.project.discovery import discover
        from fxscope.worker.runner import run_trace_job
        root = Path({str(tmp_path)!r})
        out = {{}}
        for name, wrap in (("plain", ()), ("wrapped", ("einops:rearrange", "einops.repeat", "no_such_pkg:f"))):
            config = Config(root=root, wrap_functions=wrap)
            # the target as discovery makes it (its build candidates included)
            (target,) = [t.to_json() for t in discover(config).targets if t.qualname == "Heads"]
            body = run_trace_job({{"root": str(root), "config": config.to_json(), "target": target}})
            outcome = TargetOutcome.from_json(body)  # empty warnings are left out of the JSON
            out[name] = {{"status": outcome.status, "codes": [f.code for f in outcome.findings],
                         "warnings": list(outcome.warnings)}}
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["plain"]["codes"] == ["FXS107"] and out["plain"]["warnings"] == []
    assert out["wrapped"]["status"] == "traced" and out["wrapped"]["codes"] == []
    (warning,) = out["wrapped"]["warnings"]
    assert "no_such_pkg:f" in warning and "wrap-functions" in warning


# ---------------------------------------------------------------------- traced sizes
SIZE_INPUTS: dict[str, Callable[[], tuple]] = {
    "FactoryOfShapeTuple": lambda: (torch.randn(2, 3, 4),),
    "RandomPermutation": lambda: (torch.randn(2, 3, 4, 4),),
    "NarrowByInputSize": lambda: (torch.randn(3, 5),),
    "CausalMaskNarrow": lambda: (torch.randn(2, 2, 6, 6),),
    "FactoryManySizes": lambda: (torch.randn(2, 5, 3),),
}


@pytest.mark.parametrize("name", sorted(SIZE_INPUTS))
def test_traced_sizes_given_to_torch_functions_trace_like_plain_fx_and_eager(name: str) -> None:
    cls = model_class("traced_sizes", name)
    torch.manual_seed(0)
    built = build_model(cls, device="cpu", is_user_file=is_user_file)
    model = built.model.eval()
    report = analyze(model, is_user_file=is_user_file)
    assert report.findings == [], describe(report.findings)
    plain = fx.symbolic_trace(model)
    ours = report.collection.graph_for("")
    assert [(n.op, n.name, str(n.target)) for n in ours.nodes] == [
        (n.op, n.name, str(n.target)) for n in plain.graph.nodes]
    inputs = SIZE_INPUTS[name]()
    gm = GraphModule(model, ours)
    torch.manual_seed(1)
    expected = model(*inputs)
    torch.manual_seed(1)
    torch.testing.assert_close(gm(*inputs), expected)


def test_range_and_list_index_on_traced_values_are_still_fxs104() -> None:
    for name, expr in (("RangeOfSize", "range(x.size(0))"), ("ListIndex", "self.scales[x.dim()]")):
        _, report = run(model_class("python_number", name))
        (finding,) = report.findings
        assert finding.code == "FXS104" and f"`{expr}`" in finding.message


def test_fxs104_hints_fit_what_failed() -> None:
    _, report = run(model_class("traced_sizes", "SizesOneByOne"))
    (finding,) = report.findings
    assert "torch.ones((b, n))" in finding.hint
    _, report = run(model_class("traced_sizes", "CausalMaskSlice"))
    (finding,) = report.findings
    assert "buffer `self.bias`" in finding.message and "does not trace" in finding.message
    assert ".narrow(" in finding.hint
    # The generic help is for range()/int()/indexing: `.narrow` is no fix there.
    assert "narrow" not in CODES["FXS104"].help
    _, report = run(model_class("python_number", "IntOfTensor"))
    assert report.findings[0].hint is None  # the code's help applies


# ---------------------------------------------------------------------- placeholders
def test_placeholder_consequences_are_not_findings() -> None:
    _, report = run(model_class("placeholders", "StarShapeUnpack"))
    assert [f.code for f in report.findings] == ["FXS102"], describe(report.findings)
    _, report = run(model_class("placeholders", "UnpackRest"))
    assert [f.code for f in report.findings] == ["FXS102"], describe(report.findings)


def test_an_assert_failed_by_a_placeholder_does_not_end_exploration() -> None:
    """The root forward and a child's forward are both explored past the assert."""
    _, report = run(model_class("placeholders", "LenThenAssert"))
    assert [f.code for f in report.findings] == ["FXS103", "FXS101"], describe(report.findings)
    assert report.collection.tracers[0].aborted == set()
    _, report = run(model_class("placeholders", "WithLengthCheck"))
    assert [f.code for f in report.findings] == ["FXS103", "FXS101"], describe(report.findings)
    assert statuses(report) == {"": "traced", "check": "failed", "proj": "leaf"}
    graph = report.collection.graph_for("")
    graph.lint()
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["proj", "check"]
    assert not [n for n in graph.nodes if n.meta.get("fxscope_scope") == "check" and n.op != "call_module"]


def test_the_assert_skip_keeps_an_existing_trace_function() -> None:
    calls: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call":
            calls.append(frame.f_code.co_name)
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        run(model_class("placeholders", "AssertOnLength"))
    finally:
        sys.settrace(previous)
    assert "forward" in calls
    assert sys.gettrace() is previous


# ---------------------------------------------------------------------- stand-in calls
def test_findings_only_the_stand_in_call_causes_are_dropped() -> None:
    _, report = run(model_class("stand_in", "FailsBeforeCrossAttention"))
    assert [f.code for f in report.findings] == ["FXS104"], describe(report.findings)
    assert statuses(report)[""] == "failed"
    cross = [t for t in report.collection.tracers if t.prefix == "cross"]
    assert cross and cross[0].stand_in
    # Called with a context (the root's own call), CrossAttention has no finding either.
    _, alone = run(model_class("stand_in", "CrossAttention"))
    assert alone.findings == []


def test_a_real_problem_of_a_stand_in_child_is_kept() -> None:
    _, report = run(model_class("stand_in", "FailsBeforeGated"))
    assert [(f.code, f.scopes[0][0]) for f in report.findings] == [("FXS104", ""), ("FXS101", "gated")]


# ---------------------------------------------------------------------- hints
def test_an_assert_on_a_traced_value_suggests_torch_assert() -> None:
    for name in ("ChainedAssert", "AssertAnd"):
        _, report = run(model_class("asserts", name))
        for finding in report.findings:
            assert "decides an `assert`" in finding.message, finding.message
            assert "torch._assert" in finding.hint and "torch.where" not in finding.hint
    _, report = run(model_class("control_flow", "AssertOnTensor"))
    assert "torch._assert" in report.findings[0].hint
    _, report = run(model_class("control_flow", "IfOnTensor"))
    assert report.findings[0].hint is None  # not an assert: the code's help
    _, report = run(model_class("asserts", "TorchAssert"))
    assert report.findings == []
    assert [n.target for n in report.collection.graph_for("").nodes].count(torch._assert) == 1


# ---------------------------------------------------------------------- invariants
_classifier = FrameClassifier(is_user_file)


class _PlainTracer(fx.Tracer):
    """torch.fx's Tracer with the user's fixes: failing modules registered as leaves, and fx's
    binding of decorated forwards fixed the way fxscope does (fx rewrites a ``*args, **kwargs``
    wrapper's code to the inner signature and binds a traced value to the wrapper's ``kwargs``)."""

    def __init__(self, leaves: set[str]) -> None:
        super().__init__()
        self.leaves = leaves

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return module_qualified_name in self.leaves or super().is_leaf_module(m, module_qualified_name)

    def create_args_for_root(self, root_fn: Any, is_module: bool, concrete_args: Any = None) -> Any:
        return decorated_root_args(self, super().create_args_for_root, root_fn, is_module, concrete_args)


def _failure_line(e: BaseException) -> tuple[str, int] | None:
    """The innermost line of model code (workspace or site-packages) in ``e``'s traceback."""
    line = None
    tb = e.__traceback__
    while tb is not None:
        file = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if _classifier.kind(tb.tb_frame.f_code) != INTERNAL and (is_user_file(file) or "-packages" in file):
            line = (file, tb.tb_lineno)
        tb = tb.tb_next
    return line


def plain_fx_fix_loop(model: nn.Module, concrete_args: dict[str, Any] | None
                      ) -> tuple[list[tuple[tuple[str, int] | None, str]], fx.Graph | None]:
    """Trace with plain fx; on failure, register the failing module (the innermost one fx was
    inside) as a leaf and trace again, until it traces or the root's own forward fails. Returns
    the failure lines visited and the final graph (None when the root failed)."""
    leaves: set[str] = set()
    visited: list[tuple[tuple[str, int] | None, str]] = []
    for _ in range(100):
        tracer = _PlainTracer(leaves)
        try:
            return visited, tracer.trace(model, concrete_args)
        except Exception as e:  # noqa: BLE001 - any failure of plain fx is a visited line
            visited.append((_failure_line(e), f"{type(e).__name__}: {str(e)[:120]}"))
            inside = [qualname for qualname, _ in tracer.module_stack.values() if qualname and qualname not in leaves]
            if not inside:
                return visited, None
            leaves.add(inside[-1])
    raise AssertionError("plain fx made no progress")


def _node_key(n: fx.Node) -> tuple:
    return (n.op, n.name, str(n.target), repr(n.args), repr(n.kwargs))


#: Models plain fx "traces" into a graph that fails when run (numpy calls `x.sum(axis=None,
#: out=None)`, which torch rejects): fxscope's error is checked against running that graph.
BROKEN_WHEN_RUN: dict[tuple[str, str], Callable[[], tuple]] = {
    ("numpy_use", "NumpyReduction"): lambda: (torch.rand(3, 4),),
}


def check_against_plain_fx(key: tuple[str, str] | str, factory: Callable[[], nn.Module],
                           concrete_args: dict[str, Any] | None = None) -> None:
    built, report = run(factory, concrete_args=concrete_args)
    cargs = concrete_args if concrete_args is not None else built.concrete_args
    # A model of its own: tracing sets attributes on the root (`_tensor_constant0`), which a
    # second trace of the same object would number on from.
    fresh = build_model(factory, is_user_file=is_user_file).model
    visited, graph = plain_fx_fix_loop(fresh, cargs)
    errors = _errors(report)
    if not visited:
        if errors and key in BROKEN_WHEN_RUN:
            cpu = build_model(factory, device="cpu", is_user_file=is_user_file).model
            inputs = BROKEN_WHEN_RUN[key]()
            with pytest.raises(Exception):
                torch.testing.assert_close(GraphModule(cpu, fx.Tracer().trace(cpu)).forward(*inputs), cpu(*inputs))
            return
        assert errors == [], f"plain fx traces {key}, fxscope reports {describe(errors)}"
        ours = report.collection.graph_for("")
        assert ours is not None
        assert [_node_key(n) for n in ours.nodes] == [_node_key(n) for n in graph.nodes]
        return
    assert errors, f"plain fx fails on {key} ({visited[-1][1]}), fxscope reports no error"
    reported = {(f.location.file, f.location.line) for f in errors}
    reported |= {(f.anchor.file, f.anchor.line) for f in errors if f.anchor is not None}
    for line, message in visited:
        if line is None:
            continue  # inside torch.fx itself, no model line
        assert line in reported, (
            f"{key}: plain fx fails at {os.path.basename(line[0])}:{line[1]} ({message}), fxscope "
            f"reported {sorted((os.path.basename(f), n) for f, n in reported)}")


def _corpus() -> list[tuple[str, str]]:
    """Every model class of the corpus that builds without arguments (see NEEDS_ARGUMENTS)."""
    out = []
    for path in sorted(MODELS_DIR.glob("*.py")):
        if path.stem == "hf_wrappers" and importlib.util.find_spec("transformers") is None:
            continue
        module = importlib.import_module(path.stem)
        unbuildable = set(getattr(module, "NEEDS_ARGUMENTS", ()))
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == path.stem \
                    and name not in unbuildable:
                out.append((path.stem, name))
    return out


@pytest.mark.parametrize("key", _corpus(), ids=lambda k: f"{k[0]}.{k[1]}")
def test_corpus_agrees_with_plain_fx(key: tuple[str, str]) -> None:
    """Traceable by plain fx: no error and the same graph. Not traceable: every line plain fx
    fails at, fixing one failure after the other, is a line fxscope reported."""
    check_against_plain_fx(key, model_class(*key))


def _corpus_inputs() -> list[tuple[str, str]]:
    """Corpus classes with example inputs (a module's ``INPUTS``): traced shape-aware too."""
    return [(stem, name) for stem, name in _corpus()
            if name in getattr(importlib.import_module(stem), "INPUTS", {})]


def _real_inputs(specs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """CPU tensors for input specs: floats normal, integers (positions) small, masks random."""
    from fxscope.trace.inputs import DTYPES, parse_inputs

    gen = torch.Generator().manual_seed(0)
    out = {}
    for name, spec in parse_inputs(specs).items():
        dtype = DTYPES[spec.dtype]
        if dtype.is_floating_point:
            out[name] = torch.randn(spec.shape, generator=gen, dtype=dtype)
        elif dtype == torch.bool:
            out[name] = torch.randint(0, 2, spec.shape, generator=gen).bool()
        else:
            out[name] = torch.randint(0, 3, spec.shape, generator=gen, dtype=dtype)
    return out


@pytest.mark.parametrize("key", _corpus_inputs(), ids=lambda k: f"{k[0]}.{k[1]}")
def test_shape_aware_mode_adds_no_error_plain_fx_does_not_have(key: tuple[str, str]) -> None:
    """With example inputs: where plain fx traces the model, no error and a graph that computes
    what the model computes (buffer writes included); where it fails, no error at a line that
    fxscope without inputs does not report either (shape-aware tracing answers questions, it
    never asks new ones)."""
    import copy

    from fxscope.trace.inputs import example_tensors, parse_inputs

    specs = importlib.import_module(key[0]).INPUTS[key[1]]
    built = build_model(model_class(*key), device="cpu", is_user_file=is_user_file)
    model = built.model.eval()
    shaped = analyze(model, is_user_file=is_user_file, inputs=example_tensors(parse_inputs(specs)))
    plain_visited, _ = plain_fx_fix_loop(model, None)
    errors = _errors(shaped)
    if not plain_visited:
        assert errors == [], f"plain fx traces {key}, shape-aware fxscope reports {describe(errors)}"
        assert shaped.status == "traced"
        inputs = _real_inputs(specs)
        eager_model, graph_model = copy.deepcopy(model), copy.deepcopy(model)
        gm = GraphModule(graph_model, shaped.collection.graph_for(""))
        with torch.no_grad():
            torch.manual_seed(1)
            got = gm(**inputs)
            torch.manual_seed(1)
            torch.testing.assert_close(got, eager_model(**inputs))
        for (name, got), (_, want) in zip(graph_model.named_buffers(), eager_model.named_buffers()):
            torch.testing.assert_close(got, want, msg=f"buffer {name}")
        return
    _, unshaped = run(model_class(*key))
    without = {(f.location.file, f.location.line, f.location.column) for f in _errors(unshaped)}
    added = [f for f in errors if (f.location.file, f.location.line, f.location.column) not in without]
    assert added == [], f"{key}: shape-aware errors that tracing without inputs does not have: {describe(added)}"


def _hf_configs() -> dict[str, Callable[[Any], nn.Module]]:
    return {
        "gpt2": lambda t: t.GPT2Model(t.GPT2Config(
            n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)),
        "bert": lambda t: t.BertModel(t.BertConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=100,
            max_position_embeddings=64)),
        "llama": lambda t: t.LlamaModel(t.LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)),
        "t5": lambda t: t.T5Model(t.T5Config(
            d_model=64, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=32, vocab_size=100)),
        "vit": lambda t: t.ViTModel(t.ViTConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=32,
            patch_size=8)),
    }


def _usual_concrete_args(model: nn.Module) -> dict[str, Any]:
    """Optional inputs None, flags False: how transformers models are usually traced."""
    sig = inspect.signature(inspect.unwrap(type(model).forward))
    out: dict[str, Any] = {}
    for name, p in sig.parameters.items():
        if name in ("use_cache", "output_attentions", "output_hidden_states", "return_dict"):
            out[name] = False
        elif p.default is None and name not in ("input_ids", "pixel_values", "decoder_input_ids"):
            out[name] = None
    return out


@pytest.mark.parametrize("usual_args", [False, True], ids=["placeholders", "concrete-args"])
@pytest.mark.parametrize("name", sorted(_hf_configs()))
def test_transformers_models_agree_with_plain_fx(name: str, usual_args: bool) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers = pytest.importorskip("transformers")

    def factory() -> nn.Module:
        return _hf_configs()[name](transformers)

    cargs = _usual_concrete_args(factory()) if usual_args else None
    check_against_plain_fx(name, factory, cargs)


# ---------------------------------------------------------------------- outputs fx cannot record
@pytest.mark.parametrize("name", ["ReturnsObject", "ReturnsDictWithObject"])
def test_plain_fx_fails_on_the_output_fxscope_reports(name: str) -> None:
    """Plain fx fails inside fx, after the forward returned (no model line in its traceback):
    fxscope's FXS107 is the only place that says where the value came from."""
    model = build_model(model_class("unrecordable_output", name), device="meta", is_user_file=is_user_file).model
    with pytest.raises(NotImplementedError, match="unrecordable_output.State"):
        fx.symbolic_trace(model)
    _, report = run(model_class("unrecordable_output", name))
    assert [f.code for f in _errors(report)] == ["FXS107"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", ["t5", "bart"])
def test_transformers_cache_output_is_fxs107_at_the_models_return(name: str) -> None:
    """Shape-aware tracing gets through a T5/BART forward with the config's use_cache=True; the
    `EncoderDecoderCache` it returns has no graph form in fx. FXS107 at the `return` that ran,
    naming the cache; with `use_cache=False` (the hint) the model traces."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("transformers")
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    from fxscope.trace.inputs import default_inputs, example_tensors
    from hf_models import small_hf_models

    with pytest.raises(NotImplementedError, match="EncoderDecoderCache"):  # plain fx's own verdict
        fx.Tracer().create_arg(EncoderDecoderCache(DynamicCache(), DynamicCache()))
    model = small_hf_models()[name]().eval()
    inputs = example_tensors(default_inputs(model))
    report = analyze(model, {}, inputs=inputs)
    (finding,) = _errors(report)
    forward = inspect.unwrap(type(model).forward)
    lines, first = inspect.getsourcelines(forward)
    assert finding.code == "FXS107" and [path for path, _ in finding.scopes] == [""]
    assert finding.location.file == os.path.abspath(forward.__code__.co_filename)
    assert lines[finding.location.line - first].strip().startswith("return Seq2SeqModelOutput(")
    # The key and the type come from the installed transformers: the same forward, run eagerly.
    with torch.no_grad():  # token ids of 0 (an empty tensor's ids could be out of the vocabulary)
        output = model(**{k: torch.zeros_like(v, device="cpu") for k, v in inputs.items()})
    (key,) = [k for k, v in output.items() if isinstance(v, EncoderDecoderCache)]
    kind = f"{EncoderDecoderCache.__module__}.{EncoderDecoderCache.__qualname__}"
    assert f'`output["{key}"]` is a `{kind}`' in finding.message, finding.message
    assert "use_cache = false" in finding.hint
    fixed = analyze(model, {"use_cache": False}, inputs=inputs)
    assert fixed.status == "traced" and not _errors(fixed), describe(_errors(fixed))


# ---------------------------------------------------------------------- tables, caches, no forward
def _node_targets(graph: fx.Graph) -> list[tuple[str, str]]:
    return [(n.op, str(n.target)) for n in graph.nodes]


@pytest.mark.parametrize("with_inputs", [False, True], ids=["plain", "inputs"])
def test_a_table_indexed_by_a_traced_position_is_one_getitem_node(with_inputs: bool) -> None:
    """torch asks a traced index for its length while parsing it; plain fx's answer (an error)
    makes torch record the lookup as one node, and fxscope gives the same answer."""
    from fxscope.trace.inputs import example_tensors, parse_inputs

    cls = model_class("position_tables", "RotaryTable")
    model = build_model(cls, is_user_file=is_user_file, exact_meta=with_inputs).model
    inputs = example_tensors(parse_inputs(importlib.import_module("position_tables").INPUTS["RotaryTable"]))
    report = analyze(model, is_user_file=is_user_file, inputs=inputs if with_inputs else None)
    assert report.findings == [] and report.status == "traced", describe(report.findings)
    plain = fx.symbolic_trace(build_model(cls, is_user_file=is_user_file).model).graph
    lookups = [t for t in _node_targets(plain) if t[1] == "__getitem__"]
    assert lookups == [("call_method", "__getitem__")]  # what plain fx records, from the installed torch
    assert [t for t in _node_targets(report.collection.graph_for("")) if t[1] == "__getitem__"] == lookups


def test_a_cache_written_at_a_traced_position_is_recorded_in_shape_aware_mode() -> None:
    """Shape-aware tracing proxies buffers; a write into one is the `__setitem__` node plain fx
    records on the real buffer, never FXS105, and running the graph writes the buffer as eager
    does."""
    import copy

    from fxscope.trace.inputs import example_tensors, parse_inputs

    specs = importlib.import_module("cache_writes").INPUTS["CachedAttention"]
    torch.manual_seed(0)
    model = build_model(model_class("cache_writes", "CachedAttention"), device="cpu",
                        is_user_file=is_user_file).model.eval()
    plain = fx.symbolic_trace(copy.deepcopy(model)).graph
    writes = [n for n in plain.nodes if n.target == "__setitem__"]
    assert len(writes) == 2 and all(n.op == "call_method" for n in writes)
    report = analyze(model, is_user_file=is_user_file, inputs=example_tensors(parse_inputs(specs)))
    assert _errors(report) == [] and report.status == "traced", describe(report.findings)
    ours = [n for n in report.collection.graph_for("").nodes if n.target == "__setitem__"]
    assert [(n.op, n.args[0].op, n.args[0].target) for n in ours] == [
        (n.op, n.args[0].op, n.args[0].target) for n in writes]
    x = torch.randn(1, 3, 8)
    input_pos = torch.tensor([2, 5, 7])
    eager, traced = copy.deepcopy(model), copy.deepcopy(model)
    gm = GraphModule(traced, report.collection.graph_for(""))
    with torch.no_grad():
        torch.testing.assert_close(gm(x, input_pos), eager(x, input_pos))
    torch.testing.assert_close(traced.kv_cache.k_cache, eager.kv_cache.k_cache)
    assert traced.kv_cache.k_cache[:, :, input_pos].abs().sum() > 0


def test_a_module_without_forward_is_an_error_at_its_class() -> None:
    """Plain fx raises NotImplementedError (its message from the installed torch is kept); the
    target is failed with an error at the class, and nothing about the modules it holds."""
    for name, tag in (("StateHolder", "FXS107 holder"), ("LayerStack", "FXS107 stack")):
        built, report = run(model_class("no_forward", name))
        with pytest.raises(NotImplementedError) as plain:
            fx.symbolic_trace(built.model)
        (finding,) = report.findings
        assert finding.code == "FXS107" and report.status == "failed"
        assert_located(finding.location, "no_forward.py", tag, name)
        assert "has no `forward`" in finding.message and str(plain.value) in finding.message
        assert "factory" in finding.hint
    # Inside a model that fails, the holder is looked through (nothing calls it): no finding.
    _, report = run(model_class("no_forward", "FailsAroundStateHolder"))
    assert [f.code for f in report.findings] == ["FXS101"]
    assert statuses(report)["state.proj"] == "leaf"


def test_a_failure_without_a_model_frame_still_has_a_finding() -> None:
    """A forward compiled from generated source fails with no model line on the stack: the
    target is not left failed without a word; the error is at its class."""
    built, report = run(model_class("generated_forward", "GeneratedForward"))
    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(built.model)
    (finding,) = report.findings
    assert report.status == "failed" and finding.code == "FXS107"
    assert_located(finding.location, "generated_forward.py", "FXS107 generated", "GeneratedForward")
    assert "no line of model code" in finding.message and CODES["FXS101"].title in finding.message


# ---------------------------------------------------------------------- guarded raises
def test_the_models_own_raise_after_a_traced_condition_is_no_finding() -> None:
    """Plain fx stops at the `if`; the `raise` behind it is not reported, and the forward is
    explored on past it (the other branch of the last condition): a later problem is found."""
    _, report = run(model_class("guarded_raise", "ShapeCheck"))
    assert [f.code for f in report.findings] == ["FXS101", "FXS101"], describe(report.findings)
    _, report = run(model_class("guarded_raise", "ValueCheckThenLength"))
    assert [f.code for f in report.findings] == ["FXS101", "FXS103"], describe(report.findings)
    _, report = run(model_class("guarded_raise", "CheckInHelper"))
    assert [f.code for f in report.findings] == ["FXS101"], describe(report.findings)
    assert not any("ValueError" in f.message or "RuntimeError" in f.message for f in report.findings)


# ---------------------------------------------------------------------- hints that work
def test_wrap_functions_under_a_decorated_forward_explains_why_and_what_works(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """fx replaces a wrapped function in the module globals of each forward it traces; a forward
    decorated by a wrapper from another module (`@torch.autocast`) has that module's globals. The
    hint says so, and both fixes it gives work."""
    module = importlib.import_module("einops_calls")
    wrap = module.einops_functions()
    (tmp_path / "autocast_parent.py").write_text(textwrap.dedent("""
        from torch import nn

        from einops_calls import AutocastHeads


        class Parent(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = AutocastHeads()
                self.proj = nn.Linear(8, 8)

            def forward(self, x):
                return self.heads(self.proj(x)) * 2
    """))
    (tmp_path / "autocast_wrapped.py").write_text(textwrap.dedent("""
        import torch
        from einops import rearrange
        from torch import nn

        torch.fx.wrap("rearrange")


        class Heads(nn.Module):
            @torch.autocast("cpu", enabled=False)
            def forward(self, x):
                return rearrange(x, "b n (h d) -> b h n d", h=2)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    parent = importlib.import_module("autocast_parent").Parent
    for cls, leaf in ((module.AutocastHeads, False), (parent, True)):
        with pytest.raises(RuntimeError, match="einops"):  # plain fx, same autowrap functions, fails too
            fx.Tracer(autowrap_functions=wrap).trace(build_model(cls).model)
        built = build_model(cls, is_user_file=is_user_file)
        report = analyze(built.model, is_user_file=is_user_file, wrap_functions=wrap)
        (finding,) = _errors(report)
        assert_located(finding.anchor, "einops_calls.py", "ANCHOR autocast",
                       'rearrange(x, "b n (h d) -> b h n d", h=2)')
        hint = finding.hint
        assert 'wrap-functions = ["einops:rearrange"]' not in hint  # it is there already
        assert "`AutocastHeads.forward` is decorated" in hint and "torch.amp.autocast_mode" in hint
        assert 'torch.fx.wrap("rearrange")' in hint and "`einops_calls.py`" in hint
        # The layer as a leaf is a fix inside a model, never for the target itself.
        assert ('leaf-modules = ["einops_calls.AutocastHeads"]' in hint) == leaf
    # Following the first fix: the layer is one node, nothing fails.
    built = build_model(parent, is_user_file=is_user_file)
    fixed = analyze(built.model, is_user_file=is_user_file, wrap_functions=wrap, leaf_types=(module.AutocastHeads,))
    assert _errors(fixed) == [] and fixed.status == "traced"
    # Following the second: torch.fx.wrap at module level of the calling file.
    heads = importlib.import_module("autocast_wrapped").Heads
    wrapped = analyze(build_model(heads).model)
    assert wrapped.findings == [] and wrapped.status == "traced", describe(wrapped.findings)
    assert [n.target for n in wrapped.collection.graph_for("").nodes if n.op == "call_function"] == [einops.rearrange]


def test_a_loop_over_a_traced_size_suggests_example_inputs_and_they_work() -> None:
    from fxscope.trace.inputs import example_tensors, parse_inputs

    _, report = run(model_class("sequential_scan", "ScanOverSequence"))
    (finding,) = report.findings
    assert finding.code == "FXS104" and "torch.arange(n)` does not help" in finding.hint
    assert "inputs = {" in finding.hint and "torch.fx.wrap" in finding.hint
    specs = importlib.import_module("sequential_scan").INPUTS
    model = build_model(model_class("sequential_scan", "ScanOverSequence"), exact_meta=True).model
    shaped = analyze(model, is_user_file=is_user_file,
                     inputs=example_tensors(parse_inputs(specs["ScanOverSequence"])))
    assert [f.code for f in shaped.findings] == ["FXS501"] and shaped.status == "traced"
    assert shaped.findings[0].message.startswith("specialised on x.shape[1] == 5")
    # The other fix: the loop in a torch.fx.wrap function.
    _, wrapped = run(model_class("sequential_scan", "WrappedScan"))
    assert wrapped.findings == [] and wrapped.status == "traced"


def test_fxs501_only_where_the_graph_depends_on_the_answer_named_in_source_terms() -> None:
    from fxscope.trace.inputs import example_tensors, parse_inputs

    specs = importlib.import_module("shape_answers").INPUTS

    def shaped(name: str) -> Any:
        model = build_model(model_class("shape_answers", name), exact_meta=True).model
        return analyze(model, is_user_file=is_user_file, inputs=example_tensors(parse_inputs(specs[name])))

    # A slice bound recorded as a node: the graph is shape-generic.
    report = shaped("SliceByInputSize")
    assert report.findings == [], describe(report.findings)
    getitem = [n for n in report.collection.graph_for("").nodes if n.target is __import__("operator").getitem]
    assert any(isinstance(s, slice) and isinstance(s.stop, fx.Node)
               for n in getitem if isinstance(n.args[1], tuple) for s in n.args[1])
    # A buffer's length is the same for every input: nothing specialised.
    assert shaped("BufferLength").findings == []
    # A dtype reached through other nodes is named as the source writes it, not by node names.
    report = shaped("FinfoOfComputedValue")
    (finding,) = report.findings
    assert finding.code == "FXS501"
    assert finding.message.startswith(f"specialised on h.dtype == {torch.get_default_dtype()}")
    names = {n.name for n in report.collection.graph_for("").nodes}
    assert not any(word.strip("(),.`") in names - {"x", "h"} for word in finding.message.split())


def test_unused_submodule_of_an_installed_library_is_not_yours_to_remove(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fakelib_attention.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn


        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(8, 24)
                self.attn_drop = nn.Dropout(0.1)
                self.spare_proj = nn.Linear(8, 8)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, -1)
                return nn.functional.scaled_dot_product_attention(q, k, v)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    attention = importlib.import_module("fakelib_attention").Attention
    built = build_model(attention, is_user_file=is_user_file)
    report = analyze(built.model, sites=built.sites, is_user_file=is_user_file)
    hints = {f.scopes[0][0]: f.hint for f in report.findings if f.code == "FXS301"}
    assert sorted(hints) == ["attn_drop", "spare_proj"]
    for hint in hints.values():
        assert "installed library `fakelib_attention`" in hint and "DistributedDataParallel" in hint
        assert "Remove it" not in hint and "nothing to remove" in hint
    assert "`attn_drop` has none" in hints["attn_drop"]
    params = sum(p.numel() for p in built.model.spare_proj.parameters())
    assert f"`spare_proj` has {params:,} parameter values" in hints["spare_proj"]


def test_unused_submodule_of_a_transformers_model_gets_the_library_hint() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("transformers")
    from hf_models import small_hf_models

    built = build_model(small_hf_models()["t5"])
    report = analyze(built.model, sites=built.sites)
    unused = [f for f in report.findings if f.code == "FXS301"]
    assert unused, describe(report.findings)
    for finding in unused:
        assert _site_packages(finding.location.file)
        assert "installed library `transformers`" in finding.hint and "Remove it" not in finding.hint


def test_a_head_called_only_without_the_optional_input_advises_concrete_args() -> None:
    built, report = run(model_class("unused", "HeadWhenNoMask"))
    (finding,) = report.findings
    assert finding.code == "FXS301" and "concrete-args = { mask = None }" in finding.hint
    assert 'factory = "unused:HeadWhenNoMask"' in finding.hint
    # Following it: the head is called, nothing is unused, and plain fx agrees on the graph.
    fixed = analyze(built.model, {"mask": None}, sites=built.sites, is_user_file=is_user_file)
    assert fixed.findings == [] and fixed.status == "traced"
    check_against_plain_fx(("unused", "HeadWhenNoMask"), model_class("unused", "HeadWhenNoMask"), {"mask": None})
    # Other unused submodules keep the code's help (remove it or call it).
    _, report = run(model_class("unused", "UnusedSubmodule"))
    assert report.findings[0].hint is None
