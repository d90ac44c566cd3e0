"""Compiled queries run as prepared statements on PostgreSQL (config/db/postgresql/base.py):
the server parses and plans them once per connection, the answers are those of the unprepared
query, every other query stays unprepared with client-side binding, and a statement the server
lost or no longer matches costs no failed request outside a transaction."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, NotSupportedError, connection, transaction
from django.test.utils import CaptureQueriesContext
from psycopg import ClientCursor
from psycopg.types.string import TextLoader
from rest_framework.test import APIClient

from config.db.postgresql.base import ONLY_WHEN_ASKED, DatabaseWrapper, PreparedStatementCursor
from config.queries import CompiledQuery, Param
from workspaces.models import AccessAuditEvent, ApiToken, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

TOKENS_OF_USER = CompiledQuery(
    lambda: (
        ApiToken.objects.select_related("user")
        .filter(user_id=Param("user_id", ApiToken, "user"))
        .order_by("created_at", "id")
    )
)
TOKEN_ROWS = CompiledQuery(
    lambda limit: (
        ApiToken.objects.filter(user_id=Param("user_id", ApiToken, "user"))
        .order_by("created_at", "id")
        .values_list("id", "name", "permissions", "created_at", "revoked_at", "workspace_id")[
            :limit
        ]
    )
)


def _statements() -> dict[str, tuple[str, int]]:
    """This session's prepared statements: name -> (statement, times executed)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, statement, generic_plans + custom_plans FROM pg_prepared_statements"
        )
        return {name: (statement, runs) for name, statement, runs in cursor.fetchall()}


@contextlib.contextmanager
def _unprepared() -> Iterator[None]:
    """Run the block as with preparing off on this connection (the ``HERALD_DB_PREPARE=false``
    path: ``prepared_cursor`` gives the plain client-side cursor)."""
    raw = connection.connection
    threshold = raw.prepare_threshold
    raw.prepare_threshold = None
    try:
        yield
    finally:
        raw.prepare_threshold = threshold


def _wrapper(**options: Any) -> DatabaseWrapper:
    return DatabaseWrapper(
        {
            "NAME": "herald",
            "USER": "",
            "PASSWORD": "",
            "HOST": "",
            "PORT": "",
            "OPTIONS": options,
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": False,
            "AUTOCOMMIT": True,
            "ATOMIC_REQUESTS": False,
            "TIME_ZONE": None,
            "TEST": {},
        },
        alias="prepared-probe",
    )


# --- The switch ------------------------------------------------------------------------------


def test_connections_prepare_on_request_only_unless_switched_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HERALD_DB_PREPARE", raising=False)
    assert _wrapper().get_connection_params()["prepare_threshold"] == ONLY_WHEN_ASKED
    monkeypatch.setenv("HERALD_DB_PREPARE", "false")
    assert _wrapper().get_connection_params()["prepare_threshold"] is None
    monkeypatch.setenv("HERALD_DB_PREPARE", "true")
    # Django's own setting wins: None is its documented way to turn prepared statements off.
    assert _wrapper(prepare_threshold=None).get_connection_params()["prepare_threshold"] is None
    assert _wrapper(prepare_threshold=3).get_connection_params()["prepare_threshold"] == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # reconnects
def test_switched_off_compiled_queries_run_unprepared_with_client_binding(
    monkeypatch: pytest.MonkeyPatch, user: User, make_token: Callable[..., str]
) -> None:
    make_token(user)
    expected = TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    monkeypatch.setenv("HERALD_DB_PREPARE", "false")
    connection.close()
    try:
        with connection.prepared_cursor() as cursor:
            assert isinstance(cursor.cursor, ClientCursor)  # Django's own cursor
        assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
        assert _statements() == {}
    finally:
        monkeypatch.undo()
        connection.close()
    TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    assert len(_statements()) == 1  # a new connection prepares again


# --- Prepared, and only what asks to be --------------------------------------------------------


