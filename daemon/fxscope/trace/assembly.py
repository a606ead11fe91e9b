"""Finding assembly: where a problem the tracer met is, in the user's terms, and the one finding
that says so.

:class:`~fxscope.trace.tracer.RobustTracer` decides *when* something is a problem (a traced value
decides a branch, a forward raised) and what happens next (a branch is picked, the module becomes
a leaf, the forward is explored again). A :class:`FindingAssembler` decides *where* it is and
*what* is said: the innermost model frame is the location, the innermost workspace frame the
anchor when the location is in an installed library, the frames in between the call chain; code
in a library gets a hint (keep the layer a leaf, or wrap the function, and why a listed
``wrap-functions`` entry did not apply); one expression is one finding, whatever else it caused.

>>> import sys
>>> from fxscope.trace.frames import FrameClassifier
>>> assembler = FindingAssembler(FrameClassifier(lambda f: True))
>>> site = assembler.at_frames([sys._getframe()], Layer(None, False))
>>> assembler.add("FXS101", "a traced value decides an `if`", site, ("blocks.0", "pkg.Block"))
True
>>> assembler.add("FXS103", "`len()` of the same expression", site, ("blocks.1", "pkg.Block"))
False
>>> [(f.code, f.scopes) for f in assembler.findings.items()]
[('FXS101', [('blocks.0', 'pkg.Block')])]
"""

from __future__ import annotations

import inspect
import os
import sys
import types
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import torch.nn as nn

from fxscope.trace.classify import is_numpy
from fxscope.trace.findings import Finding, FindingSet
from fxscope.trace.frames import INTERNAL, LIBRARY, USER, FrameClassifier, SourceLocation, frame_location, \
    traceback_location

__all__ = ["FindingAssembler", "Layer", "Site", "type_name"]

#: How many calls a finding's chain keeps (the innermost ones).
MAX_RELATED = 8

#: class -> qualified name (memoised: every node gets its scope's type name).
TYPE_NAMES: dict[type, str] = {}


def type_name(obj: object) -> str:
    """Qualified class name of ``obj`` (or of the class itself).

    >>> type_name(nn.Linear), type_name(3)
    ('torch.nn.modules.linear.Linear', 'builtins.int')
    """
    cls = obj if isinstance(obj, type) else type(obj)
    name = TYPE_NAMES.get(cls)
    if name is None:
        name = TYPE_NAMES[cls] = f"{cls.__module__}.{cls.__qualname__}"
    return name


@dataclass(frozen=True)
class Layer:
    """The module whose forward was being explored when a problem was met (None at the top), and
    whether it is the target itself (the root of a whole-model trace, never a leaf to suggest)."""

    module: nn.Module | None
    is_target: bool


@dataclass(frozen=True)
class Site:
    """Where a problem is: ``location`` (the innermost model frame, ``frame``), ``anchor`` (the
    innermost workspace location when ``location`` is outside the workspace), ``related`` (the calls
    leading there, outermost first) and ``hint`` (the fix for code in an installed library)."""

    location: SourceLocation
    anchor: SourceLocation | None
    related: tuple[SourceLocation, ...]
    hint: str | None
    frame: types.FrameType | None = None


