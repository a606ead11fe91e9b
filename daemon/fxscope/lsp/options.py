"""Typed server settings, from ``initializationOptions`` and ``workspace/configuration``.

Clients send either the settings object itself or ``{"fxscope": {...}}``; keys are camelCase
(``traceOn``) or kebab/snake case (``trace-on``, ``trace_on``). Unknown keys and values of the
wrong type are reported through ``warn`` and ignored, never fatal. Settings given by the client
are merged over ``[tool.fxscope]`` in the workspace's pyproject.toml by the Workspace itself.

>>> opts = parse_options({"fxscope": {"traceOn": "save", "debounce": 150, "bogus": 1}}, print)
fxscope: unknown setting 'bogus' ignored
>>> opts.trace_on, opts.debounce_ms, opts.enable
('save', 150, True)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

__all__ = ["ServerOptions", "parse_options", "SECTION"]

#: The ``workspace/configuration`` section the server asks for.
SECTION = "fxscope"

TraceOn = Literal["type", "save"]


@dataclass(frozen=True)
class ServerOptions:
    """Everything a client can set. ``None`` means "the workspace's own default"."""

    enable: bool = True
    #: Debounce between the last edit and the re-trace, in milliseconds.
    debounce_ms: int | None = None
    #: Re-trace while typing (from the unsaved buffer) or only on save.
    trace_on: TraceOn = "type"
    workers: int | None = None
    #: Seconds per target.
    timeout: float | None = None
    #: Watch the workspace for changes made outside the editor (watchdog).
    watch: bool = True
    code_lens: bool = True
    #: The class summary as an inlay hint at each class line (for editors without code lens).
    inlay_hints: bool = False
    #: Lowest level of the server's own log sent to the client: error, warning, info, debug.
    log_level: str = "info"
    #: Keys the client sent, so a later ``workspace/configuration`` answer overrides only those.
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    def merged(self, other: "ServerOptions") -> "ServerOptions":
        """``self`` with every setting ``other`` was given replaced by ``other``'s value."""
        changes = {name: getattr(other, name) for name in other.given}
        return dataclasses.replace(self, **changes, given=self.given | other.given)


_LEVELS = ("error", "warning", "info", "debug")
_ALIASES = {"debounce": "debounce_ms", "inlay_hint": "inlay_hints", "codelens": "code_lens",
            "enabled": "enable", "log": "log_level"}


def _snake(key: str) -> str:
    key = key.replace("-", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _check(name: str, value: Any) -> Any:
    """The value converted to the field's type, or raise ValueError."""
    if name in ("enable", "watch", "code_lens", "inlay_hints"):
        if isinstance(value, bool):
            return value
    elif name == "debounce_ms":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 60_000:
            return int(value)
    elif name == "trace_on":
        if value in ("type", "save"):
            return value
    elif name == "workers":
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 256:
            return value
    elif name == "timeout":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    elif name == "log_level":
        if isinstance(value, str) and value.lower() in _LEVELS:
            return value.lower()
    raise ValueError(f"invalid value {value!r} for setting {name!r}")


_FIELDS = {f.name for f in dataclasses.fields(ServerOptions)} - {"given"}


def parse_options(raw: Any, warn: Callable[[str], None] = lambda m: None) -> ServerOptions:
    """Settings from a client's JSON value (``None`` and non-objects give the defaults)."""
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if not isinstance(raw, dict):
        if raw is not None:
            warn(f"fxscope: settings must be an object, got {type(raw).__name__}; using defaults")
        return ServerOptions()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = _snake(str(key))
        name = _ALIASES.get(name, name)
        if name not in _FIELDS:
            warn(f"fxscope: unknown setting {key!r} ignored")
            continue
        if value is None:
            continue
        try:
            values[name] = _check(name, value)
        except ValueError as e:
            warn(f"fxscope: {e}; ignored")
    return ServerOptions(**values, given=frozenset(values))
