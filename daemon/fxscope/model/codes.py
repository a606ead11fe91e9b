"""The finding codes: fixed meanings, default severities, names and help texts.

Plain data in the model layer (no torch): the tracer, engine, worker, report views and every
front end (CLI formats, SARIF rules, LSP diagnostics) read this table. A new code takes a new
number, an existing code never changes meaning.

>>> CODES["FXS101"].severity
'error'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Code", "CODES", "CODES_URL", "COMPILE_URL", "EXPORT_URL", "SEVERITIES", "severity_rank",
           "finding_dict"]

#: Documentation of the finding codes (the README's table on the project page).
CODES_URL = "https://github.com/fxscope/fxscope#what-it-finds"
#: Documentation of the compile analysis and its codes (FXS6xx), and of the export analysis (FXS7xx).
COMPILE_URL = "https://github.com/fxscope/fxscope#the-compile-analysis"
EXPORT_URL = "https://github.com/fxscope/fxscope#the-export-analysis"


@dataclass(frozen=True)
class Code:
    """One finding code: ``code`` (``FXS101``), ``name`` (kebab-case rule name), default
    ``severity``, a one-line ``title``, a longer ``help`` text (how to fix it) and ``url``, the
    page that documents it."""

    code: str
    name: str
    severity: str
    title: str
    help: str
    url: str = CODES_URL


#: Severities from most to least severe.
SEVERITIES = ("error", "warning", "info", "hint")


def severity_rank(severity: str) -> int:
    """0 for ``error`` up to 3 for ``hint`` (lower is more severe)."""
    return SEVERITIES.index(severity)


_TABLE = [
    Code(
        "FXS101", "traced-control-flow", "error",
        "A traced value decides Python control flow",
        "Symbolic tracing cannot know the value of a tensor, so `if`, `while`, `assert`, `bool()`, "
        "`and`, `or` and `not` on it cannot be recorded. Compute both branches and select with "
        "`torch.where`, move the decision into a function marked with `torch.fx.wrap`, pass the "
        "deciding argument as a concrete arg, or register the module as a leaf. For an `assert`, "
        "use `torch._assert(cond, msg)` (recorded as a node) or remove it.",
    ),
    Code(
        "FXS102", "traced-iteration", "error",
        "A traced value is iterated",
        "The length of a traced value is unknown while tracing, so `for`, `*x`, `list(x)` and "
        "`f(*x.shape)` cannot be recorded. Use tensor ops (`torch.unbind`, `torch.split`, "
        "`x.flatten`), index with known constants, or wrap the helper with `torch.fx.wrap`.",
    ),
    Code(
        "FXS103", "traced-len", "error",
        "`len()` of a traced value",
        "`len()` must return a Python int, which a traced value does not have. Use `x.size(0)` or "
        "`x.shape[0]` (recorded in the graph), or call `torch.fx.wrap('len')` at module scope.",
    ),
    Code(
        "FXS104", "traced-python-number", "error",
        "A traced value is used as a Python number or index",
        "`int()`, `float()`, `range()` and list indexing need a concrete number. Keep the computation "
        "in torch ops, which accept traced sizes (`torch.arange(n)` for an index tensor, "
        "`torch.zeros((b, n))`, `torch.index_select` instead of indexing a list), pass the value as a "
        "concrete arg, or move the code into a function marked with `torch.fx.wrap`. A loop over "
        "`range(n)` of a traced size traces with example inputs (`inputs`, shape-aware mode).",
    ),
    Code(
        "FXS105", "traced-item-assignment", "error",
        "Item assignment into a traced value",
        "`x[i] = v` mutates a traced value in place, which symbolic tracing does not record. Build "
        "the result functionally: `torch.where`, `x.index_put(...)`, `x.masked_fill(...)` or "
        "`torch.cat`.",
    ),
    Code(
        "FXS106", "traced-value-leaves-torch", "error",
        "A traced value reaches non-torch code",
        "numpy needs real data, which a traced value does not have (numpy converts it, or calls "
        "methods on it that torch does not have). Keep the computation in torch ops, or mark the "
        "helper with `torch.fx.wrap` so it becomes one opaque node. (`.item()`, `.tolist()` and "
        "`.numpy()` themselves are recorded as nodes; using their result as a Python value is not.)",
    ),
    Code(
        "FXS107", "trace-exception", "error",
        "An exception was raised while tracing",
        "The original error is kept in the message. Common fixes: pass concrete args for non-tensor "
        "inputs, mark the helper with `torch.fx.wrap`, or register the module as a leaf "
        "(`leaf-modules` in [tool.fxscope]).",
    ),
    Code(
        "FXS201", "dead-inplace-op", "warning",
        "In-place op whose result has no users",
        "`Graph.eliminate_dead_code()` removes nodes without users, so this in-place op vanishes "
        "from the transformed model and its result changes. Use the out-of-place op and assign its "
        "result (`x = x.add(1)`), or return/consume the mutated value.",
    ),
    Code(
        "FXS301", "unused-submodule", "hint",
        "A submodule is never called in forward",
        "The submodule is assigned in `__init__` but forward never calls it. Remove it, or call "
        "it; unused modules keep their parameters in the state dict and confuse graph passes.",
    ),
    Code(
        "FXS302", "unused-parameter", "warning",
        "A parameter is never used in forward",
        "DistributedDataParallel fails on parameters that get no gradient (`find_unused_parameters`). "
        "Remove the parameter, use it, or freeze it with `requires_grad_(False)`.",
    ),
    Code(
        "FXS401", "target-build-failed", "error",
        "The target could not be built",
        "The constructor or factory raised. Fix the error, or configure a factory in "
        "[tool.fxscope.targets] that builds the model with valid arguments.",
    ),
    Code(
        "FXS402", "import-failed", "error",
        "A model file could not be imported",
        "Fix the syntax or import error; fxscope imports the file the way Python would, with the "
        "configured `python-path` on sys.path.",
    ),
    Code(
        "FXS403", "trace-timeout", "error",
        "Tracing timed out",
        "Tracing did not finish within `timeout` seconds; the location is where it was stuck. Look "
        "for a loop whose exit depends on a traced value, or raise `timeout` in [tool.fxscope].",
    ),
    Code(
        "FXS404", "trace-process-died", "error",
        "The tracing process died",
        "The model code killed the process (a signal, `os._exit`, `sys.exit`, a native crash or the "
        "memory limit). fxscope's own process is unaffected; fix the code at the location shown.",
    ),
    Code(
        "FXS405", "needs-constructor-args", "info",
        "The class needs constructor arguments and no factory is configured",
        "`fxscope init` writes a factory for it to fill in (or add a target with a factory that builds it: "
        "`[tool.fxscope.targets.NAME] factory = \"pkg.module:build\"`, returning a module or "
        "(module, concrete_args)); a README example or test that constructs it with literal arguments "
        "lets fxscope build it on its own.",
    ),
    Code(
        "FXS406", "built-on-cpu", "info",
        "The model could not be built on the meta device and was built on CPU",
        "Construction under `torch.device('meta')` raised, so weights were allocated on CPU. Make "
        "the constructor device-agnostic (avoid `.item()`, numpy or in-place data init on "
        "parameters), or set `device = \"cpu\"` to skip the meta attempt.",
    ),
    Code(
        "FXS407", "uses-skipped-statement", "info",
        "The class uses a name that a statement fxscope does not run would set",
        "fxscope imports a notebook (or a script whose top level runs work) without running its work: "
        "only imports, definitions and assignments of literals or configuration objects run; loops, "
        "calls, data loading and IPython magics are skipped. The class reads a name such a statement "
        "sets, so fxscope does not build it. Set the name with a literal, pass it as a constructor "
        "argument, or configure a factory that builds the model.",
    ),
    Code(
        "FXS408", "sandbox-blocked", "error",
        "fxscope's sandbox blocked a write or a network connection",
        "fxscope runs model code in an OS sandbox (Landlock on Linux): it may write only in the job's "
        "temporary directory and make no TCP connection or bind. The code at this line tried one, so "
        "the module could not be imported (or traced) as plain Python would. This is not a bug of "
        "the model: move the write or the download out of import and forward (into a script or a "
        "function the model does not call), or, for a repository you trust, turn the sandbox off with "
        "`sandbox = false` in [tool.fxscope] or `fxscope check --no-sandbox`.",
    ),
    Code(
        "FXS409", "no-example-inputs", "info",
        "No example inputs could be inferred, so torch.compile and torch.export did not run",
        "The compile and export analyses run a class's forward on example inputs. fxscope looks for a "
        "forward call on literal tensors in the repository (tests, `__main__` blocks, README and docs "
        "code blocks, notebooks: `model(torch.randn(2, 3, 32, 32))`), the conventions of libraries "
        "(`example_input_array`, `dummy_inputs`, timm's `pretrained_cfg`), shapes in the forward's "
        "annotations or docstring (`x: Float[Tensor, \"b c h w\"]`) and the model's first layer, and "
        "keeps only inputs the eager forward runs on. Write such a call in a test, or configure a "
        "factory target with `inputs`.",
    ),
    Code(
        "FXS501", "shape-specialised", "info",
        "Shape-aware tracing specialised the graph on a shape",
        "With example inputs (`inputs` of a target), a question about a shape (`x.size(0)`, "
        "`len(x)`, `x.dim() == 2`, iterating a dimension) was answered from the example, so the "
        "graph is valid only for inputs where the answer is the same. To stay shape-generic, pass "
        "sizes straight to torch ops instead of Python control flow, select with `torch.where`, "
        "or state the assumption with `torch._check(...)`.",
    ),
    Code(
        "FXS601", "graph-break", "warning",
        "torch.compile breaks the graph here",
        "torch.compile (Dynamo) cannot capture this line in a graph: it compiles the code before it, "
        "runs this line in plain Python and starts a new graph after it (or runs the whole function "
        "eagerly). Each break costs a compiled region and the optimisations across it. The message "
        "and hints are torch's own (its graph-break registry); follow them, move the code out of "
        "the compiled region, or wrap it in `torch.compiler.disable` on purpose.",
        COMPILE_URL,
    ),
    Code(
        "FXS602", "recompilation", "info",
        "torch.compile recompiles the forward for another batch size",
        "A guard of the compiled forward failed on the second call (another batch size), so "
        "torch.compile traced and compiled it again; the guard that failed is in the message. "
        "Mark the batch dimension dynamic (`torch._dynamo.mark_dynamic(x, 0)`, or "
        "`torch.compile(dynamic=True)`), or avoid Python decisions on sizes.",
        COMPILE_URL,
    ),
    Code(
        "FXS603", "compile-failed", "error",
        "The forward raised under torch.compile",
        "Running the forward under torch.compile with the example inputs raised; the original "
        "error is kept. Check that the example inputs (`inputs` of the target) are valid for the "
        "model, then fix the code at the location shown.",
        COMPILE_URL,
    ),
    Code(
        "FXS701", "export-data-dependent", "error",
        "torch.export needs a value that depends on tensor data",
        "torch.export traces with symbolic values and cannot decide a condition or a size that "
        "depends on the data in a tensor. Express a data-dependent branch with "
        "`torch.cond(pred, true_fn, false_fn, operands)`; state a fact export cannot know with "
        "`torch._check(...)` before the line (`torch._check_is_size(n)` for a size).",
        EXPORT_URL,
    ),
    Code(
        "FXS702", "export-unsupported", "error",
        "torch.export cannot capture this Python construct",
        "Strict export (Dynamo) met code it cannot put in one graph (print, generators, "
        "unsupported builtins, calls into code it skips). Rewrite it with torch operations, move "
        "it out of the forward, or export non-strict (`export-strict = false`).",
        EXPORT_URL,
    ),
    Code(
        "FXS703", "export-constraint-violation", "error",
        "A dynamic dimension of torch.export was specialised",
        "The model only works for the example's size of a dimension declared dynamic (a "
        "`torch.export.Dim`): code compares or computes with it as a constant. Follow torch's "
        "suggested fix (the `Dim` with a range, or a static size), or keep the size generic.",
        EXPORT_URL,
    ),
    Code(
        "FXS704", "export-failed", "error",
        "torch.export failed",
        "torch.export raised an error of another kind; the original message is kept. Check that "
        "the model runs eagerly with the example inputs, then fix the code at the location shown.",
        EXPORT_URL,
    ),
]

#: Code string -> :class:`Code`.
CODES: dict[str, Code] = {c.code: c for c in _TABLE}


def finding_dict(code: str, message: str, **fields: object) -> dict[str, Any]:
    """A report-schema finding dict for ``code`` with its severity (``fields``: file, line, ...)."""
    return {"code": code, "severity": CODES[code].severity, "message": message, **fields}
