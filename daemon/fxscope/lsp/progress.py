"""``$/progress`` while a folder is checked at start-up (and after ``fxscope.retrace``):
"n of N targets", begun once the first scheduler event of that round arrives, ended when the
round is done. Edits do not show progress (they are quick and frequent)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass

from lsprotocol import types

from fxscope.lsp.context import ServerContext
from fxscope.lsp.workspaces import Folder
from fxscope.session import ProgressEvent

__all__ = ["ProgressFeature"]

log = logging.getLogger("fxscope.lsp")
_tokens = itertools.count(1)


@dataclass
class _Round:
    title: str
    token: str | None = None
    ready: bool = False
    ended: bool = False
    done: int = 0
    total: int = 0
    running: int = 0
    failed: str | None = None  # the round ended with this error


class ProgressFeature:
    """Tracks one progress round per folder."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self._rounds: dict[str, _Round] = {}

    @property
    def supported(self) -> bool:
        caps = self.ctx.capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def expect_round(self, folder: Folder, title: str) -> None:
        """Show progress for the next round of ``folder``'s scheduler."""
        current = self._rounds.get(folder.uri)
        if current is not None and current.token is not None and not current.ended:
            return  # a round is already shown
        self._rounds[folder.uri] = _Round(title)

    def event(self, folder: Folder, ev: ProgressEvent) -> None:
        """A scheduler ProgressEvent (on the event loop)."""
        r = self._rounds.get(folder.uri)
        if r is None or r.ended or not self.supported:
            return
        r.done, r.total, r.running = ev.done, ev.total, ev.running
        if r.token is None:
            if r.total <= 0:
                return
            r.token = f"fxscope-{next(_tokens)}"
            asyncio.ensure_future(self._begin(folder, r))
            return
        if r.ready:
            self._report(r)

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

    def _finished(self, r: _Round) -> bool:
        return r.total > 0 and r.done >= r.total and r.running == 0

    async def _begin(self, folder: Folder, r: _Round) -> None:
        assert r.token is not None
        try:
            await self.ctx.client.create_progress(r.token)
        except Exception as e:  # the client refused: no progress for this round
            log.debug("window/workDoneProgress/create failed: %s", e)
            r.ended = True
            return
        self.ctx.client.send_progress(r.token, types.WorkDoneProgressBegin(
            title=r.title, message=self._message(r), percentage=self._percent(r), cancellable=False))
        r.ready = True
        self._report(r)

    def _report(self, r: _Round) -> None:
        if r.ended or r.token is None:
            return
        if self._finished(r) or r.failed:
            r.ended = True
            self.ctx.client.send_progress(r.token, types.WorkDoneProgressEnd(
                message=f"failed: {r.failed}" if r.failed else f"{r.total} target{'s' if r.total != 1 else ''} checked"))
            return
        self.ctx.client.send_progress(r.token, types.WorkDoneProgressReport(
            message=self._message(r), percentage=self._percent(r)))

    @staticmethod
    def _message(r: _Round) -> str:
        return f"{r.done} of {r.total} targets"

    @staticmethod
    def _percent(r: _Round) -> int:
        return int(100 * r.done / r.total) if r.total else 0

    def close(self) -> None:
        """End every open round (shutdown)."""
        for r in self._rounds.values():
            if r.ready and not r.ended and r.token is not None:
                r.ended = True
                try:
                    self.ctx.client.send_progress(r.token, types.WorkDoneProgressEnd(message="stopped"))
                except Exception:
                    pass
