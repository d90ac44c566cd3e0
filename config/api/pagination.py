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
    direction = "-" if descending else ""
    ordered = queryset.order_by(f"{direction}{time_field}", f"{direction}pk")
    if cursor:
        values = decode_cursor(list_key, cursor)
        try:
            moment = datetime.fromisoformat(values[0])
            last_pk = values[1]
        except (IndexError, TypeError, ValueError) as exc:
            raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query") from exc
        op = "lt" if descending else "gt"
        # The first condition is implied by the second; it lets PostgreSQL seek the index
        # (…, time_field, pk) straight to the cursor instead of reading every row before it.
        ordered = ordered.filter(
            Q(**{f"{time_field}__{op}e": moment}),
            Q(**{f"{time_field}__{op}": moment}) | Q(**{time_field: moment, f"pk__{op}": last_pk}),
        )
    rows = list(ordered[: limit + 1])
    items = rows[:limit]
    next_cursor = None
    if len(rows) > limit and items:
        last = items[-1]
        next_cursor = encode_cursor(list_key, [getattr(last, time_field).isoformat(), str(last.pk)])
    return Page(items=items, next_cursor=next_cursor)
