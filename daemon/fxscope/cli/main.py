"""``fxscope`` command line: ``check``, ``graph``, ``init``, ``watch``, ``daemon`` and ``serve``.

Exit codes: 0 nothing at or above ``--fail-on``; 1 findings; 2 usage or configuration error.
"""

from __future__ import annotations

import dataclasses
import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from fxscope import __version__

if TYPE_CHECKING:  # the subcommands import what they use when they run (a fast --help)
    from fxscope.engine import Engine, ProgressEvent
    from fxscope.model import Report
    from fxscope.project.config import Config

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument or configuration: one line, exit 2."""


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N (e.g. 2/4), got {text!r}") from None
    if not (n >= 1 and 1 <= i <= n):
        raise argparse.ArgumentTypeError(f"shard {text!r} out of range: need 1 <= I <= N")
    return i, n


def _analyses(text: str) -> tuple[str, ...]:
    """Analysis names, each once (which names exist is checked with the configuration: its
    ``plugins`` may register more)."""
    from fxscope.project.config import ANALYSES

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names or not all(re.fullmatch(r"[a-z][a-z0-9_-]*", n) for n in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(ANALYSES)} (each once), "
                                         f"got {text!r}")
    return names


def _codes(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} out of range")
    return (host.strip("[]") or "127.0.0.1"), number


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from fxscope.report.filters import FAIL_ON
    from fxscope.cli.formats import FORMATS

    parser = argparse.ArgumentParser(prog="fxscope", description="Find the lines of PyTorch model code that torch.fx cannot trace.")
    parser.add_argument("--version", action="version", version=f"fxscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, help="workspace root (default: found from the paths or the current directory)")
    common.add_argument("--cache-dir", type=Path, help="result cache directory (default: ROOT/.fxscope_cache)")
    common.add_argument("--no-cache", action="store_true", help="trace every target, ignoring cached results")
    common.add_argument("--workers", type=int, help="parallel trace jobs (default: number of cores)")

    engine_only = argparse.ArgumentParser(add_help=False)
    engine_only.add_argument("--no-sandbox", action="store_true",
                             help="run the workspace's code without the OS sandbox (it may then write files and "
                                  "connect; as `sandbox = false` in [tool.fxscope])")

    check = sub.add_parser("check", parents=[common, engine_only], help="check a workspace and report findings")
    check.add_argument("paths", nargs="*", type=Path, help="files or directories (default: the workspace)")
    check.add_argument("--format", choices=FORMATS, default="text")
    check.add_argument("--fail-on", choices=FAIL_ON, default="error", help="lowest severity that fails (exit 1)")
    check.add_argument("--select", type=_codes, action="extend", help="only these codes or prefixes (FXS1, FXS101)")
    check.add_argument("--ignore", type=_codes, action="extend", help="drop these codes or prefixes")
    check.add_argument("--baseline", type=Path, help="report only findings not in this baseline file")
    check.add_argument("--update-baseline", action="store_true", help="write today's findings to --baseline and exit 0")
    check.add_argument("--shard", type=_shard, help="check only shard I of N (deterministic split of targets)")
    check.add_argument("--analyses", type=_analyses, metavar="A,B",
                       help="the workspace's analyses for this check: fx, compile, export (as `analyses` in "
                            "[tool.fxscope]; classes get inferred example inputs for compile and export)")
    check.add_argument("--graphs", action="store_true", help="include every FX graph in --format json")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.add_argument("--daemon", action="store_true", help="ask the warm background daemon (starts it if needed)")
    check.add_argument("--html-report", type=Path, metavar="DIR",
                       help="also write DIR/index.html: every target's graph and findings, linked to source snippets")
    check.add_argument("--show-info", action="store_true",
                       help="list info-level findings in text output (default: one line per code)")
    check.add_argument("--retry-faults", action="store_true",
                       help="trace again the targets whose cached result is a timeout or crash")

    graph = sub.add_parser("graph", parents=[common, engine_only], help="print the FX graph(s) of a target")
    graph.add_argument("target", help="target id (path/file.py::Class or a factory name), or a unique class name")
    graph.add_argument("--module", default=None, help="only the graph of this module path ('' = root)")
    graph.add_argument("--format", choices=("text", "dot", "json", "html"), default="text")

    init = sub.add_parser("init", parents=[common, engine_only],
                          help="write factories and targets for the classes fxscope builds on its own")
    init.add_argument("--module", default="fxscope_targets",
                      help="module the factories go to, in the first python-path directory (default: fxscope_targets)")
    init.add_argument("--dry-run", action="store_true", help="print what would be written, write nothing")

    daemon = sub.add_parser("daemon", parents=[common, engine_only], help="manage the warm background daemon")
    daemon.add_argument("action", choices=("start", "stop", "status", "run"))

    watch = sub.add_parser("watch", parents=[common, engine_only], help="re-check on every file change, print what changed")
    watch.add_argument("paths", nargs="*", type=Path, help="report only these files or directories")
    watch.add_argument("--debounce", type=float, default=None, metavar="S",
                       help="quiet seconds after a burst of changes before re-checking it (default: the editor's)")
    watch.add_argument("--color", choices=("auto", "always", "never"), default="auto")

    serve = sub.add_parser("serve", help="run the language server (stdio unless --tcp)")
    serve.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    serve.add_argument("--tcp", type=_host_port, metavar="[HOST:]PORT",
                       help="listen on TCP instead (HOST defaults to 127.0.0.1)")
    return parser


def _find_root(args: argparse.Namespace, paths: Sequence[Path]) -> Path:
    from fxscope.project.config import find_root

    if args.root is not None:
        if not args.root.is_dir():
            raise UsageError(f"--root {args.root} is not a directory")
        return args.root.resolve()
    for p in paths:
        if not p.exists():
            raise UsageError(f"{p}: no such file or directory")
    start = paths[0] if paths else Path.cwd()
    return find_root(start.resolve())


def _load_config(root: Path, args: argparse.Namespace | None = None) -> Config:
    """The workspace's configuration, with ``--no-sandbox`` applied when ``args`` has it."""
    from fxscope.project.config import ConfigError, load_config

    try:
        config = load_config(root)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    if args is not None and getattr(args, "no_sandbox", False):
        if getattr(args, "daemon", False):
            raise UsageError("--no-sandbox does not reach the background daemon: start it with `fxscope daemon "
                             "start --no-sandbox`, set `sandbox = false` in [tool.fxscope], or check without --daemon")
        config = dataclasses.replace(config, sandbox=False)
    if args is not None and getattr(args, "analyses", None):
        if getattr(args, "daemon", False):
            raise UsageError("--analyses does not reach the background daemon: set `analyses` in [tool.fxscope], "
                             "or check without --daemon")
        from fxscope.project.config import ANALYSES

        unknown = [n for n in args.analyses if n not in ANALYSES]
        if unknown and not config.plugins:
            raise UsageError(f"--analyses: {unknown[0]!r} is not one of {', '.join(ANALYSES)} (a plug-in in "
                             f"`plugins` of [tool.fxscope] may register more)")
        config = dataclasses.replace(config, analyses=args.analyses)
    return config


