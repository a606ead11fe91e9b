"""From inferred builds to configuration: the factory functions and ``[tool.fxscope.targets]``
tables that pin how fxscope builds a class, for ``fxscope init`` and the editor's code action.

A class fxscope built on its own from a recipe gets a factory that makes the same call, with its
provenance; a class it could not build gets a template calling the constructor with each required
argument as ``...`` (its target is written commented out, so a check stays green until the user
fills it in). Nothing here touches files: :func:`factories_text` and :func:`targets_text` return
what to append, leaving out whatever the files already have (idempotent).

>>> from fxscope.model.recipe import Call, Lit, Recipe, Ref
>>> recipe = Recipe(Call(Ref("pkg.vit", ("ViT",)), kwargs=(("dim", Lit(64)),)), "readme", "README.md", 42,
...                 "ViT(dim=64)")
>>> plan = plan_factory("ViT", "pkg.vit", recipe, ())
>>> print(plan.function_source(), end="")
def build_vit():
    \"\"\"Build `ViT` for fxscope, as in README.md:42.\"\"\"
    from pkg.vit import ViT
    return ViT(dim=64)
>>> print(targets_text("", [plan], "fxscope_targets"), end="")
[tool.fxscope.targets.vit]
factory = "fxscope_targets:build_vit"
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from fxscope.engine.results import TargetResult
from fxscope.model.inputs import InferredInputs
from fxscope.model.recipe import Call, Recipe, Ref, render_python
from fxscope.project.discovery import Target
from fxscope.project.notebooks import is_notebook

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["FactoryPlan", "configured_targets", "factories_text", "plan_factory", "plans_from_results", "target_name",
           "targets_text"]


def target_name(class_name: str) -> str:
    """The kebab-case target name of a class: a word starts at a capital followed by a small letter.

    >>> target_name("GPTModel"), target_name("ViT"), target_name("ResNet50"), target_name("my_Net")
    ('gpt-model', 'vit', 'res-net50', 'my-net')
    """
    name = re.sub(r"(?<=[A-Za-z0-9])([A-Z])(?=[a-z])", r"-\1", class_name).lower().replace("_", "-")
    return re.sub(r"-+", "-", name).strip("-") or "model"


@dataclass(frozen=True)
class FactoryPlan:
    """One factory to write: the target ``name``, the ``function`` name, the class it builds, the
    call it makes (``code``) with its ``imports``, where the call was found (``provenance``, a
    phrase: ``as in README.md:42``) and
    whether it is a ``template`` the user must fill in."""

    name: str
    function: str
    class_name: str
    code: str
    imports: tuple[str, ...]
    provenance: str | None
    template: bool
    prelude: tuple[str, ...] = ()
    #: The example inputs fxscope inferred for the class (its compile and export ran on them).
    inputs: InferredInputs | None = None

    def inputs_toml(self) -> str:
        """The target's ``inputs`` line (with where they came from), or ``""`` without inputs."""
        if self.inputs is None:
            return ""
        specs = ", ".join(f"{name} = {{ shape = [{', '.join(str(d) for d in spec.shape)}], dtype = \"{spec.dtype}\" }}"
                          for name, spec in self.inputs.specs)
        return f"# example inputs {self.inputs.provenance()}\ninputs = {{ {specs} }}\n"

    def function_source(self) -> str:
        """The factory function's source."""
        if self.template:
            doc = (f"Build `{self.class_name}` for fxscope: replace each `...` with a real value, then "
                   f"enable the `{self.name}` target in pyproject.toml.")
        else:
            doc = f"Build `{self.class_name}` for fxscope, {self.provenance}."
        lines = [f"def {self.function}():", f'    """{doc}"""']
        lines += [f"    {line}" for line in (*self.imports, *self.prelude)]
        lines.append(f"    return {self.code}")
        return "\n".join(lines) + "\n"


def plan_factory(class_name: str, module: str, recipe: Recipe | None, required: Sequence[str],
                 name: str | None = None) -> FactoryPlan:
    """The factory for ``module.class_name``: from ``recipe`` (how fxscope built it), else a
    template with the ``required`` constructor arguments."""
    name = name or target_name(class_name)
    function = "build_" + name.replace("-", "_")
    if recipe is not None:
        prelude, code, imports = render_python(recipe.expr)
        return FactoryPlan(name, function, class_name, code, tuple(imports), recipe.provenance(), False,
                           tuple(prelude))
    args = ", ".join(f"{a}=..." for a in required if a.isidentifier())  # not *args, **kwargs, <inherited>
    _, code, imports = render_python(Call(Ref(module, (class_name,))))
    return FactoryPlan(name, function, class_name, code.replace("()", f"({args})"), tuple(imports), None, True)


