"""Zero-config coverage on a corpus of public PyTorch repositories: how much of a repository's own
model code ``fxscope check`` reaches when a user opens it with no configuration, and whether every
error it reports is one that plain ``torch.fx`` produces on the same build.

For each repository of ``REPOS`` (or ``--repos``), with a fresh cache directory and no fxscope
configuration (a repository's own ``pyproject.toml`` is used as it is), the script runs
``fxscope check REPO --format json --fail-on never`` in a subprocess, then the same check again on
the same cache, and prints:

- classes: the discovered class targets (``kind == "class"``);
- reached: classes traced as a target (status traced, partial or failed) or appearing as a module
  instance with status traced or failed inside any target (matched by qualified name
  ``module.Class``, or by the class's file and line);
- errors reported, targets by status, FXS405 (needs constructor arguments) count;
- first-run wall time and cached re-check wall time;
- plain-fx agreement: every target fxscope traced is rebuilt in a fresh process the way fxscope
  built it (:func:`rebuild`) and traced with plain ``torch.fx.symbolic_trace``. They agree when
  fxscope reports an error exactly when plain fx fails and, when it fails, the innermost workspace
  frame of plain fx's traceback is among fxscope's error locations (a finding's line or anchor).
  A false error is an fxscope error where plain fx traces; a missed failure the opposite.
- the eager re-check: every target with errors whose build fxscope made on its own (a ``build``
  record) is, where plain fx fails too, rebuilt once more in a fresh process of its own and run eagerly:
  on the example inputs fxscope inferred for it (the report's ``inputs``; the check runs with
  ``--analyses fx,export`` by default, since fxscope infers inputs when an analysis on real
  tensors is on; the model built on the CPU and seeded as fxscope's worker does), else, or when
  those leave it open, on an input guessed for its first layer (an image for a convolution, token
  ids for an embedding, features for a linear layer; meta tensors). ``r``: the forward runs, so the
  error is fx's; ``bf``: it fails with the same exception at the same line for every input tried,
  so the failure is the build's (a made-up value that does not fit), which must never be reported
  as an error; ``?``: no input could be made or it failed elsewhere (inconclusive). Under the row,
  the re-check's figures: errors and targets re-checked, eager ok (and how many on inferred
  inputs), same failure, inconclusive (each with why). Only fx's errors count here (compile's
  FXS6xx and export's FXS7xx are not compared with plain fx).

In the table, targets by status are t(raced) p(artial) f(ailed) e(rror) s(kipped), and the agreement
column is ``agree/compared`` then fe (false errors), mi (missed failures), mp (misplaced: plain fx
fails on a line fxscope does not report), nr (not rebuilt), and the eager re-check (r, bf, ?);
each one is listed under the row.
Then the totals: the share of classes reached overall and per repository, the agreement figures,
and each repository's figures against the "before" figures recorded in ``REPOS`` (measured on the
code before zero-config construction).

Getting the corpus (one checkout per repository, named ``OWNER+NAME``; the commits are in ``REPOS``;
``--print-setup DIR`` prints these commands for every repository)::

    git clone https://github.com/OWNER/NAME DIR/OWNER+NAME && git -C DIR/OWNER+NAME checkout COMMIT

Installing the extra packages the repositories import: fxscope runs their code in its own
interpreter, so they go into a separate environment with torch and fxscope. torchvision (which
vit-pytorch, PyTorch-VAE and parts of PyTorch-GAN and pytorch/examples import) installs only
without its dependencies beside the CPU torch wheel, and its meta registrations of C++ operators
that wheel lacks stop it from importing; ``--patch-torchvision`` makes those registrations
conditional in the interpreter's own copy (its C++ operators stay unavailable; the models here do
not call them). torchaudio (StyleTTS2) has no wheel for this torch; the flag also lets the newest
one import without its C++ extension. Where torchvision still does not import, the repositories
that need it are totalled apart::

    python -m venv .venv-corpus
    .venv-corpus/bin/pip install -r requirements/torch.txt
    .venv-corpus/bin/pip install -e . PACKAGES...     # the union of REPOS' packages (--print-setup)
    .venv-corpus/bin/pip install --no-deps torchvision==0.28.0 torchaudio==2.11.0 timm
    .venv-corpus/bin/python benchmarks/zero_config.py --patch-torchvision

A checkout of the corpus directory that ``REPOS`` does not list is measured too when ``--repos``
names it by its directory name (``OWNER+NAME``), with no recorded figures.

Usage: .venv-corpus/bin/python benchmarks/zero_config.py --corpus DIR [--repos nanoGPT,whisper]
       [--no-agreement] [--json OUT]

The script needs no network: it reads the checkouts and runs fxscope and python on them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DAEMON_DIR = Path(__file__).resolve().parent.parent / "daemon"
TRACED = ("traced", "partial", "failed")  # a target that was traced, with or without findings
REACHED_MODULE = ("traced", "failed")  # a module instance whose own forward was traced
VENV_DIRS = (".venv", "venv", "site-packages", "dist-packages", "node_modules", ".tox", ".nox")


@dataclass(frozen=True)
class Figures:
    """The figures of one repository that a later run is compared with."""

    classes: int
    reached: int
    errors: int
    fxs405: int
    false_errors: int = 0


@dataclass(frozen=True)
class Repo:
    """One corpus repository: where to get it, what it needs, what was measured on it."""

    name: str  # OWNER/NAME
    commit: str
    kind: str
    packages: tuple[str, ...] = ()  # extra pip packages its model files import
    before: Figures | None = None  # measured before zero-config construction
    #: Its model package imports torchvision (left out of the "importable" totals where torchvision
    #: does not import).
    needs_torchvision: bool = False

    @property
    def dirname(self) -> str:
        return self.name.replace("/", "+")


#: The corpus. ``before``: measured on the code before zero-config construction (fxscope 0.1.0,
#: torch 2.13 CPU, 2 cores, torchvision 0.28 patched to import), the issue's "about 1 in 10":
#: 105 of 802 classes reached (13.1%).
REPOS: tuple[Repo, ...] = (
    Repo("karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291", "GPT LLM (config dataclass)",
         before=Figures(classes=5, reached=0, errors=0, fxs405=5)),
    Repo("karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26", "GPT LLM (CfgNode config)",
         before=Figures(classes=4, reached=1, errors=0, fxs405=3)),
    Repo("pytorch-labs/gpt-fast", "32971d3129541c5bfb4f715abc33d1c5f408d204",
         "LLaMA-style LLM (rotary, KV cache, from_name)", ("sentencepiece",),
         before=Figures(classes=15, reached=0, errors=0, fxs405=15)),
    Repo("lucidrains/vit-pytorch", "69d24fe9e3024c0d4b02761123b8583a24ebed1e", "ViT collection", ("einops",),
         before=Figures(classes=356, reached=29, errors=31, fxs405=339), needs_torchvision=True),
    Repo("kentaroy47/vision-transformers-cifar10", "5bb83d36018b314c3020558541015bb01bce15bc",
         "ViT collection (argparse-built)", ("einops",),
         before=Figures(classes=49, reached=0, errors=0, fxs405=49)),
    Repo("lucidrains/x-transformers", "9252ed7838021ee61e6c5be0930b3a9a88efdf06", "transformer library",
         ("einops", "einx", "loguru", "packaging", "torch-einops-utils", "fire"),
         before=Figures(classes=88, reached=5, errors=7, fxs405=83)),
    Repo("openai/whisper", "c0d2f624c09dc18e709e37c2ad90c039a4eb72a2", "speech (encoder-decoder)",
         ("numba", "tiktoken", "more-itertools", "tqdm"),
         before=Figures(classes=8, reached=0, errors=0, fxs405=8)),
    Repo("openai/guided-diffusion", "22e0df8183507e13a7813f8d38d51b072ca1e67c", "diffusion UNet",
         before=Figures(classes=13, reached=2, errors=0, fxs405=11)),
    Repo("Tianxiaomo/pytorch-YOLOv4", "a65d219f9066bae4e12003bd7cdc04531860c672", "detection (YOLOv4)",
         ("opencv-python-headless",),
         before=Figures(classes=23, reached=20, errors=10, fxs405=5)),
    Repo("milesial/Pytorch-UNet", "21d7850f2af30a9695bbeea75f3136aa538cfc4a", "segmentation (UNet)",
         before=Figures(classes=5, reached=0, errors=0, fxs405=5)),
    Repo("alxndrTL/mamba.py", "2cc168c78b2494557f45072c4b8daa9d6f5608c7", "state-space models (Mamba)",
         before=Figures(classes=25, reached=0, errors=0, fxs405=25)),
    Repo("lucidrains/vector-quantize-pytorch", "0d7d1aa83334b6f2f8a40306bece75cdaa13d065", "vector quantisers",
         ("einops", "einx"), before=Figures(classes=21, reached=2, errors=3, fxs405=18)),
    Repo("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", "PyTorch examples",
         ("gymnasium", "tabulate", "matplotlib"),
         before=Figures(classes=67, reached=18, errors=13, fxs405=41)),
    Repo("eriklindernoren/PyTorch-GAN", "36d3c77e5ff20ebe0aeefd322326a134a279b93e", "GAN collection",
         before=Figures(classes=96, reached=27, errors=30, fxs405=35)),
    Repo("AntixK/PyTorch-VAE", "a6896b944c918dd7030e7d795a8c13e5c6345ec7", "VAE collection (yaml configs)",
         ("pyyaml", "pytorch_lightning"), before=Figures(classes=27, reached=1, errors=1, fxs405=26),
         needs_torchvision=True),
    # Measured first with zero-config construction in place (no "before" figures).
    Repo("microsoft/Swin-Transformer", "f82860bfb5225915aca09c3227159ee9e1df874d", "Swin (token grids, MoE, SimMIM)",
         ("yacs", "termcolor")),
    Repo("facebookresearch/detr", "29901c51d7fe8712168b8d0d64351170bc0f83e0", "detection transformer (NestedTensor)",
         ("scipy",), needs_torchvision=True),
    Repo("facebookresearch/ConvNeXt", "048efcea897d999aed302f2639b6270aedf8d4c8", "ConvNeXt (mmdet/mmseg backbones)",
         needs_torchvision=True),
    Repo("lucidrains/denoising-diffusion-pytorch", "faed4db28e724735323fa91c70aa9b28a6e1cbac", "diffusion collection",
         ("accelerate", "einops", "ema-pytorch", "pytorch-fid", "scipy", "tqdm"), needs_torchvision=True),
    Repo("yl4579/StyleTTS2", "5cedc71c333f8d8b8551ca59378bdcc7af4c9529", "speech synthesis (many small modules)",
         ("munch", "soundfile", "librosa", "nltk", "matplotlib", "einops", "einops-exts", "transformers", "accelerate",
          "pandas", "monotonic-align@git+https://github.com/resemble-ai/monotonic_align")),
)


# -- the check ------------------------------------------------------------------------------------

def clean_env() -> dict[str, str]:
    """The environment of a user who just opened the repository: no fxscope variables, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXSCOPE_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_check(python: str, repo_dir: Path, cache_dir: Path, timeout: float,
              analyses: str = "") -> tuple[dict[str, Any], float]:
    """``fxscope check`` on ``repo_dir`` as JSON (``analyses``: its ``--analyses``, else the
    repository's own setting), and its wall time in seconds."""
    cmd = [python, "-m", "fxscope", "check", str(repo_dir), "--root", str(repo_dir), "--format", "json",
           "--fail-on", "never", "--cache-dir", str(cache_dir)] + (["--analyses", analyses] if analyses else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, cwd=repo_dir, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"fxscope check exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout), elapsed


# -- module names, as fxscope's discovery gives them ----------------------------------------------

def python_path(repo_dir: Path) -> list[Path]:
    """fxscope's default ``python-path``: the root, and ``src/`` when it exists."""
    return [repo_dir, repo_dir / "src"] if (repo_dir / "src").is_dir() else [repo_dir]


def dotted(parts: list[str]) -> str | None:
    """``["pkg", "m.py"]`` -> ``"pkg.m"``; None when a part is not an identifier."""
    if not parts or not parts[-1].endswith(".py"):
        return None
    names = parts[:-1] + [parts[-1][:-3]]
    if names[-1] == "__init__":
        names.pop()
    return ".".join(names) if names and all(n.isidentifier() for n in names) else None


def module_name(repo_dir: Path, rel: str) -> str | None:
    """The dotted module name fxscope imports the workspace file ``rel`` as (None: by path)."""
    names = []
    for entry in python_path(repo_dir):
        prefix = "" if entry == repo_dir else entry.relative_to(repo_dir).as_posix() + "/"
        if rel.startswith(prefix):
            names.append(rel[len(prefix):].split("/"))
    return dotted(min(names, key=len)) if names else None


def import_root(repo_dir: Path, rel: str) -> tuple[str, str] | None:
    """(import root, module name) of a workspace file under a directory that is no import name,
    as fxscope's discovery gives them (``mixtral-moe/model.py``: ``model`` imported from
    ``mixtral-moe``); None for any other file."""
    from fxscope.project.files import script_module_name

    if module_name(repo_dir, rel) is not None:
        return None
    for entry in python_path(repo_dir):
        prefix = "" if entry == repo_dir else entry.relative_to(repo_dir).as_posix() + "/"
        if rel.startswith(prefix):
            found = script_module_name(rel[len(prefix):].split("/"),
                                       lambda d: (entry / d / "__init__.py").is_file())
            return None if found is None else (prefix + found[0], found[1])
    return None


def scope(repo_dir: Path, target: dict[str, Any]) -> str:
    """What the qualified class names met in ``target``'s trace are prefixed with to tell them
    from the same names elsewhere: its import root (see :func:`import_root`), else nothing."""
    rooted = import_root(repo_dir, target["file"]) if target["kind"] == "class" else None
    return "" if rooted is None else rooted[0] + "//"


def path_module_name(rel: str) -> str:
    """The name fxscope gives a workspace file it imports by path."""
    return "_fxscope_target_" + "".join(c if c.isalnum() else "_" for c in rel)


def qualname(target: dict[str, Any]) -> str:
    return target["id"].partition("::")[2]


def class_names(repo_dir: Path, target: dict[str, Any]) -> set[str]:
    """The qualified names (``module.Class``) a class target's instances can carry."""
    names = {f"{path_module_name(target['file'])}.{qualname(target)}"}
    module = module_name(repo_dir, target["file"])
    if module:
        names.add(f"{module}.{qualname(target)}")
    rooted = import_root(repo_dir, target["file"])
    if rooted:
        names.add(f"{scope(repo_dir, target)}{rooted[1]}.{qualname(target)}")
    return names


# -- the figures of one report --------------------------------------------------------------------

@dataclass
class Agreement:
    """Plain fx against fxscope on every traced target of one repository."""

    compared: int = 0
    agree: int = 0
    false_errors: list[str] = field(default_factory=list)  # fxscope error, plain fx traces
    missed: list[str] = field(default_factory=list)  # plain fx fails, fxscope has no error
    misplaced: list[str] = field(default_factory=list)  # both fail; plain fx's line not among fxscope's
    not_rebuilt: list[str] = field(default_factory=list)  # the rebuild itself raised or timed out
    #: Errors of automatic builds re-run eagerly on the same build: the forward runs (the error is
    #: fx's), fails the same way (the build's fault: must stay empty), or no input fitted.
    eager_runs: int = 0
    build_faults: list[str] = field(default_factory=list)
    #: The same, for a build the repository wrote (its defaults, a config, a call site): nothing was
    #: made up, so the eager failure is the model's own (it needs a setup call before forward, say).
    eager_fails_too: list[str] = field(default_factory=list)
    eager_inconclusive: int = 0
    eager_targets: int = 0  # the targets re-checked
    eager_errors: int = 0  # their fx errors
    eager_runs_inferred: int = 0  # of eager_runs: on the target's inferred inputs (the rest on a guess)
    eager_unsure: list[str] = field(default_factory=list)  # the inconclusive ones, and why


@dataclass
class RepoResult:
    name: str
    kind: str
    classes: int
    reached: int
    errors: int
    fxs405: int
    by_status: dict[str, int]
    first_s: float
    cached_s: float
    targets: int
    agreement: Agreement | None = None
    unreached: list[str] = field(default_factory=list)
    problem: str | None = None

    @property
    def share(self) -> float:
        return self.reached / self.classes if self.classes else 0.0

    def figures(self) -> Figures:
        false = len(self.agreement.false_errors) if self.agreement else 0
        return Figures(self.classes, self.reached, self.errors, self.fxs405, false)


def reached_classes(repo_dir: Path, report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reached, unreached) class target ids of ``report``."""
    seen_names: set[str] = set()
    seen_sites: set[tuple[str, int]] = set()
    for target in report["targets"]:
        where = scope(repo_dir, target)
        for row in target.get("modules") or ():
            if row["status"] in REACHED_MODULE:
                seen_names.add(where + row["type"])
                if "file" in row and "line" in row:
                    seen_sites.add((row["file"], row["line"]))
    reached, unreached = [], []
    for target in report["targets"]:
        if target["kind"] != "class":
            continue
        hit = (target["status"] in TRACED or bool(class_names(repo_dir, target) & seen_names)
               or (target["file"], target["line"]) in seen_sites)
        (reached if hit else unreached).append(target["id"])
    return reached, unreached


#: Codes of the analyses on real tensors (compile FXS6xx, export FXS7xx): not fx's errors.
NOT_FX = ("FXS6", "FXS7")


def is_fx_error(finding: dict[str, Any]) -> bool:
    """An error of the fx analysis (what plain ``torch.fx`` is compared with)."""
    return finding["severity"] == "error" and not finding["code"].startswith(NOT_FX)


def all_sites(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every finding of the report and every site of a grouped one (a library failure reached from
    several lines of a file is one finding whose other lines are its ``sites``)."""
    out = []
    for f in findings:
        out.append(f)
        out.extend(all_sites(f.get("sites") or []))
    return out


def errors_by_target(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """fx error findings per target id, grouped findings' sites included. One finding covers every
    target it was seen in: its own ``target`` and the ``target`` of each of its scopes."""
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in all_sites(report["findings"]):
        if is_fx_error(finding):
            targets = {finding["target"]} | {s["target"] for s in finding.get("scopes") or () if s.get("target")}
            for target in targets:
                out.setdefault(target, []).append(finding)
    return out


def error_locations(findings: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """Every (file, line) an error finding points at: its own location and its anchor."""
    out = set()
    for f in findings:
        out.add((f["file"], f["line"]))
        anchor = f.get("anchor")
        if anchor:
            out.add((anchor["file"], anchor["line"]))
    return out


# -- plain fx in a fresh process ------------------------------------------------------------------

def import_class(repo_dir: Path, target: dict[str, Any]) -> Any:
    """The class of a class target, imported as fxscope's worker imports it: a script (its top level
    trains, outside a main guard) through fxscope's safe executor, which runs its imports,
    definitions and settings (its argparse defaults) but not its work."""
    import ast
    import importlib
    import importlib.util
    import types

    from fxscope.project.toplevel import is_script
    from fxscope.project.work import Modules
    from fxscope.job.safe_module import run_script

    rooted = import_root(repo_dir, target["file"])
    module = rooted[1] if rooted else module_name(repo_dir, target["file"])
    path = repo_dir / target["file"]
    tree = ast.parse(path.read_bytes(), str(path))
    homes = [repo_dir / rooted[0], repo_dir] if rooted else [repo_dir]

    def find(name: str) -> str | None:  # the repository's own modules, as the worker reads them
        for home in homes:
            base = home.joinpath(*name.split("."))
            found = [c for c in (base / "__init__.py", base.with_suffix(".py")) if c.is_file()]
            if found:
                return str(found[0])
        return None

    modules = Modules(find, lambda p: Path(p).read_bytes(),
                      lambda level, name: level > 0 or find(name.partition(".")[0]) is not None)
    top = modules.toplevel(tree, module or path_module_name(target["file"]), path.name == "__init__.py")
    if is_script(tree, top=top):
        obj: Any = types.ModuleType(module or path_module_name(target["file"]))
        obj.__file__ = str(path)
        sys.modules[obj.__name__] = obj
        root = str(repo_dir.resolve()) + os.sep
        run_script(tree, obj, str(path), top, lambda file: file.startswith(root))
    elif module:
        obj = importlib.import_module(module)
    else:
        name = path_module_name(target["file"])
        spec = importlib.util.spec_from_file_location(name, repo_dir / target["file"])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {target['file']}")
        obj = importlib.util.module_from_spec(spec)
        sys.modules[name] = obj
        spec.loader.exec_module(obj)
    for part in qualname(target).split("."):
        obj = getattr(obj, part)
    return obj


def rebuild(repo_dir: Path, target: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """Build ``target`` (one entry of the JSON report's ``targets``) as fxscope built it: returns
    (module, concrete_args). A class target records how fxscope built it (``build``: its defaults,
    a config annotation, a call site, ...); it is rebuilt from that record with fxscope's recipe
    evaluator (the same constructors, nothing else), on the meta device (CPU when meta fails)."""
    from fxscope.trace.build import build_model

    if target["kind"] != "class":
        raise NotImplementedError(f"rebuilding a {target['kind']} target is not supported")
    build = target.get("build")
    if build is not None and build.get("kind") != "defaults":
        from fxscope.job.construct import rebuild as rebuild_recipe

        return rebuild_recipe(build, str(repo_dir.resolve())), None
    cls = import_class(repo_dir, target)
    built = build_model(cls, device="meta")
    return built.model, built.concrete_args


def rebuild_cpu(repo_dir: Path, target: dict[str, Any]) -> Any:
    """Build class ``target`` as fxscope built it, on the CPU, torch's generator seeded with 0 as
    fxscope's worker seeds it (the model its inferred inputs were checked on)."""
    import torch

    from fxscope.trace.build import build_model

    torch.manual_seed(0)
    build = target.get("build")
    if build is not None and build.get("kind") != "defaults":
        from fxscope.job.construct import rebuild as rebuild_recipe

        return rebuild_recipe(build, str(repo_dir.resolve()), device="cpu")
    return build_model(import_class(repo_dir, target), device="cpu").model


def inferred_kwargs(target: dict[str, Any]) -> dict[str, Any] | None:
    """The forward's keyword arguments made from the report's inferred ``inputs`` of ``target``
    (seeded CPU tensors, as fxscope's analyses make them); None when it has none."""
    from fxscope.trace.examples import real_inputs
    from fxscope.trace.inputs import InputSpec

    inputs = target.get("inputs")
    if not inputs:
        return None
    return real_inputs({n: InputSpec(tuple(s["shape"]), s["dtype"]) for n, s in inputs["specs"].items()})


def innermost_workspace_frame(repo_dir: Path, e: BaseException) -> tuple[str, int] | None:
    """(root-relative file, line) of the innermost frame of ``e``'s traceback inside the workspace."""
    prefix = str(repo_dir.resolve()) + os.sep
    best = None
    tb = e.__traceback__
    while tb is not None:
        raw = tb.tb_frame.f_code.co_filename
        path = os.path.abspath(raw)
        if (not raw.startswith("<") and path.startswith(prefix)
                and not any(f"{os.sep}{d}{os.sep}" in path[len(prefix) - 1:] for d in VENV_DIRS)):
            best = (Path(path).relative_to(repo_dir.resolve()).as_posix(), tb.tb_lineno)
        tb = tb.tb_next
    return best


def plain_fx(repo_dir: Path, target: dict[str, Any]) -> dict[str, Any]:
    """Rebuild ``target`` and trace it with plain ``torch.fx.symbolic_trace`` (run in a fresh
    process: :func:`main` with ``--plain-fx``)."""
    import torch

    torch.set_num_threads(1)
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # user code never comes from here
    entries = python_path(repo_dir)
    for entry in reversed(entries):
        sys.path.insert(0, str(entry))
    directory = (repo_dir / target["file"]).parent
    if directory != repo_dir and not (directory / "__init__.py").exists():  # a directory of scripts, as fxscope
        sys.path.insert(len(entries), str(directory))
    rooted = import_root(repo_dir, target["file"]) if target["kind"] == "class" else None
    if rooted:  # its import root first, as fxscope's worker has it
        sys.path.insert(0, str(repo_dir / rooted[0]))
    os.chdir(repo_dir)
    sys.argv = [str(repo_dir / target["file"])]  # as fxscope's worker: the file run with no arguments
    eager = target.get("_eager")
    if eager is not None:  # the eager re-check, in a process of its own (fx's trace leaves state behind:
        # einops caches its recipes with the proxies of the trace)
        return eager_recheck(repo_dir, target, eager["error_type"], eager.get("location"))
    try:
        model, concrete = rebuild(repo_dir, target)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything
        return {"rebuilt": False, "error": f"{type(e).__name__}: {e}"[:500]}
    try:
        torch.fx.symbolic_trace(model, concrete_args=concrete)
    except BaseException as e:  # noqa: BLE001
        return {"rebuilt": True, "traced": False, "error": f"{type(e).__name__}: {e}"[:500],
                "location": innermost_workspace_frame(repo_dir, e), "concrete": concrete is not None}
    return {"rebuilt": True, "traced": True}


def example_inputs(model: Any) -> list[Any]:
    """Inputs to try for an eager run of a one-argument ``forward``: shaped for the model's first
    layer (an image for a convolution, token ids for an embedding, features for a linear layer)."""
    import inspect

    import torch
    from torch import nn

    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []
    if len(params) != 1:
        return []
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    for layer in model.modules():
        if isinstance(layer, nn.Conv2d):
            return [torch.zeros(2, layer.in_channels, s, s, device=device) for s in (32, 64, 224)]
        if isinstance(layer, nn.Conv1d):
            return [torch.zeros(2, layer.in_channels, s, device=device) for s in (64, 256)]
        if isinstance(layer, nn.Conv3d):
            return [torch.zeros(2, layer.in_channels, 8, 32, 32, device=device)]
        if isinstance(layer, nn.Embedding):
            return [torch.zeros(2, s, dtype=torch.long, device=device) for s in (16, 64)]
        if isinstance(layer, nn.Linear):
            return [torch.zeros(2, 16, layer.in_features, device=device), torch.zeros(2, layer.in_features, device=device)]
    return []


def eager_recheck(repo_dir: Path, target: dict[str, Any], error_type: str, location: Any) -> dict[str, Any]:
    """The same build run eagerly (the verdicts of :func:`eager_verdict`): on the target's inferred
    inputs when the report has them (the model built on the CPU, as they were checked there), else,
    or when they leave it inconclusive, on the guessed inputs of :func:`example_inputs` (a meta
    build). ``by``: the inputs that gave the verdict (``inferred`` or ``guess``)."""
    where = tuple(location) if location else None
    if target.get("inputs"):
        try:
            model = rebuild_cpu(repo_dir, target)
            kwargs = inferred_kwargs(target) or {}
        except BaseException as e:  # noqa: BLE001 - user code may raise anything
            return {"rebuilt": False, "error": f"{type(e).__name__}: {e}"[:500]}
        verdict = eager_verdict(repo_dir, lambda _: model(**kwargs), [None], error_type, where)
        if verdict != "inconclusive":
            return {"rebuilt": True, "eager": verdict, "by": "inferred"}
        del model, kwargs
    try:
        model, _ = rebuild(repo_dir, target)
    except BaseException as e:  # noqa: BLE001
        return {"rebuilt": False, "error": f"{type(e).__name__}: {e}"[:500]}
    return {"rebuilt": True, "by": "guess",
            "eager": eager_verdict(repo_dir, model, example_inputs(model), error_type, where)}


def eager_verdict(repo_dir: Path, forward: Any, inputs: list[Any], error_type: str,
                  location: tuple[str, int] | None) -> str:
    """``forward`` run eagerly on each of ``inputs``: ``runs`` (the error is fx's), ``same`` (it
    fails with the same exception at the same line for every input tried: the build's fault), else
    ``inconclusive`` (no input, or it fails elsewhere: an input that does not fit)."""
    import torch

    if not inputs:
        return "inconclusive"
    same = 0
    for x in inputs:
        try:
            with torch.no_grad():
                forward(x)
        except BaseException as e:  # noqa: BLE001 - model code may raise anything
            if type(e).__name__ == error_type and innermost_workspace_frame(repo_dir, e) == location:
                same += 1
            continue
        return "runs"
    return "same" if same == len(inputs) else "inconclusive"


def plain_fx_in_fresh_process(python: str, repo_dir: Path, target: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fxscope-plainfx-") as tmp:
        out = Path(tmp) / "result.json"
        env = clean_env()
        env["PYTHONPATH"] = os.pathsep.join([str(DAEMON_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        try:
            proc = subprocess.run([python, str(Path(__file__).resolve()), "--plain-fx", str(repo_dir), str(out)],
                                  check=False, input=json.dumps(target), cwd=repo_dir, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"rebuilt": False, "error": f"timed out after {timeout:.0f} s"}
        if not out.exists():
            return {"rebuilt": False, "error": f"the process exited {proc.returncode}: {proc.stderr.strip()[-300:]}"}
        return json.loads(out.read_text())


def agreement(python: str, repo_dir: Path, report: dict[str, Any], timeout: float, verbose: bool) -> Agreement:
    result = Agreement()
    errors = errors_by_target(report)
    for target in report["targets"]:
        if target["status"] not in TRACED:
            continue
        plain = plain_fx_in_fresh_process(python, repo_dir, target, timeout)
        tid = target["id"]
        if not plain["rebuilt"]:
            result.not_rebuilt.append(f"{tid}: {plain['error']}")
            continue
        result.compared += 1
        ours = errors.get(tid, [])
        if plain["traced"] and not ours:
            result.agree += 1
        elif plain["traced"]:
            result.false_errors.append(f"{tid}: " + "; ".join(f"{f['code']} {f['file']}:{f['line']}" for f in ours))
        elif not ours:
            result.missed.append(f"{tid}: plain fx {plain['error']} at {plain['location']}")
        elif plain["location"] is None or tuple(plain["location"]) in error_locations(ours):
            result.agree += 1
        else:
            result.misplaced.append(f"{tid}: plain fx at {plain['location']}, fxscope at "
                                    + ", ".join(f"{f['file']}:{f['line']}" for f in ours))
        if ours and not plain["traced"] and target.get("build") is not None and not plain.get("concrete"):
            # an automatic build: is it the build's fault? The same build, eagerly, in a fresh process
            check = dict(target, _eager={"error_type": plain["error"].split(":")[0], "location": plain["location"]})
            eager = plain_fx_in_fresh_process(python, repo_dir, check, timeout)
            plain["eager"] = eager.get("eager", "inconclusive")
            result.eager_targets += 1
            result.eager_errors += len(ours)
            if plain["eager"] == "runs":
                result.eager_runs += 1
                result.eager_runs_inferred += eager.get("by") == "inferred"
            elif plain["eager"] == "same":
                note = (f"{tid}: eager {plain['error']} at {plain['location']} too "
                        f"(built as {target['build']['text']}, {target['build']['kind']}; {eager.get('by')} inputs)")
                from fxscope.model.recipe import INVENTED_KINDS

                invented = target["build"]["kind"] in INVENTED_KINDS
                (result.build_faults if invented else result.eager_fails_too).append(note)
            else:
                result.eager_inconclusive += 1
                why = eager.get("error") or ("the inferred inputs and the guess fail elsewhere" if target.get("inputs")
                                             else "no inferred inputs; the guess fails elsewhere or none fits")
                tried = [f["message"] for f in report["findings"] if f["code"] == "FXS409" and f["target"] == tid]
                if tried and not target.get("inputs"):  # what fxscope tried (or that its time ran out)
                    why += f" (FXS409: {' '.join(tried[0].split())[:240]})"
                result.eager_unsure.append(f"{tid}: {why}")
        if verbose:
            print(f"    {tid}: plain fx {'traces' if plain['traced'] else 'fails'}, fxscope "
                  f"{len(ours)} error(s)", flush=True)
    return result


# -- one repository, the table --------------------------------------------------------------------

def measure(python: str, repo: Repo, repo_dir: Path, args: argparse.Namespace) -> RepoResult:
    cache = Path(tempfile.mkdtemp(prefix="fxscope-zc-cache-"))
    try:
        report, first = run_check(python, repo_dir, cache, args.check_timeout, args.analyses)
        again, cached = run_check(python, repo_dir, cache, args.check_timeout, args.analyses)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    del again
    reached, unreached = reached_classes(repo_dir, report)
    findings = report["findings"]
    result = RepoResult(
        name=repo.name, kind=repo.kind, classes=len(reached) + len(unreached), reached=len(reached),
        errors=sum(is_fx_error(f) for f in findings),
        fxs405=sum(f["code"] == "FXS405" for f in findings),
        by_status=dict(Counter(t["status"] for t in report["targets"])),
        first_s=first, cached_s=cached, targets=len(report["targets"]), unreached=unreached)
    if args.agreement:
        result.agreement = agreement(python, repo_dir, report, args.plain_timeout, args.verbose)
    return result


def fmt_status(by_status: dict[str, int]) -> str:
    order = ("traced", "partial", "failed", "error", "skipped")
    return " ".join(f"{s[0]}{by_status[s]}" for s in order if by_status.get(s))


def print_row(r: RepoResult) -> None:
    a = r.agreement
    agree = (f"{a.agree}/{a.compared} fe{len(a.false_errors)} mi{len(a.missed)} mp{len(a.misplaced)}"
             f" nr{len(a.not_rebuilt)} eager r{a.eager_runs} bf{len(a.build_faults)} ef{len(a.eager_fails_too)}"
             f" ?{a.eager_inconclusive}"
             ) if a else "-"
    print(f"{r.name:40} {r.classes:5} {r.reached:5} {r.share:6.1%} {r.errors:5} {r.fxs405:5} "
          f"{fmt_status(r.by_status):24} {r.first_s:7.1f} {r.cached_s:6.2f}  {agree}", flush=True)


HEADER = (f"{'repository':40} {'class':>5} {'reach':>5} {'share':>6} {'err':>5} {'405':>5} "
          f"{'targets by status':24} {'first s':>7} {'cached':>6}  plain-fx agreement")


def print_details(r: RepoResult, before: Figures | None) -> None:
    a = r.agreement
    if a:
        for label, items in (("FALSE ERROR", a.false_errors), ("missed failure", a.missed),
                             ("misplaced", a.misplaced), ("not rebuilt", a.not_rebuilt),
                             ("BUILD'S FAULT (eager fails the same way)", a.build_faults),
                             ("eager fails too (a written build: the model's own failure)", a.eager_fails_too),
                             ("eager inconclusive", a.eager_unsure)):
            for item in items:
                print(f"    {label}: {item}")
        if a.eager_targets:
            print(f"    eager re-check: {a.eager_errors} errors in {a.eager_targets} automatic builds; eager ok "
                  f"(fx's error) {a.eager_runs} ({a.eager_runs_inferred} on inferred inputs, "
                  f"{a.eager_runs - a.eager_runs_inferred} on the guess); same failure eagerly (the build's "
                  f"fault) {len(a.build_faults)}; same failure on a written build (the model's own) "
                  f"{len(a.eager_fails_too)}; inconclusive {a.eager_inconclusive}")
    if before is not None and before != r.figures():
        print(f"    before: {before}  now: {r.figures()}")


def share_line(label: str, results: list[RepoResult]) -> str:
    classes = sum(r.classes for r in results)
    reached = sum(r.reached for r in results)
    shares = [r.share for r in results if r.classes]
    return (f"{label}: {reached}/{classes} classes reached = {reached / classes if classes else 0:.1%} overall; "
            f"mean per-repository share {sum(shares) / len(shares) if shares else 0:.1%} "
            f"over {len(shares)} repositories")


def totals(results: list[RepoResult], python: str) -> None:
    """The figures over every repository measured (``python``: the interpreter that ran fxscope)."""
    repos = {repo.name: repo for repo in REPOS}
    repos.update({r.name: Repo(r.name, "", r.kind) for r in results if r.name not in repos})
    print()
    print(share_line("total", results))
    blocked = [r for r in results if repos[r.name].needs_torchvision] if not torchvision_imports(python) else []
    if blocked:
        print(share_line("importable here", [r for r in results if r not in blocked])
              + f" (without {', '.join(r.name for r in blocked)}: their model packages import torchvision, "
                "which does not import in this environment; see --patch-torchvision)")
    print(f"errors {sum(r.errors for r in results)}, FXS405 {sum(r.fxs405 for r in results)}, "
          f"first runs {sum(r.first_s for r in results):.1f} s (max {max(r.first_s for r in results):.1f} s), "
          f"cached re-checks max {max(r.cached_s for r in results):.2f} s")
    agreed = [r.agreement for r in results if r.agreement]
    if agreed:
        print(f"plain fx: {sum(a.agree for a in agreed)}/{sum(a.compared for a in agreed)} traced targets agree; "
              f"false errors {sum(len(a.false_errors) for a in agreed)}, missed failures "
              f"{sum(len(a.missed) for a in agreed)}, misplaced {sum(len(a.misplaced) for a in agreed)}, "
              f"not rebuilt {sum(len(a.not_rebuilt) for a in agreed)}")
        print(f"errors of automatic builds re-run eagerly on the same build in a fresh process: "
              f"{sum(a.eager_errors for a in agreed)} errors in {sum(a.eager_targets for a in agreed)} targets; "
              f"{sum(a.eager_runs for a in agreed)} run (fx's error; "
              f"{sum(a.eager_runs_inferred for a in agreed)} on inferred inputs), "
              f"{sum(len(a.build_faults) for a in agreed)} fail the same way (the build's fault), "
              f"{sum(a.eager_inconclusive for a in agreed)} inconclusive (no fitting input)")
    befores = [(r, b) for r in results if (b := repos[r.name].before) is not None]
    if befores:
        bc, br = sum(b.classes for _, b in befores), sum(b.reached for _, b in befores)
        nc, nr = sum(r.classes for r, _ in befores), sum(r.reached for r, _ in befores)
        print(f"before: {br}/{bc} = {br / bc if bc else 0:.1%}; now: {nr}/{nc} = {nr / nc if nc else 0:.1%} "
              f"(the {len(befores)} repositories with recorded figures)")


def torchvision_imports(python: str) -> bool:
    """Whether ``import torchvision`` works in the interpreter that runs fxscope."""
    proc = subprocess.run([python, "-c", "import torchvision"], capture_output=True, text=True, timeout=300,
                          check=False)
    return proc.returncode == 0


def patch_torchvision() -> str:
    """Make torchvision's fake-kernel registrations of its C++ operators conditional on those
    operators existing (they do not beside the CPU torch wheel), in this interpreter's own copy."""
    import importlib.util

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return "torchvision is not installed in this interpreter (pip install --no-deps torchvision==0.28.0)"
    path = Path(list(spec.submodule_search_locations)[0]) / "_meta_registrations.py"
    text = path.read_text(encoding="utf-8")
    if "_fake_if_ops" in text:
        return f"already patched: {path}"
    guard = (
        "def _fake_if_ops(name):\n"
        "    \"\"\"register_fake only where torchvision's C++ operators loaded (not beside a CPU-only torch).\"\"\"\n"
        "    if torchvision.extension._has_ops():\n"
        "        return torch.library.register_fake(name)\n"
        "    return lambda fn: fn\n\n\n")
    text = text.replace("@torch.library.register_fake(", "@_fake_if_ops(")
    text = text.replace("def register_meta(op_name", guard + "def register_meta(op_name", 1)
    path.write_text(text, encoding="utf-8")
    return f"patched {path}"


def patch_torchaudio() -> str:
    """Let torchaudio import without its C++ extension, which is built for another torch (no
    torchaudio wheel matches the CPU torch 2.13): its Python transforms and functionals work, its
    C++ operators stay unavailable (the models here do not call them)."""
    import importlib.util

    spec = importlib.util.find_spec("torchaudio")
    if spec is None or not spec.submodule_search_locations:
        return "torchaudio is not installed in this interpreter (pip install --no-deps torchaudio==2.11.0)"
    path = Path(list(spec.submodule_search_locations)[0]) / "_extension" / "__init__.py"
    text = path.read_text(encoding="utf-8")
    old = '_IS_TORCHAUDIO_EXT_AVAILABLE = _load_lib("_torchaudio")'
    if old not in text or f"try:\n    {old}" in text:
        return f"nothing to patch: {path}"
    text = text.replace(old, "try:\n    " + old + "\nexcept OSError:  # built for another torch\n"
                        "    _IS_TORCHAUDIO_EXT_AVAILABLE = False", 1)
    path.write_text(text, encoding="utf-8")
    return f"patched {path}"


def print_setup(corpus: Path, repos: list[Repo]) -> None:
    for repo in repos:
        d = corpus / repo.dirname
        print(f"git clone https://github.com/{repo.name} {d} && git -C {d} checkout {repo.commit}")
    packages = sorted({p for repo in repos for p in repo.packages})
    print(f".venv-corpus/bin/pip install -e . {' '.join(packages)}")
    print(".venv-corpus/bin/pip install --no-deps torchvision==0.28.0 torchaudio==2.11.0 timm")
    print(".venv-corpus/bin/python benchmarks/zero_config.py --patch-torchvision")


def select(spec: str | None, corpus: Path | None = None) -> list[Repo]:
    """The repositories ``spec`` names: those of :data:`REPOS`, and any other checkout of the
    corpus by its directory name (``OWNER+NAME``: measured with no recorded figures)."""
    if not spec:
        return list(REPOS)
    wanted = [s.strip().lower() for s in spec.split(",") if s.strip()]

    def named(w: str, r: Repo) -> bool:
        return w in (r.name.lower(), r.name.lower().split("/")[1], r.dirname.lower())

    chosen = [r for r in REPOS if any(named(w, r) for w in wanted)]
    others = {d.name.lower(): d.name for d in corpus.iterdir() if "+" in d.name} if corpus and corpus.is_dir() else {}
    unknown = []
    for w in wanted:
        if any(named(w, r) for r in REPOS):
            continue
        if w.replace("/", "+") in others:
            chosen.append(Repo(others[w.replace("/", "+")].replace("+", "/", 1), "", "outside the recorded corpus"))
        else:
            unknown.append(w)
    if unknown:
        raise SystemExit(f"unknown repositories: {', '.join(unknown)} (known: {', '.join(r.name for r in REPOS)})")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="directory with one checkout per repository (OWNER+NAME)")
    parser.add_argument("--repos", help="comma-separated subset (OWNER/NAME, NAME or OWNER+NAME)")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with fxscope and the repositories' packages (default: this one)")
    parser.add_argument("--no-agreement", dest="agreement", action="store_false",
                        help="skip the plain-fx comparison")
    parser.add_argument("--check-timeout", type=float, default=1800.0, help="seconds per fxscope check")
    parser.add_argument("--analyses", default="fx,export",
                        help="fxscope check --analyses: an analysis on real tensors (compile, export) makes "
                             "fxscope infer each class's example inputs, which the eager re-check runs first; "
                             "'' for the repository's own setting (fx only: the re-check guesses inputs)")
    parser.add_argument("--plain-timeout", type=float, default=120.0, help="seconds per plain-fx rebuild and trace")
    parser.add_argument("--json", type=Path, help="also write every figure (and the unreached classes) here")
    parser.add_argument("--print-setup", type=Path, metavar="DIR",
                        help="print the clone and install commands for a corpus in DIR and exit")
    parser.add_argument("--verbose", action="store_true", help="print every plain-fx comparison")
    parser.add_argument("--patch-torchvision", action="store_true",
                        help="make this interpreter's torchvision and torchaudio importable beside the CPU torch "
                        "wheel and exit")
    parser.add_argument("--plain-fx", nargs=2, metavar=("REPO_DIR", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.plain_fx:  # the fresh process: target JSON on stdin, result JSON to OUT
        repo_dir, out = Path(args.plain_fx[0]).resolve(), Path(args.plain_fx[1])
        result = plain_fx(repo_dir, json.loads(sys.stdin.read()))
        out.write_text(json.dumps(result))
        return 0
    if args.patch_torchvision:
        print(patch_torchvision())
        print(patch_torchaudio())
        return 0
    repos = select(args.repos, args.corpus)
    if args.print_setup:
        print_setup(args.print_setup, repos)
        return 0
    if args.corpus is None:
        parser.error("--corpus is required")
    results: list[RepoResult] = []
    print(HEADER)
    for repo in repos:
        repo_dir = (args.corpus / repo.dirname).resolve()
        if not repo_dir.is_dir():
            print(f"{repo.name:40} missing: {repo_dir} (see --print-setup)", flush=True)
            continue
        try:
            result = measure(args.python, repo, repo_dir, args)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            print(f"{repo.name:40} check failed: {e}", flush=True)
            continue
        results.append(result)
        print_row(result)
        print_details(result, repo.before)
    if results:
        totals(results, args.python)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"share": r.share} for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
