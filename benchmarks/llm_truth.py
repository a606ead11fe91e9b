"""fxscope against plain torch.fx on public LLM code: rotary tables indexed by positions, key/value
caches written at them, shape questions answered by example inputs.

Give it checkouts of the model repositories (nothing is downloaded here)::

    python benchmarks/llm_truth.py --gpt-fast PATH/gpt-fast --nanogpt PATH/nanoGPT

Each model file is checked as published and after the fixes a user makes by hand for plain fx
(listed below, applied as text replacements; a replacement that no longer applies is reported).
For each variant, in fresh processes: plain ``torch.fx`` traces the model built by a small-config
factory (and says at which model line it fails), and the real ``fxscope check`` CLI traces the same
factory without and with example inputs (``inputs``). It prints whether they agree: where plain fx
traces, fxscope reports no error in either mode; where it fails, fxscope reports that line, and
example inputs add no error that tracing without them does not report.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMON = Path(__file__).resolve().parent.parent / "daemon"


def all_sites(findings: list[dict]) -> list[dict]:
    """Every finding and every site of a grouped one (one library cause shown once per file)."""
    return [x for f in findings for x in (f, *all_sites(f.get("sites") or []))]


@dataclass
class Case:
    """One model file of a repository, a factory for it, and the fixes that make plain fx trace."""

    name: str
    repo_option: str
    source: str  # path inside the repository
    factory: str  # body of `build()` in the workspace's factories.py (the model module is `model`)
    inputs: str  # TOML inline table of example inputs
    fixes: list[tuple[str, str]] = field(default_factory=list)


CASES = [
    Case(
        "gpt-fast Transformer", "gpt_fast", "model.py",
        factory="""
            model = m.Transformer(m.ModelArgs(block_size=64, vocab_size=128, n_layer=2, n_head=4, dim=64,
                                              intermediate_size=128))
            model.setup_caches(max_batch_size=1, max_seq_length=16)
            return model
        """,
        inputs='{ idx = { shape = [1, 8], dtype = "int64" }, input_pos = { shape = [8], dtype = "int64" } }',
        fixes=[
            ("        assert input_pos.shape[0] == k_val.shape[2]\n",
             "        torch._assert(input_pos.shape[0] == k_val.shape[2], \"positions and values differ\")\n"),
            ("    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)\n",
             "    xshaped = x.float().reshape(x.shape[:-1] + (-1, 2))\n"),
        ],
    ),
    Case(
        "nanoGPT GPT", "nanogpt", "model.py",
        factory="""
            model = m.GPT(m.GPTConfig(block_size=32, vocab_size=128, n_layer=2, n_head=2, n_embd=32))
            return model, {"targets": None}  # inference: no loss
        """,
        inputs='{ idx = { shape = [2, 8], dtype = "int64" } }',
        fixes=[
            (('        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only '
              '{self.config.block_size}"\n'),
             '        torch._assert(t <= self.config.block_size, "sequence longer than the block size")\n'),
        ],
    ),
]

PLAIN = """
import json, os, sys
sys.path.insert(0, os.getcwd())
import torch, torch.fx as fx
from factories import build
with torch.device("meta"):
    built = build()
model, cargs = built if isinstance(built, tuple) else (built, None)
out = {"traces": True}
try:
    fx.Tracer().trace(model, cargs)
except Exception as e:
    line = None
    tb = e.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(os.getcwd() + os.sep):
            line = [os.path.relpath(tb.tb_frame.f_code.co_filename), tb.tb_lineno]
        tb = tb.tb_next
    out = {"traces": False, "error": f"{type(e).__name__}: {str(e)[:100]}", "line": line}
print(json.dumps(out))
"""


def _apply(text: str, fixes: list[tuple[str, str]]) -> tuple[str, list[str]]:
    missing = []
    for old, new in fixes:
        if old not in text:
            missing.append(old.strip()[:60])
        text = text.replace(old, new)
    return text, missing


def _workspace(root: Path, case: Case, text: str) -> None:
    (root / "model.py").write_text(text)
    (root / "factories.py").write_text("import model as m\n\n\ndef build():\n"
                                       + textwrap.indent(textwrap.dedent(case.factory).strip(), "    ") + "\n")
    targets = "[tool.fxscope]\nauto-targets = false\n"
    for name, inputs in (("plain", None), ("inputs", case.inputs)):
        targets += f'\n[tool.fxscope.targets.{name}]\nfactory = "factories:build"\n'
        if inputs:
            targets += f"inputs = {inputs}\n"
    (root / "pyproject.toml").write_text(targets)


def _plain_fx(root: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", PLAIN], cwd=root, capture_output=True,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0:
        return {"traces": False, "error": proc.stderr.strip().splitlines()[-1:], "line": None}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fxscope(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(DAEMON) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", "--format", "json", "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"fxscope check failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def _errors(report: dict, target: str) -> set[tuple[str, int]]:
    out = set()
    for f in all_sites(report["findings"]):  # a grouped library failure's other lines are its sites
        if f["severity"] == "error" and target in (f.get("targets") or [f["target"]]):
            out.add((f["file"], f["line"]))
            if f.get("anchor"):
                out.add((f["anchor"]["file"], f["anchor"]["line"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--gpt-fast", dest="gpt_fast", type=Path, help="checkout of pytorch-labs/gpt-fast")
    parser.add_argument("--nanogpt", type=Path, help="checkout of karpathy/nanoGPT")
    args = parser.parse_args()
    rows = []
    agree_all = True
    for case in CASES:
        repo = getattr(args, case.repo_option)
        if repo is None:
            continue
        published = (repo / case.source).read_text()
        for variant, fixes in (("published", []), ("fixed", case.fixes)):
            text, missing = _apply(published, fixes)
            if missing:
                print(f"{case.name} ({variant}): fixes no longer apply: {missing}")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                _workspace(root, case, text)
                start = time.perf_counter()
                plain = _plain_fx(root)
                plain_s = time.perf_counter() - start
                start = time.perf_counter()
                report = _fxscope(root)
                ours_s = time.perf_counter() - start
            statuses = {t["id"]: t["status"] for t in report["targets"]}
            without, with_inputs = _errors(report, "plain"), _errors(report, "inputs")
            if plain["traces"]:
                agree = not without and not with_inputs
                verdict = "traces"
            else:
                line = tuple(plain["line"]) if plain.get("line") else None
                agree = (line is None or line in without) and with_inputs <= without
                verdict = f"fails at {line[0]}:{line[1]}" if line else f"fails ({plain['error']})"
            agree_all &= agree
            rows.append((case.name, variant, verdict, statuses.get("plain"), len(without),
                         statuses.get("inputs"), len(with_inputs), "yes" if agree else "NO", plain_s, ours_s))
    if not rows:
        parser.error("give at least one checkout (--gpt-fast, --nanogpt)")
    print(f"{'model':22} {'variant':10} {'plain torch.fx':24} {'fxscope':16} {'with inputs':16} agree  "
          f"{'fx s':>6} {'fxscope s':>9}")
    for name, variant, verdict, st, n, st_in, n_in, agree, plain_s, ours_s in rows:
        print(f"{name:22} {variant:10} {verdict:24} {f'{st}, {n} errors':16} {f'{st_in}, {n_in} errors':16} "
              f"{agree:5}  {plain_s:6.2f} {ours_s:9.2f}")
    print("all agree" if agree_all else "DISAGREEMENT")
    return 0 if agree_all else 1


if __name__ == "__main__":
    sys.exit(main())
