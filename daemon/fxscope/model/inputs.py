"""Example inputs of a class target as plain data: the candidates discovery finds in the repository
(torch-free), and the inputs the worker inferred and kept, with where they came from.

A :class:`TensorShape` is a shape and a dtype name; a dimension is an integer, or a name when the
source leaves it open (``Float[Tensor, "b c h w"]``: the worker fills it from the model's
structure or a small search). An :class:`InputCandidate` is one way the repository shows to call
a class's forward (positional and keyword tensors); :class:`InferredInputs` is the one the eager
forward ran on, by forward parameter name.

>>> hint = InputCandidate("call-site", "tests/test_vit.py", 14, "model(torch.randn(2, 3, 32, 32))",
...                       args=(TensorShape((2, 3, 32, 32)),))
>>> InputCandidate.from_json(hint.to_json()) == hint
True
>>> kept = InferredInputs((("x", TensorShape((2, 3, 32, 32))),), "call-site", "tests/test_vit.py", 14, hint.text)
>>> kept.describe()
'inputs (2, 3, 32, 32) as in tests/test_vit.py:14'
>>> InferredInputs.from_json(kept.to_json()) == kept
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

from fxscope.model.wire import WireError, count, is_count, need, only, opt, opt_position

__all__ = ["INPUT_KINDS", "InferredInputs", "InputCandidate", "TensorShape"]

#: Where example inputs come from, in the order the worker tries them: literal forward calls
#: (code, doctests, README/docs fences; notebooks are ``call-site`` with a cell), the conventions
#: of libraries (``example_input_array``, ``dummy_inputs``, timm's ``pretrained_cfg``,
#: transformers' main input), shapes that annotations and docstrings give, and the model's
#: structure (the first layer that consumes the input).
INPUT_KINDS = ("call-site", "docstring", "readme", "convention", "annotation", "structure")

Dim = Union[int, str]

_SHAPE_KEYS = frozenset({"shape", "dtype"})
_INPUTS_KEYS = frozenset({"specs", "kind", "file", "line", "cell", "text"})


@dataclass(frozen=True)
class TensorShape:
    """A tensor's ``shape`` (integers, or names of open dimensions) and ``dtype`` name."""

    shape: tuple[Dim, ...]
    dtype: str = "float32"

    @property
    def concrete(self) -> bool:
        """Whether every dimension is an integer."""
        return all(isinstance(d, int) for d in self.shape)

    def to_json(self) -> dict[str, Any]:
        """``{"shape": [...], "dtype": "..."}``."""
        return {"shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: Any, where: str = "tensor") -> TensorShape:
        """Read :meth:`to_json` output, strictly (:class:`~fxscope.model.wire.WireError`, a
        ValueError, naming ``where`` when malformed)."""
        data = only(data, _SHAPE_KEYS, where)
        shape = need(data, "shape", list, where)
        if not all(is_count(d) or isinstance(d, str) for d in shape):
            raise WireError(f"{where}: 'shape' is not a list of sizes and names")
        return cls(tuple(shape), opt(data, "dtype", str, where) or "float32")

    def render(self) -> str:
        """``(2, 3, 32, 32)``, with ``int64`` after it when not float32."""
        dims = ", ".join(str(d) for d in self.shape)
        text = f"({dims},)" if len(self.shape) == 1 else f"({dims})"
        return text if self.dtype == "float32" else f"{text} {self.dtype}"


def _origin(file: str, line: int, cell: int | None) -> str:
    return f"{file}:cell {cell}:{line}" if cell is not None else f"{file}:{line}"


@dataclass(frozen=True)
class InputCandidate:
    """One way the repository shows to call a class's forward: positional ``args`` and keyword
    ``kwargs`` tensors, where it was found (``kind`` of :data:`INPUT_KINDS`, root-relative
    ``file``, 1-based ``line``, notebook ``cell``) and the ``text`` it was written as."""

    kind: str
    file: str
    line: int
    text: str
    args: tuple[TensorShape, ...] = ()
    kwargs: tuple[tuple[str, TensorShape], ...] = ()
    cell: int | None = None

    @property
    def origin(self) -> str:
        """``file:line`` (``file:cell N:line`` in a notebook)."""
        return _origin(self.file, self.line, self.cell)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_json` inverts it."""
        out: dict[str, Any] = {"kind": self.kind, "file": self.file, "line": self.line, "text": self.text,
                               "args": [a.to_json() for a in self.args],
                               "kwargs": [[k, v.to_json()] for k, v in self.kwargs]}
        if self.cell is not None:
            out["cell"] = self.cell
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InputCandidate:
        """Read :meth:`to_json` output (ValueError when malformed)."""
        try:
            return cls(str(data["kind"]), str(data["file"]), int(data["line"]), str(data["text"]),
                       tuple(TensorShape.from_json(a) for a in data.get("args") or ()),
                       tuple((str(k), TensorShape.from_json(v)) for k, v in data.get("kwargs") or ()),
                       int(data["cell"]) if isinstance(data.get("cell"), int) else None)
        except (KeyError, TypeError) as e:
            raise ValueError(f"not an input candidate: {e}") from None


@dataclass(frozen=True)
class InferredInputs:
    """The example inputs a class target got: ``specs`` (forward parameter -> shape and dtype, in
    call order) and where they came from (``kind``, ``file``, ``line``, ``text``; ``file`` is
    empty for a convention or the model's structure, which ``text`` names)."""

    specs: tuple[tuple[str, TensorShape], ...]
    kind: str
    file: str = ""
    line: int = 0
    text: str = ""
    cell: int | None = None

    def shapes(self) -> str:
        """``(2, 3, 32, 32)``, or ``x (2, 8), mask (2, 8) bool`` for several inputs."""
        if len(self.specs) == 1:
            return self.specs[0][1].render()
        return ", ".join(f"{name} {spec.render()}" for name, spec in self.specs)

    def provenance(self) -> str:
        """``as in tests/test_vit.py:14``, or ``from its example_input_array``."""
        if self.file:
            return f"as in {_origin(self.file, self.line, self.cell)}"
        return f"from {self.text}" if self.text else f"from its {self.kind}"

    def label(self) -> str:
        r"""One candidate in "what was tried": ``\`net(torch.randn(1, 3, 8, 8))\` as in t.py:4 (x (1, 3, 8, 8))``."""
        where = f" as in {self.file}:{self.line}" if self.file else ""
        shapes = ", ".join(f"{n} {s.render()}" for n, s in self.specs)
        return f"`{self.text}`{where} ({shapes})" if self.file else f"{self.text} ({shapes})"

    def describe(self) -> str:
        """``inputs (2, 3, 32, 32) as in tests/test_vit.py:14``: what the hover and lens say."""
        return f"inputs {self.shapes()} {self.provenance()}"

    def to_json(self) -> dict[str, Any]:
        """The report's ``inputs`` object."""
        out: dict[str, Any] = {"specs": {name: spec.to_json() for name, spec in self.specs}, "kind": self.kind}
        if self.file:
            out.update({"file": self.file, "line": self.line})
        if self.cell is not None:
            out["cell"] = self.cell
        if self.text:
            out["text"] = self.text
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "inputs") -> InferredInputs:
        """Read an ``inputs`` object, strictly (:class:`~fxscope.model.wire.WireError`, a
        ValueError, naming ``where`` when malformed: it comes from a process that ran model code,
        or from a file anyone can edit)."""
        data = only(data, _INPUTS_KEYS, where)
        specs = need(data, "specs", dict, where)
        if not specs:
            raise WireError(f"{where}: 'specs' is empty")
        kind = need(data, "kind", str, where)
        if kind not in INPUT_KINDS:
            raise WireError(f"{where}: 'kind' {kind!r} is not one of {list(INPUT_KINDS)}")
        file = opt(data, "file", str, where) or ""
        line = opt_position(data, "line", where) if file else count(data, "line", where)
        return cls(tuple((k, TensorShape.from_json(v, f"{where}.specs.{k}")) for k, v in specs.items()), kind,
                   file, line or 0, opt(data, "text", str, where) or "",
                   opt_position(data, "cell", where))
