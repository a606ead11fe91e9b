#!/usr/bin/env python3
"""Draw the extension's icon (images/icon.png, 128x128): a small FX graph, four nodes and their
edges, on a dark rounded square; one node marked as the line that does not trace. Standard
library only (zlib + struct), supersampled for smooth edges, deterministic. Run from anywhere:
    python3 clients/vscode/scripts/make-icon.py
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

SIZE = 128
SS = 4  # samples per pixel per axis
OUT = Path(__file__).resolve().parent.parent / "images" / "icon.png"

BG = (30, 34, 46)
EDGE = (150, 160, 180)
NODE = (238, 76, 44)  # PyTorch's orange-red
FAIL = (250, 204, 21)


def rounded_rect(x: float, y: float, cx: float, cy: float, hw: float, hh: float, r: float) -> float:
    """Signed distance to a rounded rectangle centred at (cx, cy)."""
    qx, qy = abs(x - cx) - hw + r, abs(y - cy) - hh + r
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    return outside + min(max(qx, qy), 0.0) - r


def segment(x: float, y: float, ax: float, ay: float, bx: float, by: float) -> float:
    """Distance to the segment a-b."""
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - ax - t * dx, y - ay - t * dy)


NODES = [(64, 26), (36, 64), (92, 64), (64, 102)]
EDGES = [(0, 1), (0, 2), (1, 3), (2, 3)]


def color(x: float, y: float) -> tuple[float, float, float, float]:
    """RGBA at a sample point (x, y in icon pixels)."""
    if rounded_rect(x, y, 64, 64, 62, 62, 22) > 0:
        return (0, 0, 0, 0)
    rgb = BG
    if any(segment(x, y, *NODES[a], *NODES[b]) < 3.2 for a, b in EDGES):
        rgb = EDGE
    for i, (cx, cy) in enumerate(NODES):
        d = rounded_rect(x, y, cx, cy, 17, 10, 5)
        if d < 0:
            rgb = FAIL if i == 2 and d > -3.2 else NODE
    return (*rgb, 255)


def render() -> bytes:
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # filter: none
        for px in range(SIZE):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(SS):
                for sx in range(SS):
                    r, g, b, a = color(px + (sx + 0.5) / SS, py + (sy + 0.5) / SS)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            alpha = acc[3] / (SS * SS)
            rgb = [round(c / acc[3]) if acc[3] else 0 for c in acc[:3]]
            row += bytes([*rgb, round(alpha)])
        rows.append(bytes(row))
    return b"".join(rows)


def png(raw: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(png(render()))
    print(f"wrote {OUT}")
