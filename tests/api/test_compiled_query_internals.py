"""``config/queries.py`` (``CompiledQuery``) uses Django's undocumented query internals. Each one
is checked here by name, so that a Django upgrade that moves or reshapes one fails in this file,
saying which, instead of somewhere in an API response."""

from __future__ import annotations

import inspect

import pytest
from django.db.models import query as query_module
from django.db.models.query import ModelIterable, ValuesListIterable

from workspaces.models import ApiToken

pytestmark = pytest.mark.django_db


def test_queryset_internals_compiled_query_reads() -> None:
    queryset = ApiToken.objects.select_related("user").filter(name="x")[:1]
    assert queryset._prefetch_related_lookups == ()
    assert queryset._iterable_class is ModelIterable
    assert ApiToken.objects.values_list("id")._iterable_class is ValuesListIterable
    query = queryset.query
    assert query.deferred_loading[0] == frozenset()
    assert query.extra == {}
    assert query.select_for_update is False


def test_compiler_internals_compiled_query_reads() -> None:
    compiler = ApiToken.objects.select_related("user").all()[:1].query.get_compiler(using="default")
    sql, params = compiler.as_sql()
    assert isinstance(sql, str)
    assert isinstance(params, tuple | list)
    assert isinstance(compiler.col_count, int)
    assert compiler.col_count > 0
    column = compiler.select[0]
    assert hasattr(column[0], "target")
    assert hasattr(column[0].target, "attname")
    assert isinstance(compiler.get_converters([c[0] for c in compiler.select]), dict)
    klass_info = compiler.klass_info
    assert klass_info["model"] is ApiToken
    assert isinstance(klass_info["select_fields"], list)
    assert list(inspect.signature(query_module.get_related_populators).parameters) == [
        "klass_info",
        "select",
        "db",
    ]
    assert list(inspect.signature(ApiToken.from_db).parameters) == ["db", "field_names", "values"]


def test_annotation_columns_compiled_query_reads() -> None:
    from django.db.models import Count

    queryset = ApiToken.objects.annotate(n=Count("pk")).filter(name="x")[:1]
    compiler = queryset.query.get_compiler(using="default")
    compiler.as_sql()
    columns = compiler.annotation_col_map
    assert isinstance(columns, dict)
    assert list(columns) == ["n"]
    assert isinstance(columns["n"], int)
