"""One way for an API view to answer: the last two of its four steps (parse, call, serialize,
respond).

- ``respond`` serializes one result with its output serializer (the request in the context,
  as every output serializer expects for ``$schema``) and answers it, with the status and, for
  a creation, the ``Location`` of what was created;
- ``respond_page`` answers one page of a keyset-paginated list (``config.api.pagination``) as
  ``{"items": [...], "next_cursor": ...}`` through the list's page serializer;
- ``no_content`` answers 204 with no body.

Errors never pass through here: views raise and ``config.api.problems`` answers them. Bodies
that are not JSON (a theme asset's bytes, a browser redirect) are answered with Django's own
responses.

    return respond(request, s.MediaSerializer, item, status=201, location=reverse(...))
    return respond_page(request, s.MediaPageSerializer, page)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer


class ListPage(Protocol):
    """One page of a list: ``config.api.pagination.Page`` or any object of the same shape."""

    @property
    def items(self) -> Sequence[Any]: ...

    @property
    def next_cursor(self) -> str | None: ...


def respond(
    request: Request,
    serializer: type[BaseSerializer[Any]] | None,
    instance: Any,
    *,
    status: int = 200,
    location: str | Callable[[Any], str] | None = None,
    context: Mapping[str, Any] | None = None,
) -> Response:
    """Serialize ``instance`` with ``serializer`` and answer it.

    ``serializer`` ``None``: ``instance`` is already the JSON-ready body (built by one
    projection function whose shape a serializer documents). ``context`` adds to the request
    in the serializer's context. ``location``: the ``Location`` header, or a function of the
    serialized body that returns it (an upload whose address is its own ``url`` member)."""
    if serializer is None:
        data = instance
    else:
        data = serializer(instance, context={"request": request, **(context or {})}).data
    if callable(location):
        location = location(data)
    headers = {"Location": location} if location is not None else None
    return Response(data, status=status, headers=headers)


def respond_page(
    request: Request,
    serializer: type[BaseSerializer[Any]],
    page: ListPage,
    *,
    items: Sequence[Any] | None = None,
    context: Mapping[str, Any] | None = None,
) -> Response:
    """Answer one page of a list with the list's page serializer (``items``, ``next_cursor``).

    ``items``: the page's items as the serializer should see them, when the view maps each
    one to a payload first (default: ``page.items``)."""
    body = {"items": page.items if items is None else items, "next_cursor": page.next_cursor}
    return respond(request, serializer, body, context=context)


def no_content() -> Response:
    """204: done, nothing to say (a deletion, a revocation)."""
    return Response(status=204)
