"""The server survives model code that prints, hangs or crashes, malformed requests and the
protocol's edge cases, and leaves no process behind after ``exit``."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_support import (VSCODE, alive, descendants, initialize, make_workspace, open_doc, processes_mentioning, uri,
                         wait_until)

pytestmark = pytest.mark.requires_torch

NOISY = '''import os
import sys

import torch
from torch import nn

print("import-time noise on stdout")
os.write(1, b"Content-Length: 5\\r\\n\\r\\nhello")


class Noisy(nn.Module):
    def forward(self, x):
        print("forward noise", x)
        sys.stdout.write("Content-Length: 2\\r\\n\\r\\n{}")
        os.write(1, b"raw fd noise")
        if x.sum() > 0:  # FXS101 noisy
            x = x + 1
        return x
'''

HANGS = '''import time

from torch import nn


class Hangs(nn.Module):
    def forward(self, x):
        while True:  # hangs
            time.sleep(0.01)
        return x
'''

CRASHES = '''import os

from torch import nn


class Crashes(nn.Module):
    def forward(self, x):
        os._exit(3)  # dies
'''


@pytest.mark.slow
async def test_models_that_print_hang_or_crash(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py"],
                          extra={"noisy.py": NOISY, "hangs.py": HANGS, "crashes.py": CRASHES},
                          pyproject="[tool.fxscope]\ntimeout = 3\n")
    await initialize(client, [root], VSCODE)

    def has(file, code):
        return any(d.code == code for d in client.diagnostics.get(uri(root / file), []))

    await wait_until(lambda: has("noisy.py", "FXS101") and has("hangs.py", "FXS403") and has("crashes.py", "FXS404")
                     and has("length.py", "FXS103"), what="the noisy, hanging and crashing models' findings")
    (d,) = [d for d in client.diagnostics[uri(root / "hangs.py")] if d.code == "FXS403"]
    assert d.range.start.line + 1 in range(7, 10)  # where it was stuck, in the loop
    # the stream is intact and the server answers
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(root / "length.py")), position=types.Position(line=6, character=8)))
    assert hover is not None and "LenOfTensor" in hover.contents.value
    # an edit to the hanging model still re-traces it (and is cancelled by a newer edit)
    path = root / "hangs.py"
    text = open_doc(client, path)
    fixed = text.replace("        while True:  # hangs\n            time.sleep(0.01)\n", "")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
    await wait_until(lambda: any(p.uri == uri(path) and p.version == 2 and not p.diagnostics for p in client.published),
                     what="the fixed model's empty diagnostics")


def _raw(client: LanguageClient, message: dict) -> None:
    body = json.dumps(message).encode()
    client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def _raw_request(client: LanguageClient, method: str, params: object) -> object:
    """Send a request whose params do not match the method's type; return its answer."""
    msg_id = f"raw-{method}"
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    _raw(client, {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), 30)


@pytest.mark.slow
async def test_malformed_requests_and_protocol_errors(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py"])
    await initialize(client, [root], VSCODE)
    await wait_until(lambda: client.diagnostics.get(uri(root / "length.py")), what="diagnostics")
    odd = [
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri="untitled:Untitled-1"),
                          position=types.Position(line=0, character=0)),
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri="file:///nonexistent/x.py"),
                          position=types.Position(line=5, character=99)),
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri(root / "length.py")),
                          position=types.Position(line=2**31 - 1, character=2**31 - 1)),
    ]
    for params in odd:
        assert await client.text_document_hover_async(params) is None
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri="file:///nonexistent/x.py")))
    assert not lenses
    # params of the wrong shape: an InvalidParams error response, not a hang
    with pytest.raises(JsonRpcException) as err:
        await _raw_request(client, "textDocument/hover", {"textDocument": 42, "position": "x"})
    assert err.value.code == -32602
    # an unknown method: MethodNotFound
    with pytest.raises(JsonRpcException) as err:
        await _raw_request(client, "fxscope/nope", {})
    assert err.value.code == -32601
    # a change for a document that was never opened and a notification with garbage params
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(root / "never.py"), version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")]))
    _raw(client, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": 7}}})
    client.protocol.writer.write(b"Content-Length: 9\r\n\r\n{not json")
    # still alive and answering
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    assert status["folders"][0]["total"] >= 1
    # after shutdown: requests get InvalidRequest
    await client.shutdown_async(None)
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(client.text_document_hover_async(odd[0]), 30)
    assert err.value.code == -32600
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), 30)
    assert client._server.returncode == 0


@pytest.mark.slow
async def test_no_process_left_after_exit(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py", "shared_class.py"],
                          extra={"hangs.py": HANGS}, pyproject="[tool.fxscope]\ntimeout = 60\n")
    await initialize(client, [root], VSCODE)
    server_pid = client._server.pid
    await wait_until(lambda: client.diagnostics.get(uri(root / "length.py")), what="diagnostics")
    # the hanging model is still being traced while we shut down
    children = descendants(server_pid)
    assert children, "the server runs its traces in child processes"
    await client.shutdown_session()
    assert client._server.returncode == 0

    def gone():
        return not [p for p in children if alive(p)] and not processes_mentioning(str(root))

    await wait_until(gone, timeout=60, what="every fxscope process to exit")


def test_serve_over_tcp_binds_localhost_and_exits_cleanly(tmp_path):
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "fxscope", "serve", "--tcp", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else "no listener"
                time.sleep(0.1)
        listening = subprocess.run(["cat", "/proc/net/tcp"], capture_output=True, text=True).stdout
        assert f"0100007F:{port:04X}" in listening  # 127.0.0.1 only

        def send(message: dict) -> None:
            body = json.dumps(message).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None}})
        conn.settimeout(60)
        reply = b""
        while not (b'"id": 1' in reply and b"capabilities" in reply):  # one recv may hold a part
            chunk = conn.recv(65536)
            assert chunk, reply
            reply += chunk
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        send({"jsonrpc": "2.0", "method": "exit"})
        assert proc.wait(30) == 0
        conn.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