def _use_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _warn(msg: str) -> None:
    sys.stderr.write(f"fxscope: warning: {msg}\n")


def _engine(args: argparse.Namespace, root: Path, config: Config) -> Engine:
    from fxscope.engine import Engine

    return Engine(root, config, cache_dir=args.cache_dir.resolve() if args.cache_dir else None,
                  workers=args.workers, on_warning=_warn)


def _run_check(args: argparse.Namespace, root: Path, config: Config) -> Report:
    paths = [p.resolve() for p in args.paths] or None
    if args.daemon:
        from fxscope.cli.daemon import check_via_daemon

        return check_via_daemon(root, args, paths)
    from fxscope.cli.progress import Progress
    from fxscope.report.build import check_report

    with _engine(args, root, config) as engine, Progress() as progress:
        def on_progress(ev: ProgressEvent) -> None:
            phases = f"fx {ev.answered}/{ev.total}, analyses running: " if ev.answered > ev.done else ""
            progress.update(ev.done, ev.total, phases + ev.target)

        return check_report(engine.check(paths, graphs=args.graphs, shard=args.shard, on_progress=on_progress,
                                         use_cache=not args.no_cache, retry_faults=args.retry_faults))


def cmd_check(args: argparse.Namespace) -> int:
    """``fxscope check``."""
    from fxscope.report import baseline, filters
    from fxscope.cli.formats import render

    root = _find_root(args, args.paths)
    config = _load_config(root, args)
    if args.update_baseline and args.baseline is None:
        raise UsageError("--update-baseline needs --baseline FILE")
    try:  # reject a bad selector before spending a check on it
        filters.parse_selectors(args.select or [])
        filters.parse_selectors(args.ignore or [])
    except ValueError as e:
        raise UsageError(str(e)) from None
    want_graphs = args.graphs
    if args.html_report is not None:
        args.graphs = True  # the HTML report draws every target's graph
    report = _run_check(args, root, config)
    report = filters.select_findings(report, args.select, args.ignore)
    report = filters.apply_suppressions(report, root)
    if args.baseline is not None:
        if args.update_baseline:
            count = baseline.write_baseline(args.baseline, report, root)
            sys.stderr.write(f"fxscope: wrote {count} findings to {args.baseline}\n")
            return EXIT_OK
        try:
            report = baseline.filter_baseline(report, args.baseline, root)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.html_report is not None:
        from fxscope.cli.graph_output import write_html_report

        try:
            report = write_html_report(report, args.html_report, root, keep_graphs=want_graphs)
        except OSError as e:
            raise UsageError(f"cannot write the HTML report to {args.html_report}: {e.strerror or e}") from None
    if args.format in ("text", "json"):  # one finding per library cause and file; SARIF and GitHub keep each line
        from fxscope.report.causes import group_report

        report = group_report(report)
    # text lists info findings when asked, or when --select kept them (it named them)
    options = {"show_info": bool(args.show_info or args.select)} if args.format == "text" else {}
    sys.stdout.write(render(report, args.format, color=_use_color(args.color), root=root, **options))
    sys.stdout.flush()
    return filters.exit_code(report, args.fail_on)


