"""The server holds nothing per handled notification: pygls 2.1 files the future of every
notification run by its generator handlers (didOpen, didChange, ...) and never removes it, which
made the server grow by about 1.7 KB per edit (benchmarks/soak.py measures the RSS)."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types

from fxscope.lsp.server import create_server


class _Writer:
    def __init__(self) -> None:
        self.messages: list[dict] = []

    def write(self, data: bytes) -> None:
        body = data.split(b"\r\n\r\n", 1)[-1]
        self.messages.append(json.loads(body))

    def close(self) -> None:
        pass


def _send(protocol, message: dict) -> None:
    protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))


def test_handled_notifications_leave_no_future_behind(tmp_path):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        server = create_server()
        protocol = server.protocol
        writer = _Writer()
        protocol.set_writer(writer)
        _send(protocol, {"id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None,
                                                                      "rootUri": None}})
        assert any(m.get("id") == 1 and "result" in m for m in writer.messages), writer.messages
        doc = (tmp_path / "m.py").as_uri()  # outside any workspace folder: nothing is traced
        _send(protocol, {"method": types.TEXT_DOCUMENT_DID_OPEN, "params": {"textDocument": {
            "uri": doc, "languageId": "python", "version": 1, "text": "x = 1\n"}}})
        for version in range(2, 202):
            _send(protocol, {"method": types.TEXT_DOCUMENT_DID_CHANGE, "params": {
                "textDocument": {"uri": doc, "version": version},
                "contentChanges": [{"text": f"x = {version}\n"}]}})
        _send(protocol, {"method": types.TEXT_DOCUMENT_DID_CLOSE, "params": {"textDocument": {"uri": doc}}})
        assert server.workspace.text_documents == {}  # the notifications were handled
        assert len(protocol._request_futures) == 0  # what the fix keeps empty
    finally:
        server.close_all()
        loop.close()
        asyncio.set_event_loop(None)
