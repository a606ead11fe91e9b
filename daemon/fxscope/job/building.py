"""Building a class target for the fx analysis: its defaults and recipes (:mod:`.construct`),
and what to say when nothing built or the build invented its values."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Callable

from fxscope.job.construct import Attempt, AutomaticBuild, build_automatically
from fxscope.job.failures import one_line, tb_locations
from fxscope.model.finding import Finding
from fxscope.model.location import Location
from fxscope.model.recipe import Recipe
from fxscope.project import policy
from fxscope.project.discovery import Target

__all__ = ["build_class", "needs_arguments", "parameterless_failure", "say_invented"]


def build_class(cls: Any, target: Target, build: Callable[[Callable[[], Any]], Any],
                is_user_file: Callable[[str], bool], rejected: tuple[Recipe, ...] = ()) -> AutomaticBuild:
    """Build a class target from its candidates (discovery's, its defaults first when it needs no
    argument), except the ``rejected`` ones."""
    recipes = tuple(r for r in target.recipes if r not in rejected)
    return build_automatically(cls, recipes, build=build, is_user_file=is_user_file)


def _takes_arguments(cls: Any) -> bool:
    """Whether the constructor of ``cls`` accepts any argument (optional ones too)."""
    try:
        return bool(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return False


def parameterless_failure(cls: Any, automatic: AutomaticBuild) -> BaseException | None:
    """What a constructor without parameters raised when fxscope built the class from its
    defaults and nothing else built it: a fault of the class, which no argument could avoid."""
    if _takes_arguments(cls):
        return None
    causes = [a.cause for a in automatic.attempts if a.recipe.kind == "defaults" and a.cause is not None]
    return causes[0] if len(causes) == len(automatic.attempts) == 1 else None


def needs_arguments(target: Target, automatic: AutomaticBuild, is_user_file: Callable[[str], bool],
                    fallback: Location) -> Finding:
    """FXS405 at the class: no candidate built (an assert on optional parameters, a constructor
    inherited past a mixin, no recipe at all); what was tried and what each raised, with the
    constructor frames of the first failure as related locations."""
    from fxscope.model.codes import CODES

    tried = "; ".join(_tried(a) for a in automatic.attempts)
    needs = ", ".join(target.required_args) if target.required_args else "arguments its defaults do not give"
    message = f"`{target.qualname}` needs constructor arguments ({needs}) and no factory is configured"
    if tried:
        message += f"; fxscope could not build it on its own: tried {tried}"
    first = next((a.cause for a in automatic.attempts if a.cause is not None), None)
    related = tb_locations(first, is_user_file) if first is not None else []
    return Finding("FXS405", CODES["FXS405"].severity, message, fallback, CODES["FXS405"].help,
                   related=tuple(related[-8:]))


def _tried(attempt: Attempt) -> str:
    """One candidate of "what was tried": its text, kind, origin and error, and whether it
    reached for pretrained weights (turned off, or refused: fxscope never downloads)."""
    recipe, error = attempt.recipe, one_line(attempt.error or "")
    text = f"`{recipe.text}` ({recipe.kind}, {recipe.origin}): {error}"
    note = policy.download_note(error)
    if note is not None:
        text += f" ({note})"
    elif any(policy.weights_off(name) is not None for name in _keywords(recipe.expr)):
        text += " (pretrained weights off: fxscope never downloads)"
    return text


def _keywords(expr: Any) -> list[str]:
    """Every keyword name passed anywhere inside a recipe expression."""
    out: list[str] = []
    for name, value in getattr(expr, "kwargs", ()):
        out += [name, *_keywords(value)]
    for child in (*getattr(expr, "args", ()), *getattr(expr, "items", ())):
        out += _keywords(child)
    return out


def say_invented(findings: Sequence[Finding], recipe: Recipe, name: str,
                 is_user_file: Callable[[str], bool]) -> tuple[Finding, ...]:
    """``findings`` where each one at a workspace line of a build with invented values says so (its
    message, and so its hover). One located in a library keeps its message: the report groups
    those by message, one per library cause, whichever targets reached it."""
    where = f"the rest as in {recipe.origin}" if recipe.kind == "filled-site" else "no call site found"
    note = f" (fxscope built `{name}` with invented values: {recipe.invented_values()}; {where})"
    return tuple(replace(f, message=f"{f.message}{note}") if (
        f.severity in ("error", "warning") and is_user_file(f.location.file) and note not in f.message) else f
        for f in findings)
