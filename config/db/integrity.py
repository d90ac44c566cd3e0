"""Which database error an ``IntegrityError`` is.

A unique-key conflict is an expected race (two requests creating the same row; the loser says
so). Any other integrity error (a NOT NULL, foreign-key or check violation) means the database
and the code disagree, as when an older or newer release runs against a schema it does not
match: that is no conflict the client caused, and is reported and logged as such.
"""

from __future__ import annotations

from django.db import IntegrityError

_POSTGRES_UNIQUE_VIOLATION = "23505"
_SQLITE_UNIQUE = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")


def is_unique_violation(exc: IntegrityError) -> bool:
    """True when the database refused a duplicate key (PostgreSQL SQLSTATE 23505, SQLite's
    UNIQUE and PRIMARY KEY constraint errors)."""
    cause = exc.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate is not None:
        return bool(sqlstate == _POSTGRES_UNIQUE_VIOLATION)
    return getattr(cause, "sqlite_errorname", None) in _SQLITE_UNIQUE
