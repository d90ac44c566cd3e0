"""Hot queries whose SQL the ORM compiles once per process, then runs with new parameters.

Building and compiling a queryset costs the ORM 0.3 to 1.2 ms of CPU per query (cloning, lookups,
joins, quoting), several times what PostgreSQL spends running a small indexed query. On the
query every API call makes (the bearer-token lookup), on the largest read (the access audit)
and on the read of every delivery (the destination with its publication, account and app),
that was a large part of the CPU. ``CompiledQuery`` keeps the ORM as the one place that writes
the SQL, and pays for it once:

    page = CompiledQuery(lambda limit: Event.objects.filter(
        workspace_id=Param("workspace_id", Event, "workspace")).order_by("-created_at")[:limit])
    rows = page.values(shape=(200,), workspace_id=workspace.pk)

- ``build(*shape)`` returns the queryset. ``Param`` marks each value that changes from call to
  call; the ORM compiles it to one placeholder. Anything that changes the SQL text (a slice
  size, a field list) is a ``shape`` argument: each shape is compiled once, on first use, and
  kept for the life of the process, so shapes must come from a small set (e.g. 1 to 200).
- At run time each value goes through its model field's ``get_db_prep_value`` (as a lookup
  would prepare it), the SQL runs on a cursor of the queryset's database (so
  ``connection.execute_wrapper`` hooks and query logging still see it), and rows get the ORM's
  own converters (``values``) or become model instances with their ``select_related`` objects
  the way ``QuerySet.__iter__`` builds them, annotations set as attributes (``instances``).
Only plain reads belong here: no ``prefetch_related``, no ``only``/``defer``, no ``extra``.

This module is the one place that uses Django's undocumented query internals: ``QuerySet.query``,
``_prefetch_related_lookups`` and ``_iterable_class``; ``Query.get_compiler``; the compiler's
``as_sql``, ``select``, ``col_count``, ``klass_info``, ``annotation_col_map`` and
``get_converters``; ``django.db.models.query.get_related_populators`` and ``Model.from_db``.
It stays only where, measured alone per use site, it saves at least 10 % of the hot path's CPU
(bench/README.md, "Compiled queries measured again", ``bench/compiled_queries.py``: thread CPU
per call, 2026-11-28): the bearer-token lookup 33 % of a 1-row audit request, the audit page
45 % of a 200-row one, the workspace list 44 % of its request, the destination read 14 % of a
send. The outcome transaction's two reads (3 % of a send's CPU measured alone) stay compiled
too: as plain querysets they were most of what made a text send costlier than before long
sends, counted in Python calls (bench/README.md "Burst benchmark").
``tests/api/test_compiled_query_internals.py`` checks each of those names and shapes, so a
Django upgrade that moves one fails there, by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Expression, Field, Model, QuerySet
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators
from django.db.transaction import TransactionManagementError


class Param(Expression):
    """A named run-time value of a ``CompiledQuery``, typed by a model field
    (``Param("user_id", WorkspaceMembership, "user")``)."""

    def __init__(self, name: str, model: type[Model], field: str) -> None:
        model_field = model._meta.get_field(field)
        if not isinstance(model_field, Field):
            raise TypeError(f"{model.__name__}.{field} is not a concrete field")
        super().__init__(output_field=model_field)
        self.name = name

    # The parameter is this object, bound at run time; a list, as Django's own params are
    # (the stubs say tuple: the ignore).
    def as_sql(  # type: ignore[override]
        self,
        compiler: Any,
        connection: Any,
    ) -> tuple[str, list[Any]]:
        return "%s", [self]  # the parameter marks its own slot until run time

    def bind(self, value: Any, connection: Any) -> Any:
        return self.output_field.get_db_prep_value(value, connection, prepared=False)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]  # constants, and a Param in each run-time slot
    converters: dict[int, Any]
    locking: bool = False  # SELECT ... FOR UPDATE: only inside a transaction, as the ORM demands
    model: Any = None  # for instances(): ModelIterable's bookkeeping, computed once
    fields: tuple[int, int, list[str]] | None = None
    populators: list[Any] | None = None
    annotations: tuple[tuple[str, int], ...] = ()  # (attribute, column) of each annotation


class CompiledQuery:
    def __init__(self, build: Callable[..., QuerySet[Any]], *, using: str = "default") -> None:
        self.build = build
        self.using = using
        self._compiled: dict[Hashable, _Compiled] = {}
        self._lock = threading.Lock()

    def values(self, *, shape: Sequence[Hashable] = (), **values: Any) -> list[Any]:
        """The rows of a ``values_list`` queryset, converted as the ORM converts them."""
        compiled = self._get(tuple(shape))
        return self._execute(compiled, values)

    def instances(self, *, shape: Sequence[Hashable] = (), **values: Any) -> list[Any]:
        """Model instances (with their ``select_related`` objects), as ``list(queryset)``."""
        compiled = self._get(tuple(shape), instances=True)
        rows = self._execute(compiled, values)
        start, end, names = compiled.fields or (0, 0, [])
        found = []
        for row in rows:
            obj = compiled.model.from_db(self.using, names, row[start:end])
            for populator in compiled.populators or ():
                populator.populate(row, obj)
            for attribute, column in compiled.annotations:
                setattr(obj, attribute, row[column])
            found.append(obj)
        return found

    def _execute(self, compiled: _Compiled, values: dict[str, Any]) -> list[Any]:
        connection = connections[self.using]
        if compiled.locking and connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        params = [
            item.bind(values[item.name], connection) if isinstance(item, Param) else item
            for item in compiled.params
        ]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if not compiled.converters:
            return list(rows)
        # SQLCompiler.apply_converters, with this thread's connection.
        converters = list(compiled.converters.items())
        converted = []
        for row in map(list, rows):
            for position, (functions, expression) in converters:
                value = row[position]
                for convert in functions:
                    value = convert(value, expression, connection)
                row[position] = value
            converted.append(tuple(row))
        return converted

    def _get(self, shape: tuple[Hashable, ...], *, instances: bool = False) -> _Compiled:
        key = (connections[self.using].vendor, shape, instances)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(key) or self._compile(shape, instances)
                self._compiled[key] = compiled
        return compiled

    def _compile(self, shape: tuple[Hashable, ...], instances: bool) -> _Compiled:
        queryset = self.build(*shape)
        query = queryset.query
        # _prefetch_related_lookups: a private QuerySet attribute, not in the stubs.
        prefetches = queryset._prefetch_related_lookups  # type: ignore[attr-defined]
        if prefetches or query.deferred_loading[0] or query.extra:
            raise TypeError("CompiledQuery runs plain reads only")
        expected = ModelIterable if instances else ValuesListIterable
        if queryset._iterable_class is not expected:  # e.g. values() dicts, flat=True scalars
            raise TypeError(
                f"{'instances' if instances else 'values'}() needs a {expected.__name__} queryset"
            )
        compiler = query.get_compiler(using=self.using)
        sql, params = compiler.as_sql()
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        converters = compiler.get_converters(fields)
        locking = bool(query.select_for_update)
        if not instances:
            return _Compiled(sql, tuple(params), converters, locking)
        klass_info = compiler.klass_info
        select_fields = klass_info["select_fields"]
        start, end = select_fields[0], select_fields[-1] + 1
        names = [column[0].target.attname for column in compiler.select[start:end]]
        return _Compiled(
            sql,
            tuple(params),
            converters,
            locking,
            model=klass_info["model"],
            fields=(start, end, names),
            populators=get_related_populators(klass_info, compiler.select, self.using),
            annotations=tuple(compiler.annotation_col_map.items()),
        )
