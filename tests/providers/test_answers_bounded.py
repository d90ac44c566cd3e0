"""Provider answers are read with a hard bound: a compressed answer that expands to 512 MiB
(gzip or Brotli ``Content-Encoding``, which ``requests`` decodes) or a plain answer larger than
the cap is refused as unreadable, with the process's peak resident memory growing by less than
50 MB, whether the status says success or failure."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from providers.base import ErrorKind, ProviderError
from providers.http import MAX_ANSWER_BYTES, HttpClient
from tests.bomb_support import answering_server, brotli_bomb, gzip_bomb, measure

MAX_GROWTH = 50 * 1000 * 1000


def call(url: str, *, write: bool) -> ProviderError | object:
    client = HttpClient(read_timeout=5, connect_timeout=2)
    try:
        response = client.request(
            "POST" if write else "GET",
            f"{url}/statuses",
            provider="Mastodon",
            operation="post" if write else "read",
            write=write,
        )
        return client.json(response, provider="Mastodon", operation="post", write=write)
    except ProviderError as error:
        return error


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        pytest.param(gzip_bomb, "gzip", id="gzip-bomb"),
        pytest.param(brotli_bomb, "br", id="brotli-bomb"),
        pytest.param(lambda: b"[" + b"0," * (MAX_ANSWER_BYTES // 2) + b"0]", "", id="too-long"),
    ],
)
@pytest.mark.parametrize("write", [True, False])
def test_an_answer_past_the_cap_is_unreadable_in_bounded_memory(
    body: object, encoding: str, write: bool
) -> None:
    headers = {"Content-Type": "application/json"}
    if encoding:
        headers["Content-Encoding"] = encoding
    with answering_server(body(), headers=headers) as url:  # type: ignore[operator]
        outcome, growth, seconds = measure(lambda: call(url, write=write))
    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert isinstance(outcome, ProviderError), type(outcome)
    assert outcome.kind == (ErrorKind.AMBIGUOUS if write else ErrorKind.TRANSIENT)
    assert "answer" in str(outcome)
    assert seconds < 5


def test_a_failure_with_an_oversized_answer_is_classified_by_its_status() -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with answering_server(gzip_bomb(), status=422, headers=headers) as url:
        outcome, growth, _ = measure(lambda: call(url, write=True))
    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert isinstance(outcome, ProviderError)
    assert outcome.kind == ErrorKind.PERMANENT
    assert outcome.status == 422


def test_an_answer_within_the_cap_reads_as_before() -> None:
    with answering_server(b'{"id": "1"}', headers={"Content-Type": "application/json"}) as url:
        assert call(url, write=True) == {"id": "1"}


@pytest.mark.parametrize(
    ("status", "kind"), [(200, ErrorKind.TRANSIENT), (400, ErrorKind.PERMANENT)]
)
def test_a_deeply_nested_answer_is_unreadable_not_a_crash(status: int, kind: ErrorKind) -> None:
    """The standard JSON decoder raises RecursionError on deep nesting, in ``json()`` and in
    every adapter's error parser alike: such an answer is refused while it is read."""
    deep = b'{"error": ' * 100_000 + b"1" + b"}" * 100_000
    headers = {"Content-Type": "application/json"}
    with answering_server(deep, status=status, headers=headers) as url:
        outcome = call(url, write=False)
    assert isinstance(outcome, ProviderError)
    assert outcome.kind == kind


@pytest.mark.parametrize(
    ("write", "kind"), [(True, ErrorKind.AMBIGUOUS), (False, ErrorKind.TRANSIENT)]
)
def test_an_answer_that_trickles_in_is_cut_off_at_a_deadline(write: bool, kind: ErrorKind) -> None:
    """Each byte arrives within the read timeout, so only a deadline for the whole answer ends
    the call: connect timeout plus twice the read timeout."""
    stop = threading.Event()

    class Trickle(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(1000):
                    if stop.wait(0.2):
                        return
                    self.wfile.write(b" ")
                    self.wfile.flush()

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = HttpClient(read_timeout=1, connect_timeout=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as caught:
            client.request(
                "POST" if write else "GET",
                f"http://127.0.0.1:{server.server_address[1]}/statuses",
                provider="Mastodon",
                operation="post",
                write=write,
            )
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    assert caught.value.kind == kind
    assert time.monotonic() - started < 4