@pytest.mark.postgres
def test_a_compiled_query_is_prepared_once_and_then_reused(
    user: User, workspace: Any, make_token: Callable[..., str]
) -> None:
    make_token(user)
    before = _statements()
    TOKENS_OF_USER.instances(user_id=user.pk)
    added = {name: value for name, value in _statements().items() if name not in before}
    assert len(added) == 1
    [(name, (statement, runs))] = added.items()
    assert runs == 1
    assert '"workspaces_apitoken"."user_id" = ($1)' in statement  # bound on the server

    TOKENS_OF_USER.instances(user_id=user.pk)
    TOKENS_OF_USER.instances(user_id=user.pk)
    after = _statements()
    assert after[name] == (statement, 3)
    assert after.keys() == before.keys() | {name}


@pytest.mark.postgres
def test_other_queries_stay_unprepared(
    user: User, workspace: Any, make_token: Callable[..., str]
) -> None:
    make_token(user)
    TOKENS_OF_USER.instances(user_id=user.pk)  # the connection now prepares on request
    before = _statements()
    for _ in range(8):  # beyond psycopg's default threshold of 5
        assert list(ApiToken.objects.filter(user=user).values_list("name", flat=True)) == ["test"]
        with connection.cursor() as cursor:
            assert isinstance(cursor.cursor, ClientCursor)
            cursor.execute("SELECT count(*) FROM workspaces_apitoken WHERE user_id = %s", [user.pk])
    assert _statements() == before


# --- Same answers ------------------------------------------------------------------------------


@pytest.mark.postgres
def test_prepared_rows_equal_the_unprepared_and_the_orms(
    user: User, workspace: Any, make_token: Callable[..., str]
) -> None:
    make_token(user, permissions=("api:read",), workspace=workspace)
    make_token(user)
    ApiToken.objects.filter(user=user, workspace=None).update(
        name="50% off_", revoked_at="2024-02-29T23:59:59.123456Z"
    )
    prepared = (
        TOKEN_ROWS.values(shape=(5,), user_id=user.pk),
        TOKENS_OF_USER.instances(user_id=user.pk),
    )
    with _unprepared():
        unprepared = (
            TOKEN_ROWS.values(shape=(5,), user_id=user.pk),
            TOKENS_OF_USER.instances(user_id=user.pk),
        )
    orm_rows = list(
        ApiToken.objects.filter(user=user)
        .order_by("created_at", "id")
        .values_list("id", "name", "permissions", "created_at", "revoked_at", "workspace_id")
    )
    assert prepared[0] == unprepared[0] == orm_rows
    assert [type(value) for value in prepared[0][1]] == [type(value) for value in orm_rows[1]]

    def model_state(tokens: list[ApiToken]) -> list[Any]:
        return [(vars(t) | {"_state": None}, vars(t.user) | {"_state": None}) for t in tokens]

    orm_instances = list(
        ApiToken.objects.select_related("user").filter(user=user).order_by("created_at", "id")
    )
    assert model_state(prepared[1]) == model_state(unprepared[1]) == model_state(orm_instances)
    assert TOKEN_ROWS.values(shape=(5,), user_id=workspace.pk) == []  # a UUID of no user


@pytest.mark.postgres
def test_access_audit_page_bytes_are_the_same_prepared_or_not(
    owner_client: APIClient, workspace: Any
) -> None:
    member = User.objects.create_user(email="member@example.test", password="x" * 12)
    WorkspaceMembership.objects.create(workspace=workspace, user=member, role="editor")
    AccessAuditEvent.objects.create(
        workspace_id=workspace.pk,
        action="member_role_changed",
        actor_user_id="",
        role="admin",
        previous_role="editor",
        status="active",
        previous_status="active",
        subject_email="member@example.test",
        subject_user_id=str(member.pk),
    )
    url = f"/api/v1/workspaces/{workspace.pk}/access-audit?limit=200"
    owner_client.get(url)  # last_used_at is written at most once a minute
    with CaptureQueriesContext(connection) as captured:
        prepared = owner_client.get(url)
    prepared_log = [query["sql"] for query in captured]  # the next request clears the log
    with _unprepared(), CaptureQueriesContext(connection) as captured:
        unprepared = owner_client.get(url)
    unprepared_log = [query["sql"] for query in captured]
    assert prepared.status_code == unprepared.status_code == 200
    assert len(prepared.json()) >= 2
    assert prepared.content == unprepared.content
    assert len(prepared_log) == 2  # the token with its user; the page: both counted, as logged
    assert prepared_log == unprepared_log
    assert (
        sum('"workspaces_accessauditevent"' in statement for statement, _ in _statements().values())
        == 1
    )


