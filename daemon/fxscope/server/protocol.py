"""The daemon's wire protocol: one JSON object per line each way (UTF-8).

::

    {"op": "check", "root": "/ws", "paths": ["/ws/models"], "graphs": false,
     "shard": [1, 4], "no_cache": false, "retry_faults": false,
     "client": {"version": "...", "python": "/usr/bin/python3"}}
        -> {"ok": true, "report": {...}, "warnings": ["..."]}
        -> {"ok": false, "error": "pyproject.toml:3: unknown key 'timout' ..."}
    {"op": "status"}  -> {"ok": true, "pid": 123, "root": "/ws", "uptime": 12.5,
                          "torch": "2.13.0", "checks": 4, "worker": "ready", ...}
    {"op": "stop"}    -> {"ok": true, "pid": 123}   (then the daemon exits)

``paths`` null (or empty) checks the whole workspace; ``shard`` is ``[i, n]`` (1-based) or null.

>>> parse_check({"op": "check", "shard": [2, 4]}).shard
(2, 4)
>>> parse_check({"op": "check", "shard": [5, 4]})
Traceback (most recent call last):
...
fxscope.server.protocol.ProtocolError: 'shard' must be [i, n] with 1 <= i <= n, or null
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fxscope.errors import CheckError

__all__ = ["CheckRequest", "DaemonError", "NotRunning", "ProtocolError", "decode", "encode", "parse_check"]


class DaemonError(CheckError):
    """The daemon could not be started, reached or asked: one line, exit 2 (a check that could not
    run, not a usage error)."""


class NotRunning(Exception):
    """Nothing listens on the socket (no file, or a stale one)."""


class ProtocolError(ValueError):
    """A malformed request or reply."""


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON."""
    return json.dumps(message).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """The JSON object of one line; :class:`ProtocolError` otherwise."""
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"malformed request: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("malformed request: expected a JSON object")
    return message


@dataclass(frozen=True)
class CheckRequest:
    """A validated ``check`` request."""

    root: str | None
    paths: tuple[str, ...] | None
    graphs: bool
    shard: tuple[int, int] | None
    no_cache: bool
    retry_faults: bool
    client: dict[str, Any]


def parse_check(message: dict[str, Any]) -> CheckRequest:
    """Validate a ``check`` request; :class:`ProtocolError` names the bad field."""
    paths = message.get("paths")
    if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)):
        raise ProtocolError("'paths' must be a list of strings or null")
    shard = message.get("shard")
    if shard is not None:
        if (not isinstance(shard, list) or len(shard) != 2 or not all(isinstance(x, int) for x in shard)
                or not (shard[1] >= 1 and 1 <= shard[0] <= shard[1])):
            raise ProtocolError("'shard' must be [i, n] with 1 <= i <= n, or null")
        shard = (shard[0], shard[1])
    client = message.get("client") or {}
    return CheckRequest(
        root=message.get("root"), paths=tuple(paths) if paths else None, graphs=bool(message.get("graphs")),
        shard=shard, no_cache=bool(message.get("no_cache")), retry_faults=bool(message.get("retry_faults")),
        client=client if isinstance(client, dict) else {},
    )
