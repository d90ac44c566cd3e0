"""Keyset pagination with opaque, signed cursors bound to the list they came from.

A cursor holds the sort key of the last item returned (never an offset), so items inserted
while a client pages never shift a page: nothing is skipped or repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.core import signing
from django.db.models import Model, Q, QuerySet
from rest_framework import serializers

from config.api.problems import RequestValidationError

M = TypeVar("M", bound=Model)

CURSOR_MAX_LENGTH = 1024


@dataclass(frozen=True)
class Page(Generic[M]):
    items: list[M]
    next_cursor: str | None


def page_query_serializer(
    *, default: int = 20, maximum: int = 100, name: str = "PageQuery"
) -> type[serializers.Serializer[Any]]:
    attrs: dict[str, Any] = {
        "limit": serializers.IntegerField(
            min_value=1, max_value=maximum, default=default, required=False
        ),
        "cursor": serializers.CharField(
            max_length=CURSOR_MAX_LENGTH, required=False, allow_blank=False
        ),
    }
    return type(name, (serializers.Serializer,), attrs)


def _salt(list_key: str) -> str:
    return f"herald.cursor.{list_key}"


def encode_cursor(list_key: str, values: list[Any]) -> str:
    return signing.dumps(values, salt=_salt(list_key), compress=False)


def decode_cursor(list_key: str, cursor: str) -> list[Any]:
    if len(cursor) > CURSOR_MAX_LENGTH:
        raise RequestValidationError({"cursor": ["Cursor is too long."]}, location="query")
    try:
        values = signing.loads(cursor, salt=_salt(list_key))
    except signing.BadSignature as exc:
        raise RequestValidationError(
            {"cursor": ["Invalid cursor: it is malformed or belongs to another list."]},
            location="query",
        ) from exc
    if not isinstance(values, list):
        raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query")
    return values


def keyset_ordered(
    queryset: QuerySet[M], *, time_field: str = "created_at", descending: bool = True
) -> QuerySet[M]:
    """``queryset`` in keyset order: by (``time_field``, pk), newest first by default."""
    direction = "-" if descending else ""
    return queryset.order_by(f"{direction}{time_field}", f"{direction}pk")


def keyset_after(
    queryset: QuerySet[M],
    moment: Any,
    last_pk: Any,
    *,
    time_field: str = "created_at",
    descending: bool = True,
) -> QuerySet[M]:
    """The rows of ``queryset`` after the position (``moment``, ``last_pk``) in keyset order."""
    op = "lt" if descending else "gt"
    # The first condition is implied by the second; it lets PostgreSQL seek the index
    # (…, time_field, pk) straight to the cursor instead of reading every row before it.
    return queryset.filter(
        Q(**{f"{time_field}__{op}e": moment}),
        Q(**{f"{time_field}__{op}": moment}) | Q(**{time_field: moment, f"pk__{op}": last_pk}),
    )


def cursor_position(list_key: str, cursor: str) -> tuple[datetime, Any]:
    """The (time, pk) position a cursor of the list ``list_key`` holds; 422 if it is not one."""
    values = decode_cursor(list_key, cursor)
    try:
        return datetime.fromisoformat(values[0]), values[1]
    except (IndexError, TypeError, ValueError) as exc:
        raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query") from exc


def page_of(rows: list[M], *, list_key: str, limit: int, time_field: str = "created_at") -> Page[M]:
    """The page of ``limit`` items from ``rows``, read in keyset order with one row more than
    the page (``[: limit + 1]``): that row, when there, says another page follows."""
    items = rows[:limit]
    next_cursor = None
    if len(rows) > limit and items:
        last = items[-1]
        next_cursor = encode_cursor(list_key, [getattr(last, time_field).isoformat(), str(last.pk)])
    return Page(items=items, next_cursor=next_cursor)


def keyset_page(
    queryset: QuerySet[M],
    *,
    list_key: str,
    limit: int,
    cursor: str | None,
    time_field: str = "created_at",
    descending: bool = True,
) -> Page[M]:
    """Order by (time_field, pk), newest first by default, and return one page."""
    ordered = keyset_ordered(queryset, time_field=time_field, descending=descending)
    if cursor:
        moment, last_pk = cursor_position(list_key, cursor)
        ordered = keyset_after(
            ordered, moment, last_pk, time_field=time_field, descending=descending
        )
    rows = list(ordered[: limit + 1])
    return page_of(rows, list_key=list_key, limit=limit, time_field=time_field)
