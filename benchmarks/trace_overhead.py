"""Tracing overhead of RobustTracer over torch.fx.Tracer, and a 7B-parameter build + analyze.

Prints, for models that trace cleanly, the median time of ``RobustTracer().trace(model)`` and
of ``torch.fx.Tracer().trace(model)`` (the same work: a Graph, no GraphModule) and their ratio
(budget: at most 1.3x); then the time to build a Llama-7B-sized transformers model on the meta
device and analyze it (every trace, finding and hazard).

    PYTHONPATH=daemon python benchmarks/trace_overhead.py [--repeats N] [--no-llama]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))

from fxscope.trace.analysis import analyze  # noqa: E402
from fxscope.trace.build import build_model  # noqa: E402
from fxscope.trace.tracer import RobustTracer  # noqa: E402

BUDGET = 1.3


# ---------------------------------------------------------------------- models
class MLP(nn.Module):
    def __init__(self, depth: int = 192, width: int = 256) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()) for _ in range(depth)
        )
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


class BasicBlock(nn.Module):
    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        out = channels * stride
        self.conv1 = nn.Conv2d(channels, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.down = (
            nn.Sequential(nn.Conv2d(channels, out, 1, stride, bias=False), nn.BatchNorm2d(out))
            if stride != 1 else nn.Identity()
        )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.down(x))


class SmallCNN(nn.Module):
    def __init__(self, blocks_per_stage: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        blocks = []
        channels = 16
        for stage in range(4):
            for i in range(blocks_per_stage):
                stride = 2 if i == 0 and stage > 0 else 1
                blocks.append(BasicBlock(channels, stride))
                channels *= stride
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(channels, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean((2, 3)))


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TransformerStack(nn.Module):
    def __init__(self, depth: int = 24, dim: int = 128, heads: int = 4, vocab: int = 1000) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(512, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.size(1)]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


# ---------------------------------------------------------------------- timing
def median_times(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median time of each function; runs are interleaved so load drifts hit all alike."""
    for fn in fns:
        fn()  # warm-up: imports, caches
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def overhead(repeats: int) -> bool:
    print(f"Tracing overhead (median of {repeats}; budget {BUDGET:.2f}x)")
    print(f"{'model':<18}{'nodes':>7}{'fx.Tracer':>12}{'RobustTracer':>14}{'ratio':>8}")
    ok = True
    for name, factory in [("MLP", MLP), ("SmallCNN", SmallCNN), ("TransformerStack", TransformerStack)]:
        with torch.device("meta"):
            model = factory()
        nodes = len(torch.fx.Tracer().trace(model).nodes)
        tracer = RobustTracer()
        graph = tracer.trace(model)
        assert len(graph.nodes) == nodes and not tracer.findings.items(), f"{name} must trace cleanly"
        base, robust = median_times(
            [lambda: torch.fx.Tracer().trace(model), lambda: RobustTracer().trace(model)], repeats)
        ratio = robust / base
        ok &= ratio <= BUDGET
        print(f"{name:<18}{nodes:>7}{base * 1e3:>10.1f}ms{robust * 1e3:>12.1f}ms{ratio:>7.2f}x"
              f"{'' if ratio <= BUDGET else '  OVER BUDGET'}")
    return ok


def llama_7b() -> None:
    try:
        from transformers import LlamaConfig, LlamaModel
    except ImportError:
        print("\nLlama-7B: transformers is not installed, skipped")
        return
    config = LlamaConfig(hidden_size=4096, num_hidden_layers=32, intermediate_size=11008, vocab_size=32000,
                         num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096)
    start = time.perf_counter()
    built = build_model(lambda: LlamaModel(config), device="meta")
    build_s = time.perf_counter() - start
    params = sum(p.numel() for p in built.model.parameters())
    print(f"\nLlama-7B config on {built.device} ({params / 1e9:.2f}B parameters, no weights allocated)")
    print(f"  build    {build_s:6.3f} s")
    for label, cargs in [
        ("analyze", built.concrete_args),
        # The usual concrete args of a decoder-only target: the root's forward is explored too.
        ("analyze, concrete args", {"inputs_embeds": None, "attention_mask": None, "position_ids": None,
                                    "past_key_values": None, "use_cache": False}),
    ]:
        start = time.perf_counter()
        report = analyze(built.model, cargs, sites=built.sites, extra_findings=built.findings)
        analyze_s = time.perf_counter() - start
        print(f"  {label + ':':<24} {analyze_s:6.3f} s, {len(report.collection.tracers)} traces, "
              f"{len(report.collection)} graphs, {report.nodes} nodes, {len(report.findings)} findings, "
              f"status {report.status}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--no-llama", action="store_true")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    ok = overhead(args.repeats)
    if not args.no_llama:
        llama_7b()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
