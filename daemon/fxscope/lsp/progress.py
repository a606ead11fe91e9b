"""``$/progress`` for every run of a folder: the start-up check, an edit, a configuration change, a
file changed on disk, a command. One cancellable work-done progress ("n of N targets") spans
a folder's busy period (rounds that overlap share it) and ends, with the run's summary, when the
scheduler's last round ends; the summary is also logged once (``window/logMessage``, info).
``window/workDoneProgress/cancel`` kills the folder's background jobs: their targets keep their
previous results and stay queued until the next change, nothing is reported as failed; the jobs of
the targets the user's edits asked for go on, so the diagnostics of what was just typed arrive."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.workspaces import Folder
from fxscope.session import ProgressEvent, RunSummary

__all__ = ["ProgressFeature", "register"]

log = logging.getLogger("fxscope.lsp")
_tokens = itertools.count(1)


@dataclass
class _Round:
    title: str
    token: str | None = None
    ready: bool = False
    ended: bool = False
    cancelled: bool = False
    done: int = 0
    answered: int = 0  # targets whose fx phase answered
    total: int = 0
    running: int = 0
    summary: RunSummary | None = None
    failed: str | None = None  # the round ended with this error


class ProgressFeature:
    """Tracks one progress per folder's busy period."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self._rounds: dict[str, _Round] = {}
        self._titles: dict[str, str] = {}  # folder uri -> title of its next progress
        self._refused = False  # the client refused window/workDoneProgress/create once

    @property
    def supported(self) -> bool:
        caps = self.ctx.capabilities
        return bool(caps and caps.window and caps.window.work_done_progress) and not self._refused

    def expect_round(self, folder: Folder, title: str) -> None:
        """Title the next progress of ``folder`` (when none is shown now)."""
        current = self._rounds.get(folder.uri)
        if current is None or current.ended:
            self._titles[folder.uri] = title

    def event(self, folder: Folder, ev: ProgressEvent) -> None:
        """A scheduler ProgressEvent (on the event loop)."""
        r = self._rounds.get(folder.uri)
        if r is None or r.ended or r.summary is not None or r.failed is not None:  # (the last one may still wait for its token)
            if ev.summary is not None or ev.total <= 0:
                if ev.summary is not None:
                    self._log(folder, ev.summary)
                return
            title = self._titles.pop(folder.uri, None) or f"fxscope: checking {folder.name}"
            r = self._rounds[folder.uri] = _Round(title)
        r.done, r.total, r.running, r.answered = ev.done, ev.total, ev.running, ev.answered
        if ev.summary is not None:
            r.summary = ev.summary
            self._log(folder, ev.summary)
        if not self.supported:
            r.ended = r.summary is not None
            return
        if r.token is None:
            r.token = f"fxscope-{next(_tokens)}"
            asyncio.ensure_future(self._begin(r))
            return
        if r.ready:
            self._report(r)

    def cancel(self, token: str) -> None:
        """The client cancelled the progress ``token``: stop its folder's running work."""
        for uri, r in self._rounds.items():
            if r.token == token and not r.ended:
                r.cancelled = True
                folder = next((f for f in self.ctx.folders.all() if f.uri == uri), None)
                if folder is not None:
                    try:
                        folder.workspace.cancel(spare_edits=True)
                    except RuntimeError:  # closed meanwhile
                        pass
                    log.debug("progress %s cancelled: stopping the jobs of %s", token, folder.name)
                return

    def failed(self, folder: Folder, reason: str) -> None:
        """``folder``'s round ended with an error (no result will finish it): end its progress."""
        r = self._rounds.get(folder.uri)
        if r is None or r.ended:
            return
        r.failed = reason
        if r.ready:
            self._report(r)
        elif r.token is None:
            r.ended = True  # never begun; a begin under way ends as soon as it is ready

    def _log(self, folder: Folder, summary: RunSummary) -> None:
        name = f" {folder.name}:" if len(self.ctx.folders.all()) > 1 else ""
        self.ctx.client.log_message(f"fxscope:{name} {summary.line()}")

    async def _begin(self, r: _Round) -> None:
        assert r.token is not None
        try:
            await self.ctx.client.create_progress(r.token)
        except Exception as e:  # noqa: BLE001 - the client refused: no progress from now on
            log.debug("window/workDoneProgress/create failed: %s", e)
            self._refused = True
            r.ended = True
            return
        self.ctx.client.send_progress(r.token, types.WorkDoneProgressBegin(
            title=r.title, message=self._message(r), percentage=self._percent(r), cancellable=True))
        r.ready = True
        self._report(r)

    def _report(self, r: _Round) -> None:
        if r.ended or r.token is None:
            return
        if r.summary is not None or r.failed:
            r.ended = True
            if r.failed:
                message = f"failed: {r.failed}"
            else:
                assert r.summary is not None
                message = ("cancelled: " if r.cancelled else "") + r.summary.line()
            self.ctx.client.send_progress(r.token, types.WorkDoneProgressEnd(message=message))
            return
        self.ctx.client.send_progress(r.token, types.WorkDoneProgressReport(
            message=self._message(r), percentage=self._percent(r)))

    @staticmethod
    def _message(r: _Round) -> str:
        message = f"{r.done} of {r.total} targets"
        if r.answered > r.done:  # fx answered for more: their compile/export analyses run
            message += f" · fx {r.answered} of {r.total}, analyses running"
        return message + (" (cancelling)" if r.cancelled else "")

    @staticmethod
    def _percent(r: _Round) -> int:
        return min(100, int(100 * r.done / r.total)) if r.total else 0

    def close(self) -> None:
        """End every open progress (shutdown)."""
        for r in self._rounds.values():
            if r.ready and not r.ended and r.token is not None:
                r.ended = True
                try:
                    self.ctx.client.send_progress(r.token, types.WorkDoneProgressEnd(message="stopped"))
                except Exception:  # noqa: BLE001 - the client is gone: there is nothing to end
                    pass


def register(ls: LanguageServer, ctx: ServerContext) -> None:
    """Register ``window/workDoneProgress/cancel``."""

    @ls.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def cancel(params: types.WorkDoneProgressCancelParams) -> None:
        ctx.progress.cancel(str(params.token))
