"""Command-line parsers in a script fxscope imports without its work: ``opt = parser.parse_args()``
is what the script sees when it is run with no arguments.

Training scripts read their sizes from ``argparse`` (``parser.add_argument("--latent_dim",
type=int, default=100)``) and their model classes read the parsed namespace (``opt.latent_dim``).
The safe executor (:mod:`fxscope.worker.safe_module`) builds the parser as written and parses an
empty command line, so those classes see the defaults; nothing else of the script runs. Only the
parser's own methods are called, and none that runs user code: an argument whose ``action`` is
not one of argparse's names, or whose ``type`` is not a builtin while its default is a string
(argparse converts such a default with it), is refused, and so is a parser that needs arguments
(it would exit).
"""

from __future__ import annotations

import argparse
import contextlib
import io
from typing import Any

__all__ = ["ParserRefused", "call_parser_method", "is_parser_class", "is_parser_method"]

#: Methods of a parser (or of an argument group) the safe executor calls.
_BUILDING = frozenset({"add_argument", "add_argument_group", "add_mutually_exclusive_group", "set_defaults"})
_PARSING = frozenset({"parse_args", "parse_known_args"})
#: ``type=`` callables argparse may apply to a string default.
_SAFE_TYPES: tuple[Any, ...] = (int, float, str, complex)


class ParserRefused(Exception):
    """A parser call fxscope does not make (the message says why)."""


def is_parser_class(obj: Any) -> bool:
    """``argparse.ArgumentParser`` (or a subclass defined by argparse itself) and ``Namespace``."""
    return obj in (argparse.ArgumentParser, argparse.Namespace)


def is_parser_method(func: Any) -> bool:
    """A bound method of an ``ArgumentParser`` or argument group that builds or parses it."""
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", "")
    return isinstance(owner, (argparse.ArgumentParser, argparse._ArgumentGroup)) and (  # noqa: SLF001
        name in _BUILDING or (name in _PARSING and isinstance(owner, argparse.ArgumentParser)))


def call_parser_method(func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call ``func`` (:func:`is_parser_method`): parsing parses an empty command line; raises
    :class:`ParserRefused` for an argument that would run user code or a parser that needs
    arguments."""
    if func.__name__ in _PARSING:
        if args or kwargs:
            raise ParserRefused(f"`{func.__name__}` of an explicit command line")
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                return func([])
            except SystemExit:
                usage = " ".join(err.getvalue().split())
                raise ParserRefused(f"the script needs command-line arguments ({usage[-160:]})") from None
    if func.__name__ == "add_argument":
        action = kwargs.get("action")
        if action is not None and not isinstance(action, str):
            raise ParserRefused("an argument with an `action` class of the script's own")
        kind = kwargs.get("type")
        if kind is not None and not any(kind is t for t in _SAFE_TYPES) and isinstance(kwargs.get("default"), str):
            raise ParserRefused(f"an argument whose string default argparse converts with `{getattr(kind, '__name__', kind)}`")
    return func(*args, **kwargs)
