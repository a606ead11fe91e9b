"""Installed libraries whose fxscope configuration is known: what to put in ``[tool.fxscope]`` so
their layers and functions are each one graph node instead of being traced into.

Each entry is the configuration the README documents for that library, checked by tracing
every layer and function it names (tests/models/einops_calls.py). The editor offers it as one
workspace-level code action on a failure inside the library, and ``fxscope init`` writes it when
the workspace imports the library.

einx is not here: its functions are called as attributes (``einx.rearrange(...)``), which
torch.fx's ``autowrap_functions`` (``wrap-functions``) never replaces, so no configuration
of these two keys keeps them opaque.

>>> settings_for("einops").leaf_modules[0]
'einops.layers.torch.Rearrange'
>>> settings_for("numpy") is None
True
>>> missing_entries(KNOWN["einops"], {"wrap-functions": ["einops:rearrange"]})[0]
('leaf-modules', 'einops.layers.torch.Rearrange')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN", "LibrarySettings", "missing_entries", "settings_for"]


@dataclass(frozen=True)
class LibrarySettings:
    """The ``[tool.fxscope]`` entries that keep one installed library opaque to the tracer."""

    name: str
    leaf_modules: tuple[str, ...] = ()
    wrap_functions: tuple[str, ...] = ()

    def entries(self) -> list[tuple[str, str]]:
        """(key, value) for every entry, ``leaf-modules`` first."""
        return ([("leaf-modules", v) for v in self.leaf_modules]
                + [("wrap-functions", v) for v in self.wrap_functions])


KNOWN: Mapping[str, LibrarySettings] = {
    "einops": LibrarySettings(
        "einops",
        leaf_modules=("einops.layers.torch.Rearrange", "einops.layers.torch.Reduce"),
        wrap_functions=("einops:rearrange", "einops:repeat", "einops:reduce", "einops:einsum", "einops:pack",
                        "einops:unpack"),
    ),
}


def settings_for(library: str | None) -> LibrarySettings | None:
    """The known settings of the top-level package ``library`` (None when there are none)."""
    return KNOWN.get(library) if library else None


def missing_entries(settings: LibrarySettings, config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The entries of ``settings`` that ``config`` (the ``[tool.fxscope]`` table, or what it
    holds) does not list yet."""
    out = []
    for key, value in settings.entries():
        have: Sequence[Any] = config.get(key) or ()
        if value not in have:
            out.append((key, value))
    return out
