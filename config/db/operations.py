"""Migration operations for indexes on tables that are big in production, and a column default.

On PostgreSQL an index is built with ``CREATE INDEX CONCURRENTLY`` (and dropped with ``DROP INDEX
CONCURRENTLY``): writes to the table go on while it builds. Those statements cannot run inside a
transaction, so a migration using these operations sets ``atomic = False``. On any other backend
(SQLite in development and tests) the same index is created or dropped the plain way. The
migration state is the same on every backend, so ``makemigrations --check`` sees an ordinary
``AddIndex``/``RemoveIndex``.

Every operation here can run again after ``migrate`` was killed half-way. A non-atomic migration
is recorded only once all its operations have run, so the next ``migrate`` starts it over; and a
concurrent build that was interrupted leaves an *invalid* index behind under the same name
(PostgreSQL keeps it, and ``CREATE INDEX`` then fails with "already exists"). So an index build
first drops an invalid leftover, and skips an index that is already built and valid; a drop is
``IF EXISTS``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db.migrations.operations.base import Operation
from django.db.models import NOT_PROVIDED, Index


def _concurrently(schema_editor: Any) -> bool:
    return bool(schema_editor.connection.vendor == "postgresql")


def _postgres_index_valid(schema_editor: Any, name: str) -> bool | None:
    """True for a built index named ``name``, False for an invalid leftover, None if absent."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND pg_catalog.pg_table_is_visible(c.oid)",
            [name],
        )
        row = cursor.fetchone()
    return None if row is None else bool(row[0])


def _index_exists(schema_editor: Any, model: Any, name: str) -> bool:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return name in constraints


def _create_index(schema_editor: Any, model: Any, index: Index) -> None:
    """Build ``index`` unless it is already built; an interrupted build's leftover goes first."""
    if not _concurrently(schema_editor):
        if not _index_exists(schema_editor, model, index.name):
            schema_editor.add_index(model, index)
        return
    valid = _postgres_index_valid(schema_editor, index.name)
    if valid:
        return
    if valid is False:
        schema_editor.remove_index(model, index, concurrently=True)  # DROP … IF EXISTS
    schema_editor.add_index(model, index, concurrently=True)


def _drop_index(schema_editor: Any, model: Any, index: Index) -> None:
    if _concurrently(schema_editor):
        schema_editor.remove_index(model, index, concurrently=True)  # DROP … IF EXISTS
    elif _index_exists(schema_editor, model, index.name):
        schema_editor.remove_index(model, index)


class AddIndexConcurrentlyOnPostgres(AddIndexConcurrently):
    """``AddIndexConcurrently`` on PostgreSQL, ``AddIndex`` elsewhere; re-runnable."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            if _concurrently(schema_editor):
                self._ensure_not_in_transaction(schema_editor)
            _create_index(schema_editor, model, self.index)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            if _concurrently(schema_editor):
                self._ensure_not_in_transaction(schema_editor)
            _drop_index(schema_editor, model, self.index)


class RemoveIndexConcurrentlyOnPostgres(RemoveIndexConcurrently):
    """``RemoveIndexConcurrently`` on PostgreSQL, ``RemoveIndex`` elsewhere; re-runnable."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            if _concurrently(schema_editor):
                self._ensure_not_in_transaction(schema_editor)
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            _drop_index(schema_editor, model, index)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            if _concurrently(schema_editor):
                self._ensure_not_in_transaction(schema_editor)
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            _create_index(schema_editor, model, index)


class EnsureDatabaseDefault(Operation):
    """Give a column the database default its field declares (``db_default``), whatever the
    column had: for a field whose ``db_default`` was added to an already-applied migration, so
    that databases which applied the earlier version of that migration get it too. The state
    does not change; on PostgreSQL it is one ``ALTER COLUMN … SET DEFAULT`` (catalogue only, no
    table rewrite), on SQLite a table rebuild. Running it again changes nothing."""

    reversible = True
    reduces_to_sql = False

    def __init__(self, model_name: str, name: str) -> None:
        self.model_name = model_name
        self.name = name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__name__, [], {"model_name": self.model_name, "name": self.name})

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        field = model._meta.get_field(self.name)
        without = field.clone()
        without.db_default = NOT_PROVIDED
        without.set_attributes_from_name(self.name)
        without.model = model
        schema_editor.alter_field(model, without, field)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        pass  # a database default is harmless to code that sets the column itself

    def describe(self) -> str:
        return f"Ensure the database default of {self.model_name}.{self.name}"
