"""A rendered API response is freed with the request: no reference cycle keeps it, its rows and
its view alive until the cyclic garbage collector runs (``release_view_references``)."""

from __future__ import annotations

import gc
import io
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from rest_framework.response import Response


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _serve(handler: WSGIHandler, path: str, token: str) -> int:
    path, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "testserver",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    statuses: list[str] = []
    body = handler(environ, lambda status, headers, exc_info=None: statuses.append(status))
    b"".join(body)
    body.close()  # as a WSGI server does
    return int(statuses[0].split()[0])


def _live_responses() -> int:
    # type(), not isinstance(): a dead weak proxy among the objects raises on isinstance().
    return sum(issubclass(type(obj), Response) for obj in gc.get_objects())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/workspaces/{id}/access-audit?limit=200",
        "/api/v1/me",
        "/api/v1/workspaces/00000000-0000-4000-8000-000000000000/access-audit",
    ],
)
def test_an_api_response_is_freed_without_the_cyclic_collector(
    collector_off: None, make_token: Any, user: Any, workspace: Any, path: str
) -> None:
    handler = WSGIHandler()
    token = make_token(user)
    url = path.format(id=workspace.pk)
    _serve(handler, url, token)  # warm: lazy imports, compiled queries
    before = _live_responses()
    statuses = [_serve(handler, url, token) for _ in range(5)]
    assert statuses[0] in (200, 404)
    assert _live_responses() == before


def test_the_links_are_released_only_after_rendering() -> None:
    from config.api.middleware import release_view_references

    class View:
        pass

    view = View()
    response = Response({"a": 1})
    response.renderer_context = {"view": view, "request": None}
    view.response = response  # type: ignore[attr-defined]
    release_view_references(response)  # not rendered yet: untouched
    assert response.renderer_context["view"] is view
    response._is_rendered = True
    release_view_references(response)
    assert response.renderer_context == {}
    assert not hasattr(view, "response")
    assert response.data == {"a": 1}
