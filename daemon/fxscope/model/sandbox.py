"""Whether the OS sandbox contained the user code fxscope ran, as every front end reports it.

>>> SandboxStatus(True, "landlock", "Landlock ABI 7").to_json()
{'on': True, 'kind': 'landlock', 'detail': 'Landlock ABI 7'}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["SANDBOX_KINDS", "SandboxStatus"]

#: ``landlock``: writes outside the job's temporary directory and TCP connect/bind are refused;
#: ``user-namespace``: no network (writes are not contained); ``none``: not sandboxed.
SANDBOX_KINDS = ("landlock", "user-namespace", "none")


@dataclass(frozen=True)
class SandboxStatus:
    """``on``: user code ran sandboxed; ``kind``: one of :data:`SANDBOX_KINDS`; ``detail``: one
    sentence saying what is contained and what is not (or why it is off)."""

    on: bool
    kind: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"on": self.on, "kind": self.kind, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SandboxStatus | None:
        """The status in ``data`` (a ``ready`` message's or a report's ``sandbox``), None when absent
        or malformed."""
        if not isinstance(data, Mapping) or data.get("kind") not in SANDBOX_KINDS:
            return None
        return cls(bool(data.get("on")), str(data["kind"]), str(data.get("detail") or ""))

    def phrase(self) -> str:
        """A few words for a summary line: ``sandbox on (Landlock)``, ``sandbox OFF (by request)``."""
        if self.kind == "landlock":
            return "sandbox on (Landlock)"
        if self.kind == "user-namespace":
            return "sandbox on (network only: user namespace; writes not contained)"
        return f"sandbox OFF ({self.detail})" if self.detail else "sandbox OFF"
