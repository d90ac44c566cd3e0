"""PostgreSQL's text form of ``timestamptz`` and ``uuid`` values, for ``FlatRows`` (the access
audit's 200-row page): the one place the API depends on something Django does not document.

Measured alone (bench/README.md), loading these two types as text instead of through Django's
pure-Python ``timestamptz`` loader saves 30-40 % of the 200-row page's server CPU, and rewriting
the UTC text by slicing another 10-20 %. The price:

- ``load_as_text`` is a Django execute wrapper (public) that reaches the psycopg cursor under
  Django's ``CursorWrapper`` through its undocumented ``cursor`` attribute, and registers
  psycopg's public ``TextLoader`` on it (this query only). If Django renames that attribute,
  the wrapper raises at once (``AttributeError``) rather than silently loading typed values;
  ``tests/api/test_api_representations.py`` runs it on PostgreSQL.
- ``iso_from_text`` assumes PostgreSQL's ISO text (``DateStyle`` ISO, Django's connection
  default: ``YYYY-MM-DD HH:MM:SS[.ffffff]+00`` in UTC, trailing fraction zeros dropped). Text of
  any other shape is parsed with ``datetime.fromisoformat``; a test compares every fraction
  length with what the server sends.
"""

from __future__ import annotations

import datetime
from typing import Any

from psycopg.types.string import TextLoader


def load_as_text(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """Django execute wrapper: this one query loads ``timestamptz`` and ``uuid`` values as the
    text PostgreSQL sent (registered on this query's psycopg cursor, not on the connection)."""
    adapters = context["cursor"].cursor.adapters  # Django's CursorWrapper -> psycopg cursor
    adapters.register_loader("timestamptz", TextLoader)
    adapters.register_loader("uuid", TextLoader)
    return execute(sql, params, many, context)


# Zeros that complete a fraction of 1 to 5 digits to DRF's six, by the text's length.
_FRACTION_PADDING = {size: "0" * (29 - size) for size in range(24, 29)}


def iso_from_text(value: str) -> str | None:
    """DRF's ISO 8601 text (six fraction digits or none, ``T``, ``Z``) of PostgreSQL's text of a
    UTC date-time, rewritten by slicing; ``None`` when ``value`` is not of that shape."""
    if value[26:] == "+00":  # 29 characters: six fraction digits, the common case
        if value[10] == " " and value[4] == "-":
            return f"{value[:10]}T{value[11:26]}Z"
    elif value[-3:] == "+00" and value[10:11] == " " and value[4:5] == "-":
        size = len(value)
        if 24 <= size <= 28 and value[19] == ".":
            return f"{value[:10]}T{value[11:-3]}{_FRACTION_PADDING[size]}Z"
        if size == 22:
            return f"{value[:10]}T{value[11:19]}Z"
    return None


def parse(value: str) -> datetime.datetime:
    """PostgreSQL's text of a date-time, as a ``datetime``."""
    return datetime.datetime.fromisoformat(value)