class FindingAssembler:
    """Locates problems and collects their findings (one per expression) for one tracer.

    Args:
        classifier: tells workspace, library and internal frames apart.
        default_anchor: the anchor when no workspace frame is on the stack (a library module traced
            on its own: where the workspace called it in the parent's trace).
        wrapped: the ids of the functions the tracer records as one node (fx's autowrap functions).
    """

    def __init__(self, classifier: FrameClassifier, *, default_anchor: SourceLocation | None = None,
                 wrapped: Callable[[], Collection[int]] = frozenset) -> None:
        self.classifier = classifier
        self.default_anchor = default_anchor
        self._wrapped = wrapped
        self._library_forwards: dict[Callable[..., object], bool] = {}
        self.findings = FindingSet()
        self._first_codes: dict[tuple[object, ...], str] = {}

    def reset(self) -> None:
        """Forget every finding (a new trace)."""
        self.findings = FindingSet()
        self._first_codes = {}

    # ------------------------------------------------------------------ locating
    def model_frames(self, start: types.FrameType | None, stop: types.FrameType | None) -> list[types.FrameType]:
        """The model's frames from ``start`` outwards, up to ``stop`` (torch and fxscope left out)."""
        return list(self.classifier.model_frames(start, stop))

    def at_frames(self, frames: Sequence[types.FrameType], layer: Layer, hint: str | None = None) -> Site:
        """The site of a problem met in ``frames[0]`` (the model's frames, innermost first, not
        empty); ``hint`` wins over a library hint."""
        kind = self.classifier.kind
        loc = frame_location(frames[0])
        anchor = None
        if kind(frames[0].f_code) != USER:
            kinds = [kind(f.f_code) for f in frames]
            u = kinds.index(USER) if USER in kinds else None
            anchor = frame_location(frames[u]) if u is not None else self.default_anchor
            hint = hint or self.library_hint(frames[u - 1] if u else None, layer)
        related = tuple(frame_location(f) for f in reversed(frames[1:MAX_RELATED + 1]))
        return Site(loc, anchor, related, hint, frames[0])

    def model_traceback(self, e: BaseException) -> tuple[list[types.TracebackType], bool]:
        """The entries of ``e``'s traceback in model code (outermost first), and whether numpy was
        on the way (a traced value reached non-torch code)."""
        entries = []
        numpy_involved = False
        tb = e.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if self.classifier.kind(code) != INTERNAL:
                entries.append(tb)
            elif is_numpy(code.co_filename):
                numpy_involved = True
            tb = tb.tb_next
        return entries, numpy_involved

    def at_traceback(self, entries: Sequence[types.TracebackType], outer: Sequence[types.FrameType],
                     layer: Layer) -> Site:
        """The site of an exception raised at ``entries[-1]`` (its model traceback, not empty),
        reached through the model frames ``outer`` (innermost first) of the forward being explored."""
        kind = self.classifier.kind
        chain = [frame_location(f) for f in reversed(outer)] + [traceback_location(t) for t in entries]
        frame = entries[-1].tb_frame
        anchor, hint = None, None
        if kind(frame.f_code) != USER:
            users = [i for i, t in enumerate(entries) if kind(t.tb_frame.f_code) == USER]
            library_frame = None
            if users:
                anchor = traceback_location(entries[users[-1]])
                library_frame = entries[users[-1] + 1].tb_frame
            else:
                user_frames = [f for f in outer if kind(f.f_code) == USER]
                anchor = frame_location(user_frames[0]) if user_frames else self.default_anchor
                library_frame = entries[0].tb_frame if user_frames else None
            hint = self.library_hint(library_frame, layer)
        return Site(chain[-1], anchor, tuple(chain[:-1][-MAX_RELATED:]), hint, frame)

    # ------------------------------------------------------------------ findings
    def add(self, code: str, message: str, site: Site, scope: tuple[str, str] | None = None) -> bool:
        """Add the finding ``code`` at ``site`` (in the module instance ``scope``); False when the
        expression already has a finding of another code (``list(x)`` asks for ``iter()`` and
        then ``len()``: the first problem explains the rest). Library code reached from two places
        of the workspace is two findings."""
        loc = site.location
        key = (loc.file, loc.line, loc.column, loc.end_line, loc.end_column, site.anchor)
        if self._first_codes.setdefault(key, code) != code:
            return False
        self.findings.add(Finding(code, message, loc, site.hint, site.anchor, list(site.related),
                                  [scope] if scope is not None else []))
        return True

    # ------------------------------------------------------------------ hints
    def is_library_forward(self, m: nn.Module) -> bool:
        """Whether ``m``'s forward is an installed library's code (not the workspace's, not torch's)."""
        forward = type(m).forward
        library = self._library_forwards.get(forward)
        if library is None:
            code = getattr(inspect.unwrap(forward), "__code__", None)
            library = code is not None and self.classifier.kind(code) == LIBRARY
            self._library_forwards[forward] = library
        return library

    def library_hint(self, library_frame: types.FrameType | None, layer: Layer) -> str | None:
        """The fix for a failure inside an installed library: the library layer being explored
        kept a leaf, or, for a library function called from workspace code (``library_frame``,
        the outermost library frame), that function wrapped. None when neither applies."""
        module = layer.module
        if module is not None and self.is_library_forward(module) and not layer.is_target:
            name = type_name(module)
            return (f"This code is in an installed library, inside the layer `{type(module).__name__}`: keep "
                    f"it one opaque `call_module` node with `leaf-modules = [\"{name}\"]` in [tool.fxscope] "
                    "(with plain torch.fx: a Tracer whose `is_leaf_module` returns True for it).")
        if library_frame is None:
            return None
        wrapped = _library_function(library_frame)
        if wrapped is None:
            return None
        module_name, name = wrapped
        if id(library_frame.f_globals.get(name)) in self._wrapped():
            return unapplied_wrap_hint(name, library_frame.f_back, layer)
        return (f"This code is in an installed library: `{name}` is traced into. Record each call of it as "
                f"one node with `wrap-functions = [\"{module_name}:{name}\"]` in [tool.fxscope] (with plain "
                f"torch.fx: `torch.fx.wrap(\"{name}\")` at module level of the file that imports it, or "
                f"`autowrap_functions=({name},)` on the Tracer).")


