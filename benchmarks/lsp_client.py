"""The benchmarks' language client: a pygls client that answers the server's requests the way an
editor with no settings does and hands publishDiagnostics, $/progress and window/logMessage to
the benchmark."""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def bench_client(on_publish: Callable[[types.PublishDiagnosticsParams], None],
                 on_progress: Callable[[types.ProgressParams], None] | None = None,
                 on_log: Callable[[types.LogMessageParams], None] | None = None) -> LanguageClient:
    """A client named ``fxscope-bench`` whose server requests (progress creation, configuration,
    registrations, refreshes) are answered and whose notifications go to the callbacks."""
    c = LanguageClient("fxscope-bench", "1")

    @c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _pub(params: types.PublishDiagnosticsParams) -> None:
        on_publish(params)

    @c.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @c.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        if on_progress is not None:
            on_progress(params)

    @c.feature(types.WORKSPACE_CONFIGURATION)
    def _config(params: types.ConfigurationParams) -> list[None]:
        return [None for _ in params.items]

    @c.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    @c.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens(params: None) -> None:
        return None

    @c.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _hints(params: None) -> None:
        return None

    @c.feature(types.WINDOW_LOG_MESSAGE)
    def _log(params: types.LogMessageParams) -> None:
        if on_log is not None:
            on_log(params)

    return c
