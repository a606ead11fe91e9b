"""Whether the OS sandbox contained the user code fxscope ran, as every front end reports it.

>>> SandboxStatus(True, "landlock", "Landlock ABI 7").to_json()
{'on': True, 'kind': 'landlock', 'detail': 'Landlock ABI 7'}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Denial", "HOW_TO_ALLOW", "SANDBOX_KINDS", "SandboxStatus"]

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


HOW_TO_ALLOW = "to allow it, set `sandbox = false` in [tool.fxscope] or run `fxscope check --no-sandbox`"


@dataclass(frozen=True)
class Denial:
    """What the sandbox refused: ``action`` (``write``, ``connect``, ``bind``) of ``what`` (a path,
    or ``host:port``); for a connect or bind, ``how`` the network was cut.

    >>> Denial("connect", "10.0.0.1:80", "Landlock").message().split(";")[0]
    "fxscope's sandbox blocked a TCP connection to 10.0.0.1:80 (fxscope runs model code without network: Landlock)"
    """

    action: str
    what: str
    how: str = "Landlock"

    def message(self) -> str:
        """The finding's message."""
        if self.action == "write":
            where = "outside the job's temporary directory"
            return (f"fxscope's sandbox blocked writing `{self.what}` ({where}); plain Python would have written it "
                    f"(fxscope runs model code in a Landlock sandbox: no writes outside the job's temporary "
                    f"directory, no TCP connections); {HOW_TO_ALLOW}")
        verb = "a TCP connection to" if self.action == "connect" else "binding a TCP socket to"
        return (f"fxscope's sandbox blocked {verb} {self.what} (fxscope runs model code without network: "
                f"{self.how}); plain Python would have tried it; {HOW_TO_ALLOW}")