def _defined_functions(text: str) -> set[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set(re.findall(r"^def\s+(\w+)", text, re.M))
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def factories_text(existing: str, plans: Iterable[FactoryPlan]) -> str:
    """What to append to the factories module whose text is ``existing``: the functions it does
    not define yet (a header first when the module is new)."""
    defined = _defined_functions(existing)
    new = [p.function_source() for p in plans if p.function not in defined]
    if not new:
        return ""
    head = "" if existing.strip() else '"""How fxscope builds the models of this workspace (written by `fxscope init`; edit freely)."""\n'
    sep = "\n\n" if existing.strip() or head else ""
    if existing and not existing.endswith("\n"):
        sep = "\n" + sep
    return head + sep + "\n\n".join(new)


def configured_targets(pyproject: str) -> set[str]:
    """Target names that ``pyproject`` configures, or names as a commented-out table."""
    names = set(re.findall(r"^\s*#\s*\[tool\.fxscope\.targets\.([\w.-]+)\]", pyproject, re.M))
    try:
        data = tomllib.loads(pyproject)
    except tomllib.TOMLDecodeError:
        return names | set(re.findall(r"^\s*\[tool\.fxscope\.targets\.([\w.-]+)\]", pyproject, re.M))
    return names | set(data.get("tool", {}).get("fxscope", {}).get("targets", {}))


def targets_text(pyproject: str, plans: Iterable[FactoryPlan], factories_module: str, *,
                 comment_templates: bool = True) -> str:
    """What to append to ``pyproject.toml`` (text ``pyproject``): a target table per plan whose
    name is not configured yet; a template's table is commented out unless ``comment_templates``
    is false (the editor's action on one class, whose user fills the template in at once)."""
    known = configured_targets(pyproject)
    tables = []
    for plan in plans:
        if plan.name in known:
            continue
        table = f"[tool.fxscope.targets.{plan.name}]\nfactory = \"{factories_module}:{plan.function}\"\n"
        table += plan.inputs_toml()
        if plan.template and comment_templates:
            table = (f"# {plan.class_name}: fill in {plan.function} in {factories_module}.py, then uncomment\n"
                     + "".join(f"# {line}\n" for line in table.splitlines()))
        tables.append(table)
    if not tables:
        return ""
    lead = "" if not pyproject.strip() else ("\n" if pyproject.endswith("\n") else "\n\n")
    return lead + "\n".join(tables)


def plans_from_results(results: Iterable[TargetResult]) -> list[FactoryPlan]:
    """One plan per class result worth pinning: built from a recipe (not from its defaults), or
    not built at all (FXS405) and not covered by another target. Two classes of one name in
    different modules get their module's name in front of the target name. A notebook's classes
    get none: a factory module cannot import them (a factory in the notebook itself can be
    configured by hand: ``factory = "model.ipynb:build"``); nor do the classes of a file imported
    from an import root of its own (``mixtral-moe/model.py``), which the python path does not reach."""
    results = list(results)
    chosen: list[tuple[Target, Recipe | None]] = []
    inputs = {r.target.id: r.outcome.inputs for r in results if r.outcome.inputs is not None}
    for r in sorted(results, key=lambda r: r.target.id):
        t, outcome = r.target, r.outcome
        if t.kind != "class" or not t.module or t.import_root or outcome.covered_by or is_notebook(t.file):
            continue
        recipe = outcome.build
        if recipe is not None and recipe.kind != "defaults" and outcome.status != "skipped":
            chosen.append((t, recipe))
        elif outcome.status == "skipped" and any(f.code == "FXS405" for f in outcome.findings):
            chosen.append((t, None))
    names: dict[str, int] = {}
    for t, _ in chosen:
        names[target_name(t.qualname or "")] = names.get(target_name(t.qualname or ""), 0) + 1
    plans = []
    for t, recipe in chosen:
        name = target_name(t.qualname or "")
        module, qualname = t.module or "", t.qualname or ""
        if names[name] > 1:
            name = f"{target_name(module.rpartition('.')[2])}-{name}"
        plan = plan_factory(qualname, module, recipe, t.required_args, name=name)
        plans.append(replace(plan, inputs=inputs.get(t.id)) if recipe is not None else plan)
    return plans
