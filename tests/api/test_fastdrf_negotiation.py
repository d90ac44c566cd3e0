"""``FastContentNegotiation`` must select what DRF's ``DefaultContentNegotiation`` selects."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import Http404
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.api.fastdrf import FastContentNegotiation
from config.api.renderers import FastJSONRenderer


class _VersionedRenderer(JSONRenderer):
    media_type = "application/vnd.herald+json; version=2"


class _UpperCaseRenderer(JSONRenderer):
    media_type = "Application/JSON"


class _WildcardRenderer(JSONRenderer):
    media_type = "*/*"
    format = "any"


class _SubtypeWildcardRenderer(JSONRenderer):
    media_type = "application/*"
    format = "app"


class _ProblemRenderer(JSONRenderer):
    media_type = "application/problem+json"
    format = "problem"


RENDERER_SETS: list[list[type[BaseRenderer]]] = [
    [FastJSONRenderer],
    [JSONRenderer, BrowsableAPIRenderer],
    [BrowsableAPIRenderer, JSONRenderer],
    [_ProblemRenderer, FastJSONRenderer],
    [_VersionedRenderer, JSONRenderer],
    [_UpperCaseRenderer],
    [_WildcardRenderer, JSONRenderer],
    [_SubtypeWildcardRenderer],
]

ACCEPT_HEADERS: list[str | None] = [
    None,
    "",
    "*/*",
    " */*",
    "*/* ",
    "*/*;q=0.8",
    "*/*; indent=4",
    "application/json",
    "application/json ",
    "application/json; indent=4",
    "application/json;q=0.5",
    "Application/JSON",
    "APPLICATION/JSON",
    "application/*",
    "application/json, text/html",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "text/html",
    "application/problem+json",
    "application/vnd.herald+json; version=2",
    "application/vnd.herald+json",
    "image/png",
    ",",
    "x" * 300,
]

QUERIES = ["", "limit=1", "format=json", "format=api", "format=xml", "format=", "a=1&format=json"]
SUFFIXES: list[str | None] = [None, "json", "api"]


def outcome(negotiator: Any, renderers: list[BaseRenderer], request: Request, suffix: Any) -> Any:
    try:
        renderer, media_type = negotiator.select_renderer(request, renderers, suffix)
    except (exceptions.NotAcceptable, Http404) as exc:
        return type(exc).__name__
    return renderers.index(renderer), media_type


def make_request(accept: str | None, query: str) -> Request:
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    return Request(APIRequestFactory().get("/api/v1/x" + ("?" + query if query else ""), **headers))


@pytest.mark.parametrize(
    "renderer_classes", RENDERER_SETS, ids=lambda rs: "+".join(r.__name__ for r in rs)
)
def test_selects_what_drf_selects(renderer_classes: list[type[BaseRenderer]]) -> None:
    renderers = [cls() for cls in renderer_classes]
    fast_answers = 0
    for accept in ACCEPT_HEADERS:
        for query in QUERIES:
            for suffix in SUFFIXES:
                expected = outcome(
                    DefaultContentNegotiation(), renderers, make_request(accept, query), suffix
                )
                actual = outcome(
                    FastContentNegotiation(), renderers, make_request(accept, query), suffix
                )
                assert actual == expected, (accept, query, suffix)
                fast_answers += actual == (0, renderers[0].media_type)
    assert fast_answers > 0


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_common_requests_do_not_parse_headers_or_query(accept: str | None) -> None:
    request = make_request(accept, "")
    renderer = FastJSONRenderer()
    assert FastContentNegotiation().select_renderer(request, [renderer]) == (
        renderer,
        "application/json",
    )
    assert "headers" not in request._request.__dict__
    assert "_parsed_accept_list" not in request.__dict__


def test_no_acceptable_renderer_is_still_a_406() -> None:
    with pytest.raises(exceptions.NotAcceptable):
        FastContentNegotiation().select_renderer(
            make_request("text/html", ""), [FastJSONRenderer()]
        )
