"""Constructions a repository writes in its YAML config files, as call sites (nothing runs).

Many repositories build their models from a YAML file instead of a literal call:
``model = models[config["model_params"]["name"]](**config["model_params"])`` with ::

    model_params:
      name: 'VanillaVAE'
      in_channels: 3
      latent_dim: 128

or Hydra's ``_target_: pkg.models.VAE``. A mapping that names a class this way (a ``_target_``,
or a ``name``/``type``/``model``/``arch``/``class`` key whose value is a class-like name) is read as
the call ``VanillaVAE(in_channels=3, latent_dim=128)``: its other keys with plain values (numbers,
strings, booleans, null and lists of them) are the keyword arguments. Names are resolved later by
discovery like a README's (a bare name: the one workspace class of that name; a dotted one: an
import name). Every plain ``key: value`` pair of a mapping is also a keyword value the workspace
uses for that name (a value for an invented build's parameter of that name).

The file is parsed with PyYAML's safe composer (no tags constructed, no code run); a file that is not
YAML, is too large or has too many nodes gives nothing.

>>> sites, keywords = yaml_examples("model_params:\\n  name: 'VanillaVAE'\\n  in_channels: 3\\n  latent_dim: 128\\n")
>>> [(s.line, s.text, s.kind) for s in sites]
[(2, 'VanillaVAE(in_channels=3, latent_dim=128)', 'config-file')]
>>> keywords
(('name', 'VanillaVAE', 2), ('in_channels', 3, 3), ('latent_dim', 128, 4))
>>> [s.text for s in yaml_examples("encoder:\\n  _target_: pkg.nets.Encoder\\n  dims: [8, 16]\\n")[0]]
['pkg.nets.Encoder(dims=[8, 16])']
"""

from __future__ import annotations

import re
from typing import Any

from fxscope.model.recipe import Call, Expr, Lit, Ref, Seq, render_python

from .callsites import MAX_KEYWORDS_PER_FILE, MAX_SITES_PER_FILE, MAX_TEXT, CallSite

__all__ = ["MAX_YAML_CHARS", "is_config_file", "yaml_examples"]

#: Larger YAML files are data (datasets, vocabularies), not configurations: skipped.
MAX_YAML_CHARS = 256_000
#: Nodes read per file, at most (aliases can make a small file a large tree).
MAX_NODES = 20_000
_SUFFIXES = (".yaml", ".yml")
#: Keys that name the class a mapping configures; ``_target_`` (Hydra) takes a dotted import name.
_NAME_KEYS = ("_target_", "name", "type", "model", "arch", "architecture", "class", "class_name", "model_name",
              "model_type", "target", "cls")
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
_DOTTED_CLASS = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\.[A-Z]\w*$")
_KEYWORD = re.compile(r"^[A-Za-z_]\w*$")
_MAX_NUMBER = 10**12


def is_config_file(path: str) -> bool:
    """Whether a workspace file is read as a YAML config (its constructions)."""
    return str(path).endswith(_SUFFIXES)


def yaml_examples(text: str) -> tuple[tuple[CallSite, ...], tuple[tuple[str, int | float | str | bool, int], ...]]:
    """The constructions (call sites of kind ``config-file``) and the plain keyword values
    (name, value, 1-based line) of a YAML file; nothing when it is not YAML or too large."""
    if len(text) > MAX_YAML_CHARS:
        return (), ()
    try:
        import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information
    except ImportError:  # PyYAML is a dependency; a broken install reads no config file
        return (), ()
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):
        return (), ()
    reader = _Reader(yaml)
    try:
        for document in documents:
            if document is not None:
                reader.visit(document)
    finally:
        reader.loader.dispose()
    return tuple(reader.sites), tuple(reader.keywords)


