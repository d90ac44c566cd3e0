"""PostgreSQL's text form of ``timestamptz`` values, for ``FlatRows`` (the access audit's 200-row
page selects date-times and UUIDs cast to text: ``FlatRows.columns``).

``iso_from_text`` assumes PostgreSQL's ISO text (``DateStyle`` ISO, Django's connection default:
``YYYY-MM-DD HH:MM:SS[.ffffff]+00`` in UTC, trailing fraction zeros dropped) and rewrites it
into DRF's ISO 8601 text by slicing. Text of any other shape is parsed with
``datetime.fromisoformat``; a test compares every fraction length with what the server sends.
"""

from __future__ import annotations

import datetime

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
