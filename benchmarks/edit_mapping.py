"""What following edits costs the language server per keystroke, in process (no torch, no worker).

For a model file of N lines (check_scaling.py's model class, repeated) it types a line character
by character into an open document, as an editor's incremental didChange sends it, and times:
the document store's change (whether the buffer parses, the line edit kept), the conversion of
the content change to a line edit (``content_edits``), a line map from the version before the
burst to the current one after every keystroke of the burst (what a hover or a diagnostic push
computes), and a whole-text change of a client without incremental sync (a line diff and a parse
of the whole text). Prints the median and p99 per operation and size.

    .venv/bin/python benchmarks/edit_mapping.py [--sizes 500,2000,5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))

from lsprotocol import types  # noqa: E402

from fxscope.lsp.positions import PositionEncoder, content_edits  # noqa: E402
from fxscope.session.documents import DocumentStore  # noqa: E402

BLOCK = '''

class Block{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            y = y * 2
        return y
'''

TYPED = "        z = self.fc(torch.relu(y) + 1)"  # half of the keystrokes leave a call open


def _text(lines: int) -> str:
    out = ["import torch", "from torch import nn"]
    i = 0
    while len(out) < lines:
        out.extend(BLOCK.format(i=i).split("\n"))
        i += 1
    return "\n".join(out[:lines]) + "\n"


def _ms(samples: list[float]) -> str:
    samples = sorted(samples)
    return f"p50 {statistics.median(samples) * 1000:7.3f} ms   p99 {samples[int(len(samples) * 0.99) - 1] * 1000:7.3f} ms"


def run(lines: int) -> None:
    text = _text(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.py"
        path.write_text(text)
        key = str(path)
        docs = DocumentStore()
        docs.open(key, 1, text)
        encoder = PositionEncoder("utf-16")
        at = text.split("\n").index("        if y.sum() > 0:")
        version, change_s, convert_s, map_s = 1, [], [], []
        insert = types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=at, character=0), end=types.Position(line=at, character=0)),
            text="\n")
        current = text
        for n in range(len(TYPED) + 1):
            if n == 0:
                change = insert
            else:
                pos = types.Position(line=at, character=n - 1)
                change = types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos),
                                                                text=TYPED[n - 1])
            started = time.perf_counter()
            converted = content_edits(current, [change], encoder)
            convert_s.append(time.perf_counter() - started)
            assert converted is not None
            current, edits = converted
            version += 1
            started = time.perf_counter()
            docs.change(key, version, current, edits)
            change_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            lines_map = docs.view().line_map(key, 1)
            assert lines_map is not None and lines_map.line(at + 1) == at + 2
            map_s.append(time.perf_counter() - started)
        whole_s = []
        for n in range(20):
            rows = current.split("\n")
            edited = "\n".join(rows[:at] + [f"        # {n}"] + rows[at:])  # a line inserted, sent whole
            started = time.perf_counter()
            docs.change(key, version + n + 1, edited)
            whole_s.append(time.perf_counter() - started)
            current = edited
    print(f"{lines:5d} lines  change (parse + edit)   {_ms(change_s)}")
    print(f"{lines:5d} lines  content change -> edit  {_ms(convert_s)}")
    print(f"{lines:5d} lines  line map after a burst  {_ms(map_s)}")
    print(f"{lines:5d} lines  whole text (diff, parse) {_ms(whole_s)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="500,2000,5000")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        run(size)


if __name__ == "__main__":
    main()
