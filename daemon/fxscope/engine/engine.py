"""The incremental core shared by every front end: targets -> cache or worker jobs -> results.

The engine owns the state (config, cache, file hashes, worker pool); workers get a job dict and
return a result dict. Answering from the cache never imports torch or starts a worker.

>>> import tempfile, pathlib
>>> ws = pathlib.Path(tempfile.mkdtemp())
>>> with Engine(ws) as engine:
...     engine.check().results
[]
"""

from __future__ import annotations

import functools
import importlib.util
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Union

from fxscope import __version__
from fxscope.errors import CheckInterrupted, TorchUnavailableError, WorkerStartError
from fxscope.cache import FileHasher, ResultCache, claim_directory, hash_json, hash_text
from fxscope.engine.dispatch import BACKGROUND, Dispatcher
from fxscope.engine.faults import cacheable, fault_result, read_fault
from fxscope.engine.phases import analysable, merge, phase_priority, split
from fxscope.model.fault import Fault
from fxscope.engine.results import CheckResult, TargetResult, drop_covered_skips, relativize, skipped_result
from fxscope.engine.workspace_state import WorkspaceState
from fxscope.project.config import Config, load_config, target_line
from fxscope.model import Snapshot, TargetOutcome
from fxscope.model.sandbox import SandboxStatus
from fxscope.model.wire import WireError
from fxscope.project.discovery import Discovery, Target, discover
from fxscope.project.files import ABSENT, is_under

if TYPE_CHECKING:
    from fxscope.job.trace_job import TraceJob

__all__ = ["ABSENT", "Engine", "ProgressEvent", "installed_torch_version"]

#: Version of what the engine stores per target (2: root-relative paths; 3: class targets carry the
#: key of the recipes they were built from, and their build; 4: notebooks, and scripts imported
#: without their work; 5: scripts' argparse defaults, and the job's argv is the target's file; 6: scripts
#: by what their top level calls, and the safe evaluator runs no workspace code; 7: analysis summaries under
#: ``analyses``, read strictly; 8: a target that runs fx and other analyses is cached per phase, and an
#: outcome says which analyses ran on its inferred ``inputs``); part of every cache key: an entry of an older
#: format is a miss, never misread.
PAYLOAD_FORMAT = 8

#: Characters of a job's captured stdout/stderr kept with its result (the tail).
OUTPUT_KEPT = 8192

#: How long :meth:`Engine.run` waits for the next job before caching the results it delivered,
#: and how many it keeps uncached at most.
_STORE_DELAY_S = 0.005
_MAX_UNSTORED = 8

#: What :meth:`Engine.run` accepts as ``cancel``: an event cancelling every job, or a predicate
#: telling, per target, whether its job is stale (a newer snapshot superseded it).
Cancel = Union[threading.Event, Callable[[Target], bool], None]


class _Overlays:
    """The buffers of one immutable snapshot as the engine uses them: texts keyed by absolute path
    (sent to the worker) and text hashes keyed by root-relative path (passed to the hasher)."""

    __slots__ = ("texts", "digests")

    def __init__(self, texts: dict[str, str], digests: dict[str, str]) -> None:
        self.texts, self.digests = texts, digests


def installed_torch_version() -> str:
    """torch's installed version (``torch.__version__``), read from ``torch/version.py`` without
    importing torch (package metadata is the fallback; both are cheap, the first much cheaper)."""
    try:
        spec = importlib.util.find_spec("torch")  # finds the package, does not run it
        if spec is not None and spec.origin:
            with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("__version__"):
                        return line.split("=", 1)[1].strip().strip("'\"")
    except (ImportError, OSError, ValueError, UnicodeDecodeError):
        pass
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "unknown"


class ProgressEvent:
    """Progress of a check: ``done`` of ``total`` targets, the last finished ``target`` id, and
    ``answered``: the targets whose fx phase answered (the done ones, and those whose
    compile/export phase runs)."""

    __slots__ = ("done", "total", "target", "cached", "answered")

    def __init__(self, done: int, total: int, target: str, cached: bool, answered: int | None = None) -> None:
        self.done, self.total, self.target, self.cached = done, total, target, cached
        self.answered = done if answered is None else answered


