"""Command-line parsers in a script fxscope imports without its work: ``opt = parser.parse_args()``
is what the script sees when it is run with no arguments.

Training scripts read their sizes from ``argparse`` (``parser.add_argument("--latent_dim",
type=int, default=100)``) and their model classes read the parsed namespace (``opt.latent_dim``).
The safe executor (:mod:`fxscope.job.safe_module`) builds the parser as written and parses an
empty command line, so those classes see the defaults; nothing else of the script runs.

Only argparse's own code runs, checked by identity, never by name: the parser is exactly
``argparse.ArgumentParser`` (no subclass, whatever it overrides), built with argparse's own
formatter classes and parent parsers that are themselves exactly argparse's; an argument's
``action`` is one of argparse's names or classes; the only methods called are argparse's own
functions for building and parsing. A ``type`` other than a builtin converter is refused when a
string default reaches it, whichever way: ``default=``, ``argument_default=`` or
``set_defaults(...)``, before or after the argument (argparse converts string defaults with
``type``). Every other value a parser method gets is plain data. A parser that needs arguments
(it would exit) is refused too.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import types
from typing import Any

__all__ = ["ParserRefused", "call_parser_class", "call_parser_method", "is_parser_class", "is_parser_method"]

#: argparse's own action and formatter classes (by identity: a subclass of the script's is neither).
_ACTIONS = tuple(v for v in vars(argparse).values() if isinstance(v, type) and issubclass(v, argparse.Action))
_FORMATTERS = tuple(v for v in vars(argparse).values()
                        if isinstance(v, type) and issubclass(v, argparse.HelpFormatter))
_GROUPS = (argparse._ArgumentGroup, argparse._MutuallyExclusiveGroup)  # argparse's own (private) classes
#: Methods of a parser (or of an argument group) the safe executor calls, as argparse defines them.
_BUILDING = ("add_argument", "add_argument_group", "add_mutually_exclusive_group", "set_defaults")
_PARSING = ("parse_args", "parse_known_args")
_OWN_FUNCTIONS = tuple(
    getattr(cls, name) for cls in (argparse.ArgumentParser, *_GROUPS) for name in (*_BUILDING, *_PARSING)
    if hasattr(cls, name))
#: ``type=`` callables argparse may apply to a string default.
_SAFE_TYPES: tuple[Any, ...] = (int, float, str, complex)
_PLAIN = (str, int, float, complex, bool, type(None), bytes, range)


class ParserRefused(Exception):
    """A parser call fxscope does not make (the message says why)."""


def is_parser_class(obj: Any) -> bool:
    """``argparse.ArgumentParser`` and ``argparse.Namespace`` themselves (never a subclass)."""
    return obj is argparse.ArgumentParser or obj is argparse.Namespace


def is_parser_method(func: Any) -> bool:
    """A bound method, as argparse defines it, of an object that is exactly an ``ArgumentParser``
    or one of argparse's argument groups."""
    if type(func) is not types.MethodType:  # never an attribute lookup on another object
        return False
    owner = func.__self__
    if type(owner) is not argparse.ArgumentParser and not any(type(owner) is g for g in _GROUPS):
        return False
    return any(func.__func__ is f for f in _OWN_FUNCTIONS)


def _one_of(value: Any, kinds: tuple[Any, ...]) -> bool:
    """``value in kinds`` by identity (a metaclass's own ``__eq__`` or ``__hash__`` is not run)."""
    return any(value is k for k in kinds)


def _plain(value: Any, what: str) -> None:
    if _one_of(type(value), (list, tuple)):
        for item in value:
            _plain(item, what)
        return
    if not _one_of(type(value), _PLAIN):
        raise ParserRefused(f"{what} that is not plain data (`{type(value).__name__}`)")


def call_parser_class(cls: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Build ``argparse.ArgumentParser`` or ``Namespace`` (:func:`is_parser_class`) when nothing of
    the script's would run: argparse's own formatter class, exact argparse parents."""
    if cls is argparse.Namespace:
        if args:
            raise ParserRefused("a `Namespace` with positional arguments")
        return cls(**kwargs)
    for name, value in kwargs.items():
        if name == "formatter_class":
            if not _one_of(value, _FORMATTERS):
                raise ParserRefused("a parser whose `formatter_class` is not one of argparse's")
        elif name == "parents":
            if not _one_of(type(value), (list, tuple)) or any(type(p) is not argparse.ArgumentParser for p in value):
                raise ParserRefused("a parser whose `parents` are not argparse parsers")
        elif name != "argument_default":
            _plain(value, f"a parser's `{name}`")
    for value in args:
        _plain(value, "a parser argument")
    if args:
        raise ParserRefused("an `ArgumentParser` with positional arguments")
    return cls(**kwargs)


def _check_argument(args: list[Any], kwargs: dict[str, Any]) -> None:
    for value in args:
        _plain(value, "an argument name")
    for name, value in kwargs.items():
        if name == "action":
            if type(value) is not str and not _one_of(value, _ACTIONS):
                raise ParserRefused("an argument with an `action` class of the script's own")
        elif name == "type":
            if not callable(value):
                raise ParserRefused("an argument whose `type` is not callable")
        elif name not in ("default", "const"):
            _plain(value, f"an argument's `{name}`")


def _converted_defaults(parser: argparse.ArgumentParser) -> None:
    """Refuse a parser that would convert a string default with a converter of the script's."""
    defaults = parser._defaults  # what set_defaults(...) recorded
    for action in parser._actions:
        if not _one_of(type(action), _ACTIONS):
            raise ParserRefused("an argument with an `action` class of the script's own")
        kind = action.type
        if kind is None or any(kind is t for t in _SAFE_TYPES):
            continue
        candidates = [action.default, defaults.get(action.dest)]
        if any(type(c) is str and c != argparse.SUPPRESS for c in candidates):
            name = kind.__name__ if type(kind) is types.FunctionType else type(kind).__name__
            raise ParserRefused(f"an argument whose string default argparse converts with `{name}`")


def call_parser_method(func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call ``func`` (:func:`is_parser_method`): parsing parses an empty command line; raises
    :class:`ParserRefused` for an argument that would run user code or a parser that needs
    arguments."""
    name = func.__name__
    if name in _PARSING:
        if args or kwargs:
            raise ParserRefused(f"`{name}` of an explicit command line")
        _converted_defaults(func.__self__)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                return func([])
            except SystemExit:
                usage = " ".join(err.getvalue().split())
                raise ParserRefused(f"the script needs command-line arguments ({usage[-160:]})") from None
    if name == "add_argument":
        _check_argument(args, kwargs)
    elif name == "set_defaults":
        if args:
            raise ParserRefused("`set_defaults` with positional arguments")
    else:  # groups
        for value in (*args, *kwargs.values()):
            _plain(value, f"a `{name}` argument")
    return func(*args, **kwargs)
