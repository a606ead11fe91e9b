"""Pinning inferred builds as configuration: the factory functions and target tables that
``fxscope init`` and the editor's action write (torch-free: plain text in, plain text out)."""

from __future__ import annotations

import ast
import sys

from fxscope.model.recipe import Call, Lit, Recipe, Ref, Setattrs
from fxscope.report.factories import factories_text, plan_factory, targets_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = '[project]\nname = "demo"\n\n[tool.fxscope]\ntimeout = 5\n'


def _recipe() -> Recipe:
    config = Setattrs(Call(Ref("pkg.model", ("GPT", "get_default_config"))), (("model_type", Lit("gpt-nano")),))
    return Recipe(Call(Ref("pkg.model", ("GPT",)), (config,)), "readme", "README.md", 31, "GPT(model_config)")


def test_a_build_becomes_a_factory_and_a_target() -> None:
    plan = plan_factory("GPT", "pkg.model", _recipe(), ("config",))
    source = factories_text("", [plan])
    tree = ast.parse(source)
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert func.name == "build_gpt" and "as in README.md:31" in (ast.get_docstring(func) or "")
    body = "\n".join(line[4:] for line in source.splitlines() if line.startswith("    ") and '"""' not in line)
    assert "config.model_type = 'gpt-nano'" in body and body.rstrip().endswith("return GPT(config)")
    toml = PYPROJECT + targets_text(PYPROJECT, [plan], "fxscope_targets")
    data = tomllib.loads(toml)
    assert data["tool"]["fxscope"]["timeout"] == 5
    assert data["tool"]["fxscope"]["targets"]["gpt"] == {"factory": "fxscope_targets:build_gpt"}


def test_a_template_is_commented_out_unless_asked_and_nothing_is_written_twice() -> None:
    plan = plan_factory("Unknown", "pkg.model", None, ("secret", "*args"))
    source = factories_text("", [plan])
    assert "return Unknown(secret=...)" in source and plan.template
    commented = targets_text(PYPROJECT, [plan], "fxscope_targets")
    assert "# [tool.fxscope.targets.unknown]" in commented
    assert "unknown" not in tomllib.loads(PYPROJECT + commented)["tool"]["fxscope"].get("targets", {})
    active = targets_text(PYPROJECT, [plan], "fxscope_targets", comment_templates=False)
    assert tomllib.loads(PYPROJECT + active)["tool"]["fxscope"]["targets"]["unknown"]
    # idempotent: an existing table (active or commented out) and an existing function are kept
    assert targets_text(PYPROJECT + commented, [plan], "fxscope_targets") == ""
    assert targets_text(PYPROJECT + active, [plan], "fxscope_targets") == ""
    assert factories_text(source, [plan]) == ""