class Engine:
    """Checks the targets of one workspace, incrementally, with isolated workers and a cache.

    Args:
        root: the workspace root.
        config: its configuration (read from ``root/pyproject.toml`` when omitted).
        cache_dir: where results are cached (default: config ``cache-dir`` or ``root/.fxscope_cache``).
        workers: parallel trace jobs (default: config ``workers`` or the number of cores).
        on_warning: receives one-line warnings (corrupt cache rebuilt, preload failure, ...).
    """

    def __init__(self, root: Path, config: Config | None = None, *, cache_dir: Path | None = None,
                 workers: int | None = None, on_warning: Callable[[str], None] | None = None) -> None:
        self.root = Path(root).resolve()
        self.config = config or load_config(self.root)
        self.on_warning = on_warning or (lambda msg: None)
        directory = cache_dir or self.config.cache_dir or self.root / ".fxscope_cache"
        # a cache-dir that fxscope did not create gets an fxscope/ sub-directory of its own
        self.cache = ResultCache(claim_directory(Path(directory)), on_warning=self.on_warning)
        self.hasher = FileHasher(self.root)
        # recorded file signatures and the last discovery: an unchanged check re-reads nothing
        self.state = WorkspaceState(self.config, self.cache, self.hasher)
        self.workers = workers or self.config.workers or os.cpu_count() or 1
        self.torch_version = installed_torch_version()
        context = {
            "config": self.config.fingerprint(),
            "torch": self.torch_version,
            "fxscope": __version__,
            "python": list(sys.version_info[:2]),
            "payload": PAYLOAD_FORMAT,
            # what model code may do (write, connect) changes what it does: results of another sandbox differ
            "sandbox": self._expected_sandbox().kind,
        }
        self.context = hash_json(context)
        # each phase of a split target is keyed by the settings of its own analyses only
        later = tuple(n for n in self.config.all_analyses if n != "fx")
        self.contexts = {"all": self.context,
                         "fx": hash_json({**context, "phase": "fx", "config": self.config.fingerprint(("fx",))}),
                         "analyses": hash_json({**context, "phase": "analyses",
                                                "config": self.config.fingerprint(later)})}
        self._pool: Any = None
        self._dispatcher: Dispatcher | None = None  # orders the jobs of concurrent runs on the pool
        self._lock = threading.Lock()
        #: Installed libraries the workspace imports, imported once by the pool's zygote (set from
        #: the first discovery a run gets, before the pool starts).
        self._libraries: tuple[str, ...] = ()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers and close the cache."""
        with self._lock:
            if self._dispatcher is not None:
                self._dispatcher.close()
                self._dispatcher = None
            if self._pool is not None:
                self._pool.close()
                self._pool = None
        self.cache.close()

    def adopt_workers(self, other: "Engine") -> bool:
        """Take over ``other``'s warm worker pool when it fits (same ``preload`` and width), so a
        configuration change does not pay torch's start-up again; ``other`` loses it."""
        if (other.config.preload != self.config.preload or other.workers != self.workers
                or other.config.python_path != self.config.python_path or other.root != self.root
                or other.config.all_analyses != self.config.all_analyses
                or other.config.sandbox != self.config.sandbox):
            return False
        with other._lock, self._lock:
            if other._pool is None or self._pool is not None:
                return False
            self._pool, other._pool = other._pool, None
            self._dispatcher, other._dispatcher = other._dispatcher, None  # its runs keep their order
        return True

    @property
    def pool(self) -> Any:
        """The worker pool, created on first use (so cached answers never start torch)."""
        with self._lock:
            if self._pool is None:
                from fxscope.worker.pool import WorkerPool
                from fxscope.worker.runner import WARM_ANALYSES_ENV

                log = self.cache_directory / "worker.log"
                # python-path is on the zygote's sys.path before preload runs (a workspace package
                # is never shadowed by an installed copy); root: it lists the files preload imported
                libraries = [name for name in self._libraries if name not in self.config.preload]
                # the zygote warms up the analyses the workspace runs (torch._dynamo for compile, ...)
                env = {WARM_ANALYSES_ENV: ",".join(self.config.all_analyses)}
                self._pool = WorkerPool(preload=self.config.preload, max_workers=self.workers, log_path=log,
                                        sys_path=[str(p) for p in self.config.python_path], root=self.root,
                                        libraries=libraries, env=env, sandbox=self.config.sandbox)
            return self._pool

    @property
    def dispatcher(self) -> Dispatcher:
        """The job order over the worker pool, shared by every concurrent :meth:`run`."""
        pool = self.pool
        with self._lock:
            if self._dispatcher is None or self._dispatcher.pool is not pool:
                self._dispatcher = Dispatcher(pool, self.workers)
            return self._dispatcher

    def worker_info(self) -> dict[str, Any] | None:
        """What the started worker zygote reported about itself (its torch version, the files
        ``preload`` imported), or None before it has started. Never starts it."""
        with self._lock:
            pool = self._pool
        info = pool.info if pool is not None else None
        return info if isinstance(info, dict) else None

    def _expected_sandbox(self) -> SandboxStatus:
        from fxscope.worker.sandbox import expected

        return expected(self.config.sandbox)

    def sandbox_status(self) -> SandboxStatus:
        """Whether user code runs in the OS sandbox: what the worker's zygote got once it is ready,
        before that what it would get. Never starts it."""
        info = self.worker_info()
        got = SandboxStatus.from_json(info.get("sandbox")) if info else None
        return got if got is not None else self._expected_sandbox()

    @property
    def cache_directory(self) -> Path:
        """The cache directory in use."""
        return self.cache.directory

    # ------------------------------------------------------------------ targets
    def discover(self, overlays: Mapping[str, str] | Snapshot | None = None) -> Discovery:
        """Targets of the workspace (AST only); ``overlays`` maps absolute paths to buffer text
        (or is a :class:`~fxscope.model.Snapshot`)."""
        texts = overlays.texts if isinstance(overlays, Snapshot) else (overlays or {})
        if not texts:
            return self.state.discover()
        ov = {Path(k): v for k, v in texts.items()}
        return discover(self.config, overlays=ov or None)

    def select(self, discovery: Discovery, paths: Iterable[Path] | None = None,
               target_ids: Iterable[str] | None = None, shard: tuple[int, int] | None = None) -> list[Target]:
        """Targets defined under ``paths`` (files or directories), or with the given ids, then the
        ``shard`` ``(i, n)`` (1-based) of them: sorted ids dealt round-robin, so shards are
        disjoint and their union is the whole."""
        targets = sorted(discovery.targets, key=lambda t: t.id)
        if target_ids is not None:
            wanted = set(target_ids)
            targets = [t for t in targets if t.id in wanted]
        if paths is not None:
            rels = [self._rel(Path(p)) for p in paths]
            targets = [t for t in targets if any(is_under(t.file, r) for r in rels)]
        if shard is not None:
            i, n = shard
            targets = [t for k, t in enumerate(targets) if k % n == i - 1]
        return targets

    def _rel(self, path: Path) -> str:
        ab = path if path.is_absolute() else (Path.cwd() / path)
        try:
            rel = os.path.relpath(ab.resolve(), self.root)
        except ValueError:
            return "\0"
        return "" if rel == "." else rel.replace(os.sep, "/")

    # ------------------------------------------------------------------ running
    def _overlays(self, overlays: Mapping[str, str] | Snapshot | None) -> _Overlays:
        """The workspace buffers of ``overlays`` (absolute path -> text, or a snapshot), for the
        jobs and the hasher of one run; nothing is stored on the engine or the hasher."""
        texts = overlays.texts if isinstance(overlays, Snapshot) else (overlays or {})
        wanted: dict[str, str] = {}
        for path, text in texts.items():
            rel = self._rel(Path(path))
            if rel.startswith("..") or rel == "\0":
                continue
            wanted[rel] = text
        return _Overlays({str(self.root / rel): text for rel, text in wanted.items()},
                         {rel: hash_text(text) for rel, text in wanted.items()})

    def _job(self, target: Target, overlays: dict[str, str], phase: str = "all",
             fx: TargetOutcome | None = None) -> TraceJob:
        from fxscope.job.trace_job import TraceJob  # with the pool: a cached check imports neither

        fallback = self._fallback(target)
        return TraceJob(str(self.root), self.config, target, fallback_file=fallback["file"],
                        fallback_line=fallback["line"], overlays=overlays, timeout=self.config.timeout,
                        memory_limit_mb=self.config.memory_limit_mb,
                        sys_path=tuple(str(p) for p in self.config.python_path), phase=phase,
                        build=fx.build if fx is not None else None)

    def _fallback(self, t: Target) -> dict[str, Any]:
        """Where a target's finding goes when no workspace frame is involved: its class line, or
        (a factory outside the workspace) its table in ``pyproject.toml``; never a directory."""
        if t.file:
            return {"file": str(self.root / t.file), "line": max(t.line, 1)}
        source = self.config.source or self.root / "pyproject.toml"
        return {"file": str(source), "line": target_line(self.config, t.id)}

    def _static_deps(self, target: Target, discovery: Discovery | None,
                     digests: Mapping[str, str] | None = None) -> dict[str, str]:
        files = {target.file} if target.file else set()
        if discovery is not None and target.file:
            todo = deque([target.file])
            while todo:
                f = todo.popleft()
                for dep in discovery.imports.get(f, ()):
                    if dep not in files:
                        files.add(dep)
                        todo.append(dep)
        deps = {}
        for f in files:
            h = self.hasher.hash(f, digests)
            if h is not None:
                deps[f] = h
        return deps

    def run(self, targets: list[Target], *, overlays: Mapping[str, str] | Snapshot | None = None,
            discovery: Discovery | None = None,
            on_result: Callable[[TargetResult], None] | None = None,
            cancel: Cancel = None, use_cache: bool = True,
            on_cancelled: Callable[[Target], None] | None = None,
            retry_faults: bool = False, graphs: bool = True,
            priority: Callable[[Target], int] | None = None) -> list[TargetResult]:
        """Results for ``targets`` under the buffers of ``overlays`` (an immutable snapshot, or
        absolute path -> text): from the cache when every recorded file is unchanged, else traced
        in workers (in parallel).

        ``cancel``: an event (set -> every running job is killed) or a predicate called per
        unfinished target (true -> that target's job is killed). A cancelled target is left out of
        the result and reported to ``on_cancelled``; its previous result stays wherever the caller
        keeps it (the session's store, the cache), it is never replaced by a partial one.

        A result's ``cached`` is true when it came from the cache (nothing was run); skipped
        targets (FXS405) are cached like traced ones, keyed by their class's file and imports.
        Faults (timeouts, crashes) are cached like any result: an unchanged workspace never pays
        a timeout twice; ``retry_faults`` runs the targets whose cached result is a fault again
        (``fxscope check --retry-faults``, the server's re-trace command). ``graphs`` false leaves
        the FX graphs out of cached results (they are most of a real model's result).

        Jobs start in the order of ``priority(target)`` (lower first; asked again whenever a worker
        is free, across every concurrent run of this engine; see :mod:`fxscope.engine.dispatch`),
        else in the order of ``targets``.

        A target that runs fx and other analyses runs in two phases (:mod:`fxscope.engine.phases`),
        each cached on its own: ``on_result`` first gets its fx phase's answer with ``pending``
        naming the analyses still to run (its analyses phase is queued at
        :func:`~fxscope.engine.phases.phase_priority`: an open file's after the fx of the open and
        imported files, the rest after every fx phase), then the merged result, which alone is in the returned list."""
        view = self._overlays(overlays)
        digests = view.digests
        if discovery is not None and self._pool is None:
            self._libraries = discovery.libraries
        abs_overlays = view.texts

        def current(rel: str) -> str:
            return self._current_hash(rel, digests)
        results: list[TargetResult] = []
        misses: list[tuple[Target, str]] = []  # (target, phase) to run
        warned: set[str] = set()
        later = {t.id: split(self.config, t.id) for t in targets}  # the analyses of a split target's second phase
        fx_of: dict[str, TargetResult] = {}  # the fx phase's result of a target whose analyses phase runs
        hits: dict[str, dict[str, Any]] = {phase: {} for phase in self.contexts}
        if use_cache:
            for phase, ids in (("all", [t.id for t in targets if not later[t.id]]),
                               ("fx", [t.id for t in targets if later[t.id]]),
                               ("analyses", [t.id for t in targets if later[t.id]])):
                if ids:
                    hits[phase] = self.cache.lookup_many(ids, self.contexts[phase], current, graphs=graphs)
        for t in targets:
            first = "fx" if later[t.id] else "all"
            cached = _cached_outcome(t, hits[first].get(t.id), retry_faults)
            if cached is not None:
                r = TargetResult(t, cached, cached=True)
                self._warn(r.outcome.warnings, warned)  # e.g. a bad leaf-modules entry: said on every check
                if later[t.id] and analysable(cached):
                    second = _cached_outcome(t, hits["analyses"].get(t.id), retry_faults)
                    if second is None or second.build != cached.build:
                        fx_of[t.id] = r
                        misses.append((t, "analyses"))
                        if on_result:
                            on_result(replace(r, pending=later[t.id]))  # fx's answer, while the analyses run
                        continue
                    r = TargetResult(t, merge(cached, second, later[t.id]), cached=True)
            elif t.needs_args and not t.recipes:
                r = skipped_result(t)
                deps = self._static_deps(t, discovery, digests)
                if deps:
                    self.cache.store(t.id, self.contexts[first], deps, r.outcome.to_json())
            else:
                misses.append((t, first))
                continue
            results.append(r)
            if on_result:
                on_result(r)
        self.state.save()
        if not misses:
            return results
        preload_deps = self._preload_deps()
        done: "queue.Queue[tuple[Target, str, Any, float]]" = queue.Queue()
        handles: dict[tuple[str, str], tuple[Target, Any]] = {}
        dispatcher = self.dispatcher

        def submit(t: Target, phase: str) -> None:
            start = time.perf_counter()
            fx = fx_of.get(t.id)
            job = self._job(t, abs_overlays, phase, fx.outcome if fx is not None else None).to_json()
            h = dispatcher.submit(job, _phase_priority(priority, t, phase))
            h.add_done_callback(functools.partial(_put, done, t, phase, start))
            handles[(t.id, phase)] = (t, h)

        for t, phase in misses:
            submit(t, phase)
        remaining = len(handles)
        # Results are cached while the engine would otherwise wait: a 2,000-node result takes
        # ~4 ms to serialise, holding the GIL, which the caller's thread (the editor's event loop)
        # needs first to show the result.
        unstored: list[tuple[str, str, dict[str, str], dict[str, Any]]] = []
        try:
            while remaining:
                try:
                    t, phase, handle, start = done.get(timeout=_STORE_DELAY_S if unstored else 0.05)
                except queue.Empty:
                    if unstored:
                        self._store(unstored)
                    self._cancel_stale(handles, cancel)
                    continue
                remaining -= 1
                asked = (t.id, phase) not in handles  # _cancel_stale removes the jobs it cancels
                handles.pop((t.id, phase), None)
                raw = handle.result()
                if raw.get("startup"):  # the worker never started: one error, not a finding per target
                    _cancel_all(handles)
                    error = TorchUnavailableError if raw.get("no_torch") else WorkerStartError
                    raise error(str(raw.get("message") or "the worker did not start"))
                if raw.get("fault") == "cancelled" and not asked:  # the pool was closed under us
                    _cancel_all(handles)
                    raise CheckInterrupted(f"the check was interrupted before {t.id} finished "
                                           "(its worker was stopped)")
                if raw.get("fault") == "cancelled":
                    if on_cancelled:
                        on_cancelled(t)  # (an analyses phase's: the fx phase's answer stays delivered)
                    continue
                r, deps, body = self._result_from_raw(t, raw, handle, start, discovery, warned, digests,
                                                      preload_deps)
                built = fx_of[t.id].outcome.build if phase == "analyses" else None
                if built is not None and r.outcome.build is None:  # a fault: it is still for the model fx built
                    body["build"] = built.to_json()
                    r = replace(r, outcome=replace(r.outcome, build=built))
                if deps:
                    unstored.append((t.id, self.contexts[phase], deps, body))
                if phase == "fx" and analysable(r.outcome):
                    hit = (self.cache.lookup(t.id, self.contexts["analyses"], current, graphs=graphs)
                           if use_cache else None)
                    second = _cached_outcome(t, hit, retry_faults)
                    if second is None or second.build != r.outcome.build:
                        fx_of[t.id] = r
                        if on_result:
                            on_result(replace(r, pending=later[t.id]))  # fx's answer, while the analyses run
                        submit(t, "analyses")
                        remaining += 1
                        continue
                    r = replace(r, outcome=merge(r.outcome, second, later[t.id]))
                elif phase == "analyses":
                    fx = fx_of.pop(t.id)
                    r = TargetResult(t, merge(fx.outcome, r.outcome, later[t.id]), cached=False,
                                     duration_ms=fx.duration_ms + r.duration_ms)
                results.append(r)
                if on_result:
                    on_result(r)  # first: the caller (the editor's diagnostics) need not wait for the cache
                if len(unstored) >= _MAX_UNSTORED:
                    self._store(unstored)
            if unstored and on_result:
                time.sleep(_STORE_DELAY_S)  # the caller's threads show the last result first
        finally:  # what reached the caller is cached, even when the run is interrupted
            self._store(unstored)
        self.state.save()
        return results

    def _store(self, unstored: list[tuple[str, str, dict[str, str], dict[str, Any]]]) -> None:
        """Cache the results of ``unstored`` (target id, context, dependencies, body) and empty it."""
        for tid, context, deps, body in unstored:
            self.cache.store(tid, context, deps, body)
        unstored.clear()

    @staticmethod
    def _cancel_stale(handles: dict[tuple[str, str], tuple[Target, Any]], cancel: Cancel) -> None:
        """Kill the jobs that ``cancel`` (an event, or a per-target predicate) says are stale;
        they leave ``handles`` (each is asked once), their outcome still arrives as cancelled."""
        if cancel is None:
            return
        if isinstance(cancel, threading.Event):
            stale = list(handles) if cancel.is_set() else []
        else:
            stale = [key for key, (t, _) in handles.items() if cancel(t)]
        for key in stale:
            handles.pop(key)[1].cancel()

    def _preload_deps(self) -> dict[str, str]:
        """The workspace files ``preload`` imported into the zygote (root-relative path -> hash of
        the source it ran), a dependency of every result traced from it. When one has changed
        since, the zygote is restarted first, so no child runs the old code."""
        if not self.config.preload:
            return {}
        pool = self.pool
        info = pool.ensure_started()
        files = dict(info.get("preload_files") or {})
        if any(self._current_hash(rel) != digest for rel, digest in files.items()):
            pool.restart()
            info = pool.ensure_started()
            files = dict(info.get("preload_files") or {})
        return files

    def _current_hash(self, rel: str, digests: Mapping[str, str] | None = None) -> str:
        """The hash a cached dependency must still have: the file's, or ``ABSENT`` when it does not
        exist (a module that failed to import because it was missing; ``dir/`` names a package
        directory, which counts as present when it exists)."""
        if rel.endswith("/"):
            return "dir" if os.path.isdir(self.root / rel) else ABSENT
        return self.hasher.hash(rel, digests) or ABSENT

    def _result_from_raw(self, t: Target, raw: dict[str, Any], handle: Any, start: float,
                         discovery: Discovery | None, warned: set[str] | None = None,
                         digests: Mapping[str, str] | None = None,
                         preload_deps: Mapping[str, str] | None = None
                         ) -> tuple[TargetResult, dict[str, str], dict[str, Any]]:
        """The result of ``t`` from its job's ``raw`` answer (an outcome, or a fault), the
        dependencies to cache it under (empty: not cacheable) and the body to cache. ``raw`` is
        owned by this call and is reused as the body; it is read once, strictly
        (:meth:`TargetOutcome.from_json`): a malformed answer (user code may have patched json,
        ...) becomes an FXS404 finding, never a crash and never a result it did not say."""
        duration = getattr(handle, "duration_ms", None) or (time.perf_counter() - start) * 1000
        fault = read_fault(raw) if "fault" in raw else None
        body = raw if fault is None else fault_result(fault, self._fallback(t), str(self.root)).to_json()
        try:
            outcome, body = self._read_body(t, body)
        except (WireError, TypeError, RecursionError) as problem:  # TypeError: an unhashable key, ...
            output = raw.get("output")
            fault = Fault("crash", message=f"the tracing process returned a malformed result ({problem})",
                          output=output if isinstance(output, str) else None)
            outcome, body = self._read_body(t, fault_result(fault, self._fallback(t), str(self.root)).to_json())
        if fault is not None:
            deps, keep = self._static_deps(t, discovery, digests), cacheable(fault)
        else:
            deps, keep = dict(outcome.files), True
            if t.file and t.file not in deps:
                h = self.hasher.hash(t.file, digests)
                if h:
                    deps[t.file] = h
        self._warn(outcome.warnings, warned)
        if preload_deps:
            deps.update(preload_deps)
        return TargetResult(t, outcome, cached=False, duration_ms=duration), (deps if keep else {}), body

    def _read_body(self, t: Target, body: dict[str, Any]) -> tuple[TargetOutcome, dict[str, Any]]:
        """``body`` (a job's answer, absolute paths) as the cache keeps it (root-relative paths,
        the target's build key, the output's tail) and read as ``t``'s outcome; raises
        :class:`~fxscope.model.wire.WireError` when it is malformed."""
        if not isinstance(body, dict):
            raise WireError(f"a {type(body).__name__}, not an object")
        body = _relative_paths(body, str(self.root))
        if t.kind == "class":
            body["build_key"] = t.build_key()
        output = body.get("output")
        if isinstance(output, str) and len(output) > OUTPUT_KEPT:
            body["output"] = "... [output truncated] ...\n" + output[-OUTPUT_KEPT:]
        return TargetOutcome.from_json(body, target=t.id), body

    def _warn(self, warnings: Iterable[str], warned: set[str] | None) -> None:
        """Pass a result's warnings to ``on_warning``, each once per run."""
        for w in warnings:
            if warned is None or w not in warned:
                if warned is not None:
                    warned.add(w)
                self.on_warning(w)

    def check(self, paths: Iterable[Path] | None = None, *, graphs: bool = False,
              shard: tuple[int, int] | None = None, target_ids: Iterable[str] | None = None,
              overlays: Mapping[str, str] | Snapshot | None = None,
              on_progress: Callable[[ProgressEvent], None] | None = None,
              cancel: Cancel = None, use_cache: bool = True, retry_faults: bool = False) -> CheckResult:
        """Check the workspace (or ``paths``) under the buffers of ``overlays`` (an immutable
        snapshot, or absolute path -> text). Front ends render the typed result as the report with :func:`fxscope.report.build.check_report`."""
        started = time.perf_counter()
        discovery = self.discover(overlays)
        targets = self.select(discovery, paths, target_ids, shard)
        total = len(targets)
        counter = [0]
        answered: set[str] = set()

        def progress(r: TargetResult) -> None:
            answered.add(r.target.id)
            if not r.pending:  # (a pending one is its fx phase's answer: done when its analyses are)
                counter[0] += 1
            if on_progress:
                on_progress(ProgressEvent(counter[0], total, r.target.id, r.cached, len(answered)))

        results = self.run(targets, overlays=overlays, discovery=discovery, on_result=progress,
                           cancel=cancel, use_cache=use_cache, retry_faults=retry_faults, graphs=graphs)
        results = drop_covered_skips(results)
        file_errors = discovery.file_errors
        if paths is not None:
            rels = [self._rel(Path(p)) for p in paths]
            file_errors = [e for e in file_errors if any(is_under(e.file, r) for r in rels)]
        torch_version = next((r.outcome.torch for r in results if r.outcome.torch), self.torch_version)
        return CheckResult(str(self.root), torch_version, results, file_errors=list(file_errors),
                           graphs=graphs, duration_ms=(time.perf_counter() - started) * 1000,
                           sandbox=self.sandbox_status())


