"""Migration operations for indexes on tables that are big in production.

On PostgreSQL an index is built with ``CREATE INDEX CONCURRENTLY`` (and dropped with ``DROP INDEX
CONCURRENTLY``): writes to the table go on while it builds. Those statements cannot run inside a
transaction, so a migration using these operations sets ``atomic = False``. On any other backend
(SQLite in development and tests) the same index is created or dropped the plain way. The
migration state is the same on every backend, so ``makemigrations --check`` sees an ordinary
``AddIndex``/``RemoveIndex``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db.migrations.operations import AddIndex, RemoveIndex


def _concurrently(schema_editor: Any) -> bool:
    return bool(schema_editor.connection.vendor == "postgresql")


class AddIndexConcurrentlyOnPostgres(AddIndexConcurrently):
    """``AddIndexConcurrently`` on PostgreSQL, ``AddIndex`` elsewhere."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _concurrently(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _concurrently(schema_editor):
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class RemoveIndexConcurrentlyOnPostgres(RemoveIndexConcurrently):
    """``RemoveIndexConcurrently`` on PostgreSQL, ``RemoveIndex`` elsewhere."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _concurrently(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if _concurrently(schema_editor):
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
