"""``fxscope daemon start|stop|status|run`` and ``fxscope check --daemon``: the CLI side of the warm
background daemon (:mod:`fxscope.server`).

The daemon listens on a Unix socket in the cache directory (``ROOT/.fxscope_cache/daemon.sock`` or
``--cache-dir``), mode 0600, in a directory only its owner can write. Example::

    $ fxscope daemon start
    fxscope daemon started (pid 4242, socket .fxscope_cache/daemon.sock)
    $ fxscope check --daemon models/
    $ fxscope daemon stop
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fxscope.model import Report
from fxscope.server import client
from fxscope.server.paths import daemon_paths, load_config_or_none
from fxscope.server.protocol import DaemonError

__all__ = ["DaemonError", "check_via_daemon", "command"]


def _pinned(args: argparse.Namespace) -> Path | None:
    cache_dir = getattr(args, "cache_dir", None)
    return Path(cache_dir).resolve() if cache_dir is not None else None


def command(action: str, root: Path, args: argparse.Namespace) -> int:
    """Run ``fxscope daemon ACTION``; returns the exit status (``status``: 0 running, 1 not)."""
    pinned = _pinned(args)
    paths = daemon_paths(root, pinned, load_config_or_none(root))  # a broken config: reported elsewhere
    workers = getattr(args, "workers", None)
    sandbox = False if getattr(args, "no_sandbox", False) else None
    if action == "run":
        from fxscope.server.server import DaemonServer

        return DaemonServer(root, paths, pinned=pinned, workers=workers, sandbox=sandbox).serve()
    if action == "start":
        status, started = client.ensure_running(root, paths, pinned=pinned, workers=workers, wait_worker=True,
                                                sandbox=sandbox)
        if started:
            sys.stdout.write(f"fxscope daemon started (pid {status.get('pid')}, socket {paths.socket})\n")
        else:
            sys.stdout.write(f"fxscope daemon already running (pid {status.get('pid')})\n")
            if sandbox is False and status.get("sandbox") is not False:
                sys.stderr.write("fxscope: error: the running daemon keeps the OS sandbox on; stop it first "
                                 "(`fxscope daemon stop`) to start one with --no-sandbox\n")
                return 2
        if str(status.get("worker", "")).startswith("failed"):
            sys.stderr.write(f"fxscope: warning: the daemon's worker did not start: {status['worker']}\n")
        return 0
    if action == "stop":
        return client.stop(paths)
    if action == "status":
        running = client.status(paths) if paths.socket.exists() else None
        if running is None:
            sys.stdout.write("fxscope daemon is not running\n")
            return 1
        sys.stdout.write(client.describe(running, paths) + "\n")
        return 0
    raise ValueError(f"unknown daemon action {action!r}")


def check_via_daemon(root: Path, args: argparse.Namespace, paths: list[Path] | None) -> Report:
    """Run ``fxscope check`` in the workspace's daemon (started first if it is not running) and
    return its report. The daemon's warnings are written to stderr; nothing to stdout."""
    report, warnings = client.check_via_daemon(
        root, paths, pinned=_pinned(args), workers=getattr(args, "workers", None),
        graphs=bool(getattr(args, "graphs", False)), shard=getattr(args, "shard", None),
        no_cache=bool(getattr(args, "no_cache", False)), retry_faults=bool(getattr(args, "retry_faults", False)))
    for warning in warnings:
        sys.stderr.write(f"fxscope: warning: {warning}\n")
    return Report.from_json(report)
