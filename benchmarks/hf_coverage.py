"""Shape-aware tracing on transformers models built from small configs (no hub, no weights).

For each model: trace without example inputs (plain RobustTracer) and with the inputs derived by
``fxscope.trace.inputs.default_inputs`` (and its concrete ``use_cache=False``); print the fraction of custom (non-``torch.nn``) modules
whose forward was traced, whether the whole model is one complete graph, the finding counts, and
(with ``--check``) whether the complete graph's output on real inputs equals eager.

Usage: python benchmarks/hf_coverage.py [--check] [model ...]
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import time
import warnings
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fxscope.trace.analysis import TraceReport, analyze  # noqa: E402
from fxscope.trace.inputs import InputSpec, default_concrete_args, default_inputs, example_tensors  # noqa: E402
from hf_models import small_hf_models  # noqa: E402

warnings.filterwarnings("ignore")


def configs() -> dict[str, Callable[[], nn.Module]]:
    """Model builders from small configs (the same models the tests trace)."""
    return small_hf_models()


def custom_coverage(report: TraceReport) -> tuple[int, int]:
    """(traced, total) over modules whose class is not torch's own."""
    custom = [m for m in report.modules if not m["type"].startswith("torch.")]
    return sum(m["status"] == "traced" for m in custom), len(custom)


def real_inputs(model: nn.Module, specs: dict[str, InputSpec]) -> dict[str, torch.Tensor]:
    """Real tensors of ``specs``: token ids within the vocabulary, random floats otherwise."""
    gen = torch.Generator().manual_seed(0)
    vocab = getattr(getattr(model, "config", None), "vocab_size", 2) or 2
    out = {}
    for name, spec in specs.items():
        t = spec.tensor("cpu")
        if t.is_floating_point():
            out[name] = torch.randn(t.shape, generator=gen, dtype=t.dtype)
        else:
            out[name] = torch.randint(1, vocab, t.shape, generator=gen, dtype=t.dtype)
    return out


def tensors_of(value: Any) -> list[torch.Tensor]:
    """Tensors of a (nested) model output in order; ``None`` entries skipped."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    if hasattr(value, "to_tuple"):
        return tensors_of(value.to_tuple())
    return []


def graph_matches_eager(model: nn.Module, report: TraceReport, specs: dict[str, InputSpec]) -> bool:
    """Whether the root graph, run on real inputs of ``specs``, equals the eager model."""
    graph = report.collection.graph_for("")
    if graph is None:
        return False
    graph = copy.deepcopy(graph)
    # fx's pytree codegen writes invalid code for placeholders with defaults: call by name.
    graph.set_codegen(torch.fx.graph.CodeGen())
    gm = torch.fx.GraphModule(model, graph)
    inputs = real_inputs(model, specs)
    values = {**default_concrete_args(model), **inputs}
    by_name = {}
    for node in graph.nodes:  # concrete args' placeholders are renamed (`use_cache_1`)
        name = node.target if node.target in values else re.sub(r"_\d+$", "", str(node.target))
        if node.op == "placeholder" and name in values:
            by_name[node.name] = values[name]
    with torch.no_grad():
        got, want = tensors_of(gm(**by_name)), tensors_of(model(**values))
    return len(got) == len(want) > 0 and all(
        g.shape == w.shape and torch.allclose(g, w, atol=1e-5, rtol=1e-4) for g, w in zip(got, want))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="subset of models (default: all)")
    parser.add_argument("--check", action="store_true", help="compare complete graphs with eager on CPU")
    args = parser.parse_args()
    torch.set_num_threads(1)
    builders = configs()
    names = args.models or list(builders)
    totals = {"before": [0, 0, 0], "after": [0, 0, 0]}  # traced, custom, complete
    print(f"{'model':<11} {'mode':<7} {'custom traced':>14} {'complete':>9} {'FXS10x':>7} {'FXS501':>7} "
          f"{'seconds':>8}{'  eager-equal' if args.check else ''}")
    for name in names:
        torch.manual_seed(0)
        model = builders[name]().eval()
        specs = default_inputs(model)
        for mode in ("before", "after"):
            after = mode == "after" and specs is not None
            inputs = example_tensors(specs) if after else None
            start = time.perf_counter()
            report = analyze(model, default_concrete_args(model) if after else None, inputs=inputs)
            seconds = time.perf_counter() - start
            traced, total = custom_coverage(report)
            complete = report.status == "traced"
            errors = sum(f.code.startswith("FXS1") for f in report.findings)
            special = sum(f.code == "FXS501" for f in report.findings)
            t = totals[mode]
            t[0] += traced
            t[1] += total
            t[2] += complete
            line = (f"{name:<11} {mode:<7} {traced:>6}/{total:<3} {traced / max(total, 1):>4.2f} "
                    f"{'yes' if complete else 'no':>9} {errors:>7} {special:>7} {seconds:>8.2f}")
            if args.check and mode == "after" and complete and specs:
                line += f"  {graph_matches_eager(model, report, specs)}"
            print(line)
    print()
    for mode in ("before", "after"):
        traced, total, complete = totals[mode]
        print(f"{mode:<7} custom-module coverage {traced}/{total} = {traced / max(total, 1):.2f}; "
              f"complete whole-model graphs {complete}/{len(names)}")


if __name__ == "__main__":
    main()
