"""A kept-alive connection the server drops just as the CLI reuses it (gunicorn and proxies
close idle ones after a few seconds; ``--follow`` polls every two) costs a read one more
attempt, never an error; a write is never sent twice."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from cli.client import HeraldClient
from cli.errors import ConnectionFailed

TOKEN = "hrld_0a1b2c3d_" + "x" * 40


class ResettingServer:
    """Answers each connection's first request, keeps it open, then resets it (RST) when the
    next request arrives on it: the race a client loses against an idle-connection timeout."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.requests: list[str] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            self._read_request(conn)
            body = json.dumps({"ok": True}).encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n".encode()
                + body
            )
            conn.settimeout(5)
            try:
                conn.recv(65536)  # the reused connection's next request ...
            except OSError:
                return
            # ... is answered with a reset, as by a server that closed it a moment earlier.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _read_request(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        self.requests.append(data.split(b"\r\n", 1)[0].decode())

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def server() -> Iterator[ResettingServer]:
    running = ResettingServer()
    yield running
    running.close()


def test_a_read_on_a_reset_kept_alive_connection_is_sent_once_more(server: ResettingServer) -> None:
    client = HeraldClient(server.url, TOKEN)
    assert client.request("GET", "/publications/1") == {"ok": True}
    assert client.request("GET", "/publications/1") == {"ok": True}  # reset, then a fresh one
    assert server.requests == ["GET /api/v1/publications/1 HTTP/1.1"] * 2


def test_a_write_on_a_reset_connection_is_not_sent_again(server: ResettingServer) -> None:
    client = HeraldClient(server.url, TOKEN)
    client.request("GET", "/me")
    with pytest.raises(ConnectionFailed):
        client.request("POST", "/publications", body={"text": "once"})
    assert server.requests == ["GET /api/v1/me HTTP/1.1"]  # the POST reached no handler twice
