"""The discovery model's reply is read with a hard bound: a gzip or Brotli ``Content-Encoding``
that expands to 512 MiB, or JSON nested past what the decoder can take, is a clean
``model_invalid_reply`` (502), with the process's peak resident memory growing by less than
50 MB."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from config.errors import UpstreamError
from discovery.engines.llm import LlmEngine
from tests.bomb_support import answering_server, brotli_bomb, gzip_bomb, measure
from tests.discovery_support import llm_context

MAX_GROWTH = 50 * 1000 * 1000


def _post(url: str) -> UpstreamError | object:
    engine = LlmEngine(url=url, model="m", api_key="", timeout=10)
    try:
        return engine._post({"model": "m", "messages": []})
    except UpstreamError as error:
        return error


@pytest.mark.parametrize(
    ("make_body", "encoding"),
    [
        pytest.param(gzip_bomb, "gzip", id="gzip-bomb"),
        pytest.param(brotli_bomb, "br", id="brotli-bomb"),
    ],
)
def test_a_compressed_reply_that_expands_past_the_cap_is_refused_in_bounded_memory(
    make_body: Callable[[], bytes], encoding: str
) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    with answering_server(make_body(), headers=headers) as url:
        outcome, growth, seconds = measure(lambda: _post(url))
    assert growth < MAX_GROWTH, f"peak RSS grew by {growth / 1e6:.0f} MB"
    assert isinstance(outcome, UpstreamError), type(outcome)
    assert outcome.code == "model_invalid_reply"
    assert seconds < 5


def test_a_deeply_nested_reply_is_invalid_not_a_crash() -> None:
    deep = b'{"choices": ' * 100_000 + b"1" + b"}" * 100_000
    with answering_server(deep, headers={"Content-Type": "application/json"}) as url:
        outcome = _post(url)
    assert isinstance(outcome, UpstreamError), type(outcome)
    assert outcome.code == "model_invalid_reply"


def test_deeply_nested_content_is_invalid_not_a_crash() -> None:
    content = "[" * 100_000
    reply = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    engine = LlmEngine(url="http://127.0.0.1:9", model="m", api_key="", timeout=1)
    with pytest.raises(UpstreamError) as caught:
        engine._parse(reply, llm_context())
    assert caught.value.code == "model_invalid_reply"