def _put(done: "queue.Queue[tuple[Target, str, Any, float]]", target: Target, phase: str, start: float,
         handle: Any) -> None:
    done.put((target, phase, handle, start))


def _phase_priority(priority: Callable[[Target], int] | None, target: Target, phase: str) -> Callable[[], int] | None:
    """``priority`` of ``target``'s job of ``phase``, asked later (see
    :func:`~fxscope.engine.phases.phase_priority`). Without ``priority`` (a CLI check) every job is
    background work, the fx phases first, so none preempts an analyses phase, which would only run
    again."""
    if priority is None:
        return lambda: phase_priority(BACKGROUND, phase)
    return lambda: phase_priority(priority(target), phase)


def _cancel_all(handles: dict[tuple[str, str], tuple[Target, Any]]) -> None:
    """Cancel every job still running when a check ends with an error."""
    for _, handle in handles.values():
        handle.cancel()


def _cached_outcome(t: Target, hit: Any, retry_faults: bool) -> TargetOutcome | None:
    """The outcome of ``t``'s cache entry ``hit``, or None when it is a miss: no entry, an entry
    of the wrong shape (edited by hand, another version), a fault being retried, or a class built
    under other recipes (or that needs arguments now, or no longer)."""
    if hit is None:
        return None
    try:
        outcome = TargetOutcome.from_json(hit.payload, target=t.id)
    except (WireError, TypeError, RecursionError):
        return None
    if (retry_faults and outcome.fault) or (t.kind == "class" and outcome.build_key != t.build_key()):
        return None
    return outcome


