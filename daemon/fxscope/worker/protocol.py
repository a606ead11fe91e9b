"""Framing of JSON messages between the worker pool and its zygote.

Every message is a JSON object encoded as UTF-8 and preceded by its length as a 4-byte
big-endian unsigned integer. The channel is a pair of dedicated pipes, never stdin/stdout,
so whatever user code or torch prints cannot corrupt it.

A ``done`` reply may carry ``"attached": N``: the next frame is then the job's result file as it
was written (N bytes, unparsed), which the reader parses and checks with
:func:`resolve_attached`; its ``result`` is the fault that stands when those bytes are no result.

Example::

    >>> frame = encode({"op": "ready"})
    >>> FrameDecoder().feed(frame)
    [{'op': 'ready'}]
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping

from fxscope.model.fault import CHILD_FAULTS, Fault

__all__ = [
    "FrameDecoder",
    "ProtocolError",
    "encode",
    "encode_attached",
    "encode_raw",
    "grow_pipe",
    "parse_child_result",
    "read_frame",
    "read_message",
    "resolve_attached",
    "write_all",
]

_HEADER = struct.Struct(">I")
MAX_FRAME = 0xFFFFFFFF


class ProtocolError(Exception):
    """A frame could not be decoded."""


def encode(message: Mapping[str, object]) -> bytes:
    """Return ``message`` as one frame (length prefix + JSON)."""
    return encode_raw(json.dumps(message, separators=(",", ":")).encode("utf-8"))


def encode_raw(payload: bytes) -> bytes:
    """Return an already JSON-encoded object ``payload`` as one frame."""
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"message too large ({len(payload)} bytes)")
    return _HEADER.pack(len(payload)) + payload


def encode_attached(message: Mapping[str, object], payload: bytes) -> bytes:
    """``message`` with ``"attached"``, followed by ``payload`` as a frame of its own."""
    return encode({**message, "attached": len(payload)}) + encode_raw(payload)


class FrameDecoder:
    """Incremental decoder: feed it bytes as they arrive, get complete messages back."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, object]]:
        """Append ``data`` and return every message now complete (possibly none)."""
        self._buf += data
        out: list[dict[str, object]] = []
        buf = self._buf
        pos = 0
        while len(buf) - pos >= _HEADER.size:
            (size,) = _HEADER.unpack_from(buf, pos)
            end = pos + _HEADER.size + size
            if len(buf) < end:
                break
            out.append(_decode(bytes(buf[pos + _HEADER.size : end])))
            pos = end
        if pos:
            del buf[:pos]
        return out

    @property
    def pending(self) -> int:
        """Number of buffered bytes not yet forming a complete message."""
        return len(self._buf)


def _decode(payload: bytes) -> dict[str, object]:
    try:
        message = json.loads(payload)
    except ValueError as exc:
        raise ProtocolError(f"invalid JSON frame: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def parse_child_result(raw: bytes) -> tuple[dict[str, object] | None, str | None]:
    """The result a job's process wrote as ``raw`` (its result file), checked; ``(None, why)``
    when it is no result (``why`` is ``None`` when it is empty). A fault it wrote must be one
    :meth:`Fault.from_json` reads, of a kind a job may report.

    >>> parse_child_result(b'[1]')
    (None, 'it wrote a malformed result (a JSON list, not an object)')
    >>> parse_child_result(b'{"fault": "cancelled"}')
    (None, "it wrote a malformed result (fault 'cancelled' cannot come from a job)")
    """
    if not raw:
        return None, None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "it wrote a result that is not valid JSON"
    if not isinstance(value, dict):
        return None, f"it wrote a malformed result (a JSON {type(value).__name__}, not an object)"
    if "fault" in value:
        try:
            kind = Fault.from_json(value).kind
        except ValueError as exc:
            return None, f"it wrote a malformed result ({exc})"
        if kind not in CHILD_FAULTS:
            return None, f"it wrote a malformed result (fault {kind!r} cannot come from a job)"
    return value, None


def resolve_attached(message: dict[str, object], payload: bytes) -> None:
    """Set the ``result`` of a ``done`` reply from its attached ``payload``: the job's own result
    with the ``output`` of the reply's fallback fault, or, when ``payload`` is no result, that
    fault with the reason appended to its message."""
    fallback = message.get("result")
    if not isinstance(fallback, dict):
        return  # malformed: Done.from_json rejects it
    result, problem = parse_child_result(payload)
    if result is not None:
        result["output"] = fallback.get("output", "")
        message["result"] = result
    else:
        fallback["message"] = f"{fallback.get('message', '')}{problem or 'it wrote no result'}"


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the blocking file descriptor ``fd``."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes | None:
    """Read one frame's payload from the blocking file descriptor ``fd``; ``None`` at end of
    file."""
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    return _read_exact(fd, size) if size else b""


def read_message(fd: int) -> dict[str, object] | None:
    """Read one message from the blocking file descriptor ``fd``, with its attached result
    resolved (see :func:`resolve_attached`); ``None`` at end of file."""
    payload = read_frame(fd)
    if payload is None:
        return None
    message = _decode(payload)
    attached = message.pop("attached", None)
    if attached is not None:
        raw = read_frame(fd)
        if raw is None:
            return None
        if len(raw) != attached:
            raise ProtocolError(f"attached {len(raw)} bytes, announced {attached}")
        resolve_attached(message, raw)
    return message


def grow_pipe(fd: int, size: int = 1 << 20) -> int | None:
    """Enlarge a pipe's buffer where supported (Linux), so big messages need fewer wake-ups.
    Returns the buffer's size now, or ``None`` where it cannot be known."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (AttributeError, OSError):
        pass
    try:
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (AttributeError, OSError):
        return None
