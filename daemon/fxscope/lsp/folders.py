"""Workspace folders: one :class:`~fxscope.session.Workspace` per folder, started (cached results
first) and watched; folders added and removed (``workspace/didChangeWorkspaceFolders``); files
changed outside the editor (``workspace/didChangeWatchedFiles`` and watchdog); and each
workspace's events turned into diagnostics, progress and lens refreshes on the event loop.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.errors import CheckError, TorchUnavailableError, WorkerStartError
from fxscope.lsp.configuration import apply_configuration
from fxscope.lsp.context import ServerContext
from fxscope.lsp.watch import FolderWatcher, is_relevant
from fxscope.lsp.workspaces import Folder, uri_to_path
from fxscope.session import ProgressEvent, ResultsEvent, Workspace

__all__ = ["FolderFeature", "register"]

log = logging.getLogger("fxscope.lsp")


class FolderFeature:
    """Starts, watches and removes the folders of one server."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self._watchers: dict[Path, FolderWatcher] = {}
        self._closed = False
        self._close_lock = threading.Lock()
        self._environment_shown: set[str] = set()

    def make_workspace(self, root: Path, uri: str) -> Workspace:
        """The Workspace of a new folder, its events posted to the event loop."""
        opts = self.ctx.folder_options.get(uri, self.ctx.options)
        post = self.ctx.client.post
        return Workspace(
            root, settings=self.ctx.settings(opts),
            on_results=lambda ev: post(self._on_results, root, ev),
            on_progress=lambda ev: post(self._on_progress, root, ev),
            on_warning=lambda msg: log.warning("%s: %s", root.name, msg),
            on_error=lambda exc: post(self._on_error, root, exc),
        )

    def _on_error(self, root: Path, exc: CheckError) -> None:
        """A round or the worker's start-up failed. A missing or too old torch is the environment's
        fault, the same for every folder and round: one error message (with the install command)
        per distinct problem, the per-round repeats only in the log at debug level."""
        folder = self.ctx.folders.get(root)
        if folder is not None and isinstance(exc, WorkerStartError):  # no result will end its round
            self.ctx.progress.failed(folder, str(exc))
        if not isinstance(exc, TorchUnavailableError):
            log.warning("%s: %s", root.name, exc)
        elif str(exc) in self._environment_shown:
            log.debug("%s: %s", root.name, exc)
        elif not self.ctx.shut_down:
            self._environment_shown.add(str(exc))
            log.warning("%s: %s", root.name, exc)
            self.ctx.client.show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                                 message=f"fxscope: {exc}"))

    # ------------------------------------------------------------------ workspace events (on the loop)
    def _on_results(self, root: Path, event: ResultsEvent) -> None:
        folder = self.ctx.folders.get(root)
        if folder is None or self.ctx.shut_down:
            return
        self.ctx.diagnostics.results_changed(folder, event)
        self.ctx.refresh_lenses()

    def _on_progress(self, root: Path, event: ProgressEvent) -> None:
        folder = self.ctx.folders.get(root)
        if folder is None or self.ctx.shut_down:
            return
        self.ctx.progress.event(folder, event)
        self.ctx.diagnostics.wake()
        if event.done >= event.total and event.running == 0:
            self.ctx.refresh_lenses()  # a round ended: lens titles leave "tracing..."

    # ------------------------------------------------------------------ folders
    def start(self, folder: Folder) -> None:
        """Start checking ``folder`` (cached results first) and watch it."""
        if folder.root in self.ctx.started or self.ctx.shut_down:
            return
        self.ctx.started.add(folder.root)
        self.ctx.progress.expect_round(folder, f"fxscope: checking {folder.name}")

        def start() -> None:
            try:
                folder.workspace.start()
            except Exception:
                log.exception("starting the workspace %s failed", folder.root)
                return
            finally:
                self.ctx.ready.add(folder.root)
            self.ctx.client.post(self.ctx.diagnostics.publish_all, folder)

        threading.Thread(target=start, name=f"fxscope-start-{folder.name}", daemon=True).start()
        if self.ctx.options_for(folder).watch:
            watcher = FolderWatcher(folder.root, functools.partial(self._disk_changed, folder))
            if watcher.start():
                self._watchers[folder.root] = watcher

    def _disk_changed(self, folder: Folder, paths: Sequence[Path]) -> None:
        if not self.ctx.shut_down:
            folder.workspace.files_changed(paths)

    def remove(self, root: Path) -> None:
        """Stop watching and close the folder at ``root``."""
        watcher = self._watchers.pop(root, None)
        if watcher is not None:
            watcher.stop()
        self.ctx.started.discard(root)
        self.ctx.folders.remove(root)

    def close_all(self) -> None:
        """Stop watching and close every Workspace (kills every trace process). Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        for watcher in list(self._watchers.values()):
            watcher.stop()
        self._watchers.clear()
        self.ctx.folders.close_all()

    # ------------------------------------------------------------------ notifications
    async def folders_changed(self, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed or ():
            path = uri_to_path(f.uri)
            if path is not None:
                self.remove(path.resolve())
        added = []
        for f in params.event.added or ():
            path = uri_to_path(f.uri)
            folder = self.ctx.folders.add(path, f.name, f.uri) if path is not None and path.is_dir() else None
            if folder is not None:
                added.append(folder)
        if added:
            await apply_configuration(self.ctx, added)
            for folder in added:
                self.start(folder)

    def watched_files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        by_folder: dict[Path, list[Path]] = {}
        for change in params.changes:
            path = uri_to_path(change.uri)
            folder = self.ctx.folders.for_path(path, create=False)
            if path is not None and folder is not None and is_relevant(path, folder.root):
                by_folder.setdefault(folder.root, []).append(path)
        for root, paths in by_folder.items():
            folder = self.ctx.folders.get(root)
            if folder is not None:
                folder.workspace.files_changed(paths)


def register(ls: LanguageServer, ctx: ServerContext, feature: FolderFeature) -> None:
    """Register the folder notifications of ``feature``."""

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        await feature.folders_changed(params)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        feature.watched_files_changed(params)