@pytest.mark.postgres
def test_execute_wrappers_see_the_prepared_query_and_its_own_cursor(
    user: User, make_token: Callable[..., str]
) -> None:
    """As ``config.api.schema._load_as_text``: loaders registered on ``context["cursor"]``."""
    make_token(user)
    seen: list[tuple[str, Any]] = []

    def load_timestamps_as_text(
        execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        seen.append((sql, context["cursor"].cursor))
        context["cursor"].cursor.adapters.register_loader("timestamptz", TextLoader)
        return execute(sql, params, many, context)

    with (
        CaptureQueriesContext(connection) as captured,
        connection.execute_wrapper(load_timestamps_as_text),
    ):
        rows = TOKEN_ROWS.values(shape=(1,), user_id=user.pk)
    assert len(seen) == 1
    assert isinstance(seen[0][1], PreparedStatementCursor)
    prepared_log = [query["sql"] for query in captured]
    with _unprepared(), CaptureQueriesContext(connection) as captured:
        TOKEN_ROWS.values(shape=(1,), user_id=user.pk)
    assert prepared_log == [query["sql"] for query in captured]  # logged as Django logs it
    assert isinstance(rows[0][3], str)  # the text PostgreSQL sent
    assert isinstance(
        TOKEN_ROWS.values(shape=(1,), user_id=user.pk)[0][3],
        type(ApiToken.objects.get().created_at),
    )


# --- Statements the server lost or no longer matches ---------------------------------------------


def _lose_statement(fragment: str) -> None:
    """``DEALLOCATE`` the prepared statement behind psycopg's back (as a pooler that switched
    sessions would): psycopg still believes it prepared."""
    [name] = [name for name, (statement, _) in _statements().items() if fragment in statement]
    with connection.cursor() as cursor:
        cursor.execute(f'DEALLOCATE "{name}"')


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # autocommit, as requests run
def test_a_lost_statement_is_run_again_unprepared_outside_a_transaction(
    user: User, make_token: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    make_token(user)
    expected = TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    _lose_statement('"workspaces_apitoken"."name"')
    assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
    assert connection.connection.prepare_threshold is None  # this connection stopped preparing
    assert "Prepared statement stale (26000" in caplog.text
    assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
    assert _statements() == {}
    connection.close()
    assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
    assert len(_statements()) == 1  # the next connection prepares again


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_lost_statement_fails_the_transaction_it_ran_in_and_not_the_next(
    user: User, make_token: Callable[..., str]
) -> None:
    make_token(user)
    expected = TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    _lose_statement('"workspaces_apitoken"."name"')
    with pytest.raises(DatabaseError, match="does not exist"), transaction.atomic():
        TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
    with transaction.atomic():
        assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_schema_change_elsewhere_costs_no_failed_query(
    user: User, make_token: Callable[..., str]
) -> None:
    """Another session changes a selected column's type: PostgreSQL refuses the cached plan
    ("cached plan must not change result type") until the statement is prepared again."""
    make_token(user)
    expected = TOKEN_ROWS.values(shape=(5,), user_id=user.pk)
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE workspaces_apitoken ALTER COLUMN name TYPE varchar(121)")
        assert TOKEN_ROWS.values(shape=(5,), user_id=user.pk) == expected
        assert connection.connection.prepare_threshold is None
    finally:
        connection.close()  # no statement left that would hold the table's old shape
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE workspaces_apitoken ALTER COLUMN name TYPE varchar(120)")
        other.close()


@pytest.mark.postgres
def test_other_errors_of_a_prepared_query_are_raised_and_preparing_goes_on(user: User) -> None:
    """FEATURE_NOT_SUPPORTED has many causes; only the stale plan is retried."""
    query = CompiledQuery(
        lambda: (
            User.objects.select_for_update()
            .filter(pk=Param("pk", User, "id"))
            .distinct()
            .values_list("email")
        )
    )
    with (
        pytest.raises(NotSupportedError, match="FOR UPDATE is not allowed with DISTINCT"),
        transaction.atomic(),
    ):
        query.values(pk=user.pk)
    assert connection.connection.prepare_threshold == ONLY_WHEN_ASKED
