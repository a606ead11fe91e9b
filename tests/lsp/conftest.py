"""A real fxscope language server over stdio per test (pytest-lsp)."""

from __future__ import annotations

import os

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_support import SERVER, make_client

_ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=_ENV))
async def client(lsp_client: LanguageClient):
    # initialize is sent by each test: the capabilities and folders differ per test
    yield
    try:
        await lsp_client.shutdown_session()
    except Exception:  # noqa: BLE001 - a server that already exited
        pass