def unapplied_wrap_hint(name: str, caller: types.FrameType | None, layer: Layer) -> str:
    """Why a function listed in ``wrap-functions`` was traced into all the same, and what works:
    fx replaces it only in the module globals of each ``forward`` it calls (and the root's), which
    are not those of the calling code when the forward is decorated by a wrapper from another
    module (``@autocast(...)``) or the call is in a helper elsewhere."""
    where = "the calling file"
    if caller is not None:
        where = f"`{os.path.basename(caller.f_code.co_filename)}`"
    module = layer.module
    cls = type(module) if module is not None else None
    forward = getattr(cls, "forward", None) if cls is not None else None
    forward_globals = getattr(forward, "__globals__", None)
    caller_globals = caller.f_globals if caller is not None else None
    if cls is not None and forward is not None and inspect.unwrap(forward) is not forward \
            and forward_globals is not caller_globals:
        decorator = (forward_globals or {}).get("__name__", "another module")
        why = (f"`{cls.__qualname__}.forward` is decorated by a wrapper from `{decorator}`, so the "
               f"globals torch.fx patches are that module's, not those of {where}, where `{name}` is called")
    else:
        function = caller.f_code.co_name if caller is not None else "a helper"
        why = (f"`{name}` is called from `{function}` in {where}, whose module globals are not those of "
               "the `forward` that torch.fx patches")
    fixes = [(f"call `torch.fx.wrap(\"{name}\")` at module level of {where} (after the import), which "
              "records every call of it there as one node")]
    if cls is not None and not layer.is_target:  # never the target itself
        fixes.insert(0, f"keep the layer opaque with `leaf-modules = [\"{type_name(cls)}\"]` in [tool.fxscope]")
    return (f"`{name}` is listed in `wrap-functions`, but that did not apply here: torch.fx replaces a "
            f"wrapped function only in the module globals of each `forward` it traces, and {why}. "
            f"What works: {', or '.join(fixes)}.")


def _library_function(frame: types.FrameType) -> tuple[str, str] | None:
    """(importable module, name) of the module-level function ``frame`` runs, preferring the
    package's top-level name when it exports the same function (``einops:rearrange``)."""
    code = frame.f_code
    globals_ = frame.f_globals
    fn = globals_.get(code.co_name)
    if fn is None or getattr(inspect.unwrap(fn), "__code__", None) is not code:
        return None
    module_name = globals_.get("__name__") or ""
    top = module_name.partition(".")[0]
    if top and getattr(sys.modules.get(top), code.co_name, None) is fn:
        module_name = top
    return (module_name, code.co_name) if module_name else None