def _relative_paths(value: Any, root: str) -> Any:
    """``value`` with every ``"file"`` entry under ``root`` made root-relative (recursively, in
    place: the bodies passed here are owned by the engine; a 2,000-node result is ~10,000 dicts,
    and copying them cost the editor tens of milliseconds), so a cached result stays right when
    the workspace is moved or copied (CI caches, checkouts). Graph nodes (a node's only location
    is its own ``file``) are visited without walking their other fields. Returns ``value``."""
    made: dict[str, str] = {}  # a graph's thousands of nodes name the same few files

    def rel(path: str) -> str:
        out = made.get(path)
        if out is None:
            out = made[path] = relativize(path, root)
        return out

    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if k == "file":
                    if isinstance(v, str):
                        item[k] = rel(v)
                elif k == "graphs" and item is value and isinstance(v, list):
                    _relative_node_paths(v, rel)
                elif k != "files" and isinstance(v, (dict, list)):  # "files" is root-relative already
                    stack.append(v)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return value


def _relative_node_paths(graphs: list[Any], rel: Callable[[str], str]) -> None:
    for g in graphs:
        ends = g.get("ends") if isinstance(g, dict) else None  # the graph break that ended a compiled graph
        if isinstance(ends, dict) and isinstance(ends.get("file"), str):
            ends["file"] = rel(ends["file"])
        nodes = g.get("nodes") if isinstance(g, dict) else None
        for node in nodes if isinstance(nodes, list) else ():
            if isinstance(node, dict):
                file = node.get("file")
                if isinstance(file, str):
                    node["file"] = rel(file)
