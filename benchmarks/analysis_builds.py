"""What giving every analysis a model of its own costs: one more CPU build per job that runs both
torch.compile and torch.export (the fx analysis always had its own, on the meta device).

For the small transformers models of tests/hf_models.py (``inputs = "auto"``) and two plain torch
models, prints the median wall time of :func:`fxscope.trace.pt2.build_real` (seeded build on the
CPU and its example inputs: the added cost per job) next to the export analysis's own time on that
model, in a warm process (torch, torch.export and transformers imported, as in the worker's zygote).

    .venv/bin/python benchmarks/analysis_builds.py [--repeat 5] [--models gpt2,bert]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "daemon"))
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _plain_models() -> dict[str, tuple[Callable[[], Any], Any]]:
    from torch import nn

    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 4))

    def encoder() -> nn.Module:
        layer = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=256, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)

    return {"mlp": (mlp, {"x": [2, 4]}), "encoder-6": (encoder, {"src": [2, 8, 4]})}


def _ms(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", default="", help="comma-separated names of tests/hf_models.py")
    args = parser.parse_args()

    import torch

    from fxscope.trace.pt2 import Pt2Options, build_real, run_export
    from fxscope.trace.pt2 import warm_up as warm_pt2

    torch.set_num_threads(1)  # as in a job
    warm_pt2()
    models = _plain_models()
    try:
        from hf_models import small_hf_models

        hf = small_hf_models()
        for name in [n for n in args.models.split(",") if n] or list(hf)[:3]:
            models[name] = (hf[name], "auto")
    except ImportError as e:
        print(f"(transformers models skipped: {e})")
    print(f"{'model':<14} {'extra build ms':>15} {'export ms':>10} {'build/export':>13}")
    for name, (factory, inputs) in models.items():
        build_ms = _ms(lambda: build_real(factory, inputs, {}), args.repeat)
        real = build_real(factory, inputs, {})
        export_ms = _ms(lambda: run_export(real, Pt2Options(("export",))), 1)
        print(f"{name:<14} {build_ms:>15.1f} {export_ms:>10.1f} {build_ms / max(export_ms, 1e-9):>12.1%}")


if __name__ == "__main__":
    main()