class _Reader:
    def __init__(self, yaml: Any) -> None:
        self.yaml = yaml
        self.sites: list[CallSite] = []
        self.keywords: list[tuple[str, int | float | str | bool, int]] = []
        self.nodes = 0
        self.seen: set[int] = set()  # an alias points at a node already read
        self.loader = yaml.SafeLoader("")  # constructs scalars only (one per file)

    def visit(self, node: Any) -> None:
        if id(node) in self.seen or self.nodes > MAX_NODES:
            return
        self.seen.add(id(node))
        self.nodes += 1
        if isinstance(node, self.yaml.MappingNode):
            self.mapping(node)
        elif isinstance(node, self.yaml.SequenceNode):
            for item in node.value:
                self.visit(item)

    def mapping(self, node: Any) -> None:
        entries: list[tuple[str, Any, int]] = []
        for key, value in node.value:
            self.nodes += 1
            if isinstance(key, self.yaml.ScalarNode) and isinstance(key.value, str):
                entries.append((key.value, value, key.start_mark.line + 1))
            if not isinstance(value, self.yaml.ScalarNode):
                self.visit(value)
        plain = [(k, v, line) for k, v, line in entries if _KEYWORD.match(k) and not k.startswith("_")]
        for k, v, line in plain:
            value = self.plain(v)
            if isinstance(value, Lit) and value.value is not None and len(self.keywords) < MAX_KEYWORDS_PER_FILE:
                self.keywords.append((k, value.value, line))
        target = self.named_class(entries)
        if target is None or len(self.sites) >= MAX_SITES_PER_FILE:
            return
        ref, name_key, line = target
        kwargs = tuple((k, value) for k, v, _ in plain if k != name_key
                       for value in [self.plain(v)] if value is not None)
        call = Call(ref, kwargs=kwargs)
        self.sites.append(CallSite(call, line, _text(ref, kwargs), "config-file"))

    def named_class(self, entries: list[tuple[str, Any, int]]) -> tuple[Ref, str, int] | None:
        """The class a mapping names (``_target_`` first), its key and line."""
        by_key = {k: (v, line) for k, v, line in entries}
        for key in _NAME_KEYS:
            found = by_key.get(key)
            if found is None or not isinstance(found[0], self.yaml.ScalarNode):
                continue
            value = str(found[0].value).strip()
            if key == "_target_" and _DOTTED_CLASS.match(value):
                module, _, name = value.rpartition(".")
                return Ref(module, (name,)), key, found[1]
            if _CLASS_NAME.match(value):
                return Ref("", (value,)), key, found[1]
        return None

    def plain(self, node: Any, depth: int = 0) -> Expr | None:
        """A scalar or a list of scalars as a literal expression; None for anything else."""
        if isinstance(node, self.yaml.ScalarNode):
            return self.scalar(node)
        if isinstance(node, self.yaml.SequenceNode) and depth == 0 and len(node.value) <= 64:
            items = [self.plain(item, depth + 1) for item in node.value]
            if all(isinstance(i, Lit) for i in items):
                return Seq("list", tuple(i for i in items if i is not None))
        return None

    def scalar(self, node: Any) -> Lit | None:
        """A scalar as YAML 1.1's safe loader reads it (int, float, bool, null, str)."""
        try:
            value = self.loader.construct_object(node, deep=True)
        except (self.yaml.YAMLError, ValueError, TypeError, OverflowError):
            return None
        if value is None or isinstance(value, (bool, str)):
            return Lit(value)
        if isinstance(value, int):
            return Lit(value) if abs(value) <= _MAX_NUMBER else None
        if isinstance(value, float) and value == value and abs(value) != float("inf"):
            return Lit(value)
        return None


def _text(ref: Ref, kwargs: tuple[tuple[str, Expr], ...]) -> str:
    """``Net(dim=8, depths=[2, 2])``, shortened as call sites are."""
    name = ".".join((ref.module, *ref.path)) if ref.module else ".".join(ref.path)
    text = f"{name}({', '.join(f'{k}={render_python(v)[1]}' for k, v in kwargs)})"
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 4] + "...)"