def cmd_graph(args: argparse.Namespace) -> int:
    """``fxscope graph``."""
    from fxscope.cli.graph_output import GraphTargetError, render_graphs, resolve_target
    from fxscope.report.build import check_report

    root = _find_root(args, [])
    config = _load_config(root, args)
    try:
        with _engine(args, root, config) as engine:
            target = resolve_target(engine.discover(), args.target)
            report = check_report(engine.check(target_ids=[target.id], graphs=True, use_cache=not args.no_cache))
        sys.stdout.write(render_graphs(report, target.id, args.module, args.format, root=root))
    except GraphTargetError as e:
        raise UsageError(str(e)) from None
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    """``fxscope init``: pin the inferred builds as factories and targets."""
    from fxscope.cli.init_targets import init_workspace, print_summary
    from fxscope.cli.progress import Progress
    from fxscope.engine.results import drop_covered_skips

    if not args.module.isidentifier():
        raise UsageError(f"--module {args.module!r} is not a module name")
    root = _find_root(args, [])
    config = _load_config(root, args)
    with _engine(args, root, config) as engine, Progress() as progress:
        check = engine.check(use_cache=not args.no_cache,
                             on_progress=lambda ev: progress.update(ev.done, ev.total, ev.target))
        libraries = engine.discover().libraries
    try:
        result = init_workspace(root, config, drop_covered_skips(check.results), module=args.module,
                                dry_run=args.dry_run, libraries=libraries)
    except OSError as e:
        raise UsageError(f"cannot write: {e}") from None
    print_summary(result, root, args.dry_run)
    if args.dry_run:
        sys.stdout.write(result.factories_added + ("\n" if result.factories_added else "") + result.targets_added)
    return EXIT_OK


def cmd_daemon(args: argparse.Namespace) -> int:
    """``fxscope daemon start|stop|status|run``."""
    from fxscope.cli import daemon

    root = _find_root(args, [])
    if args.action in ("start", "run"):  # stop and status must work with a broken config too
        _load_config(root)
    return daemon.command(args.action, root, args)


def cmd_watch(args: argparse.Namespace) -> int:
    """``fxscope watch``: re-check on file changes through the session's scheduler."""
    from fxscope.cli.watch import watch
    from fxscope.session import SessionSettings
    from fxscope.session.data import DEFAULT_DEBOUNCE_S

    root = _find_root(args, args.paths)
    _load_config(root)
    debounce = args.debounce if args.debounce is not None else DEFAULT_DEBOUNCE_S
    settings = SessionSettings(debounce_s=debounce, workers=args.workers, use_cache=not args.no_cache,
                               cache_dir=args.cache_dir.resolve() if args.cache_dir else None,
                               sandbox=False if args.no_sandbox else None)
    paths = [p.resolve() for p in args.paths] or None
    return watch(root, paths, settings=settings, color=_use_color(args.color))


def cmd_serve(args: argparse.Namespace) -> int:
    """``fxscope serve``: the language server."""
    from fxscope.lsp.server import serve

    if args.stdio and args.tcp:
        raise UsageError("--stdio and --tcp are exclusive")
    return serve(tcp=args.tcp)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fxscope`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"check": cmd_check, "graph": cmd_graph, "daemon": cmd_daemon, "serve": cmd_serve,
                "watch": cmd_watch, "init": cmd_init}
    try:
        return handlers[args.command](args)
    except UsageError as e:
        sys.stderr.write(f"fxscope: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("fxscope: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001 - exit 1 means findings: an error never looks like one
        return _error_exit(e)


def _error_exit(error: Exception) -> int:
    """One line on stderr and exit 2 for an error that is not a usage error: a check that could
    not complete (:class:`~fxscope.errors.CheckError`) or a bug (its traceback with
    ``FXSCOPE_DEBUG=1``)."""
    from fxscope.errors import CheckError

    if isinstance(error, CheckError):
        text = str(error)
    else:
        text = f"internal error: {type(error).__name__}: {error}"
        if os.environ.get("FXSCOPE_DEBUG"):
            import traceback

            traceback.print_exception(error)
        else:
            text += " (FXSCOPE_DEBUG=1 shows the traceback)"
    sys.stderr.write(f"fxscope: error: {' '.join(text.split())}\n")
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
