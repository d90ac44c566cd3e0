"""The fast paths of the hottest reads (bench/api.py, bench/delivery.py) answer exactly as the
plain ORM and DRF code would: compiled queries, the one-query access audit, the orjson renderer."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import close_old_connections, connection, transaction
from django.db.models import TextChoices
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from config.api.renderers import FastJSONRenderer
from config.queries import CompiledQuery, Param
from tests.problem_asserts import assert_problem
from workspaces.access import Actor
from workspaces.models import AccessAuditEvent, ApiToken, User, Workspace, WorkspaceMembership
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


def audit_url(workspace: Any) -> str:
    return f"/api/v1/workspaces/{workspace.pk}/access-audit?limit=200"


# --- CompiledQuery ---------------------------------------------------------------------------


def test_compiled_values_equal_the_orms_rows(
    user: User, workspace: Any, make_token: Callable[..., str]
) -> None:
    make_token(user, permissions=("api:read",))
    tokens = CompiledQuery(
        lambda limit: (
            ApiToken.objects.filter(user_id=Param("user_id", ApiToken, "user"))
            .order_by("created_at")
            .values_list("id", "permissions", "created_at", "revoked_at")[:limit]
        )
    )
    expected = list(
        ApiToken.objects.filter(user_id=user.pk)
        .order_by("created_at")
        .values_list("id", "permissions", "created_at", "revoked_at")[:5]
    )
    found = tokens.values(shape=(5,), user_id=user.pk)
    assert found == expected
    assert found[0][1] == ["api:read"]  # JSON decoded by the field's converter
    assert isinstance(found[0][2], datetime.datetime)
    assert found[0][2].tzinfo is not None
    assert tokens.values(shape=(5,), user_id=uuid.uuid4()) == []


def test_compiled_instances_carry_their_select_related_objects(
    user: User, make_token: Callable[..., str]
) -> None:
    make_token(user)
    make_token(user)
    query = CompiledQuery(
        lambda: ApiToken.objects.select_related("user").filter(
            user_id=Param("user_id", ApiToken, "user")
        )
    )
    with CaptureQueriesContext(connection) as captured:
        found = query.instances(user_id=user.pk)
        emails = {token.user.email for token in found}
    assert len(captured) == 1
    assert emails == {user.email}
    assert {token.pk for token in found} == set(
        ApiToken.objects.filter(user=user).values_list("pk", flat=True)
    )
    assert not found[0]._state.adding
    assert found[0]._state.db == "default"


def test_compiled_query_binds_uuids_per_database(user: User, workspace: Any) -> None:
    """A UUID parameter goes through the field's preparation (hex text on SQLite)."""
    members = CompiledQuery(
        lambda: WorkspaceMembership.objects.filter(
            workspace_id=Param("workspace_id", WorkspaceMembership, "workspace")
        ).values_list("role")
    )
    assert members.values(workspace_id=workspace.pk) == [("admin",)]
    assert members.values(workspace_id=uuid.uuid4()) == []


def test_compiled_query_is_compiled_once_per_shape(user: User) -> None:
    built: list[tuple[Any, ...]] = []

    def build(limit: int) -> Any:
        built.append((limit,))
        return User.objects.filter(pk=Param("pk", User, "id")).values_list("email")[:limit]

    query = CompiledQuery(build)
    assert query.values(shape=(1,), pk=user.pk) == [(user.email,)]
    assert query.values(shape=(1,), pk=user.pk) == [(user.email,)]
    assert query.values(shape=(2,), pk=uuid.uuid4()) == []
    assert built == [(1,), (2,)]


def test_compiled_query_refuses_prefetching() -> None:
    query = CompiledQuery(lambda: ApiToken.objects.prefetch_related("user"))
    with pytest.raises(TypeError, match="plain reads"):
        query.instances()


def test_compiled_query_refuses_rows_it_would_shape_differently() -> None:
    with pytest.raises(TypeError, match="ValuesListIterable"):
        CompiledQuery(lambda: ApiToken.objects.values("id")).values()
    with pytest.raises(TypeError, match="ValuesListIterable"):
        CompiledQuery(lambda: ApiToken.objects.values_list("id", flat=True)).values()
    with pytest.raises(TypeError, match="ModelIterable"):
        CompiledQuery(lambda: ApiToken.objects.values_list("id")).instances()


@pytest.mark.django_db(transaction=True)  # autocommit outside the atomic block, as in production
def test_locking_compiled_query_runs_only_inside_a_transaction(user: User) -> None:
    locked = CompiledQuery(
        lambda: (
            User.objects.select_for_update().filter(pk=Param("pk", User, "id")).values_list("email")
        )
    )
    with transaction.atomic():
        assert locked.values(pk=user.pk) == [(user.email,)]  # compiled here, inside
    with pytest.raises(TransactionManagementError):
        locked.values(pk=user.pk)


def test_param_needs_a_concrete_field() -> None:
    with pytest.raises(TypeError, match="not a concrete field"):
        Param("x", User, "workspace_memberships")


# --- The PostgreSQL connection health check (Django's) ---------------------------------------------------------------


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_replaced_before_the_next_query() -> None:
    pid = _backend_pid()
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    close_old_connections()  # Django's health check (SELECT 1) finds it closed
    assert _backend_pid() != pid  # reconnected; no error reached the caller


# --- The Redis broker transport -------------------------------------------------------------


def test_redis_broker_channel_reuses_one_client_until_its_pool_is_replaced() -> None:
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs REDIS_URL (the Redis broker)")
    from config.celery import app

    with app.connection_for_write() as broker:
        channel = broker.default_channel
        assert type(channel).__name__ == "RedisChannel"
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
            assert first.ping()
        channel._disconnect_pools()  # what kombu does after a connection error
        with channel.conn_or_acquire() as third:
            assert third is not first
            assert third.connection_pool is channel.pool
            assert third.ping()


# --- Bearer authentication still reads validity every time -----------------------------------


def test_revocation_expiry_and_inactive_user_apply_at_once(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any
) -> None:
    client = bearer_client(user)
    assert client.get("/api/v1/workspaces").status_code == 200
    token = ApiToken.objects.get(user=user)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert client.get("/api/v1/workspaces").status_code == 401
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=None, expires_at=timezone.now())
    assert client.get("/api/v1/workspaces").status_code == 401
    ApiToken.objects.filter(pk=token.pk).update(expires_at=None)
    assert client.get("/api/v1/workspaces").status_code == 200
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert client.get("/api/v1/workspaces").status_code == 401


# --- Access audit: one query, same answers ---------------------------------------------------


def test_admin_page_is_two_queries_token_included(owner_client: APIClient, workspace: Any) -> None:
    owner_client.get(audit_url(workspace))  # last_used_at is written at most once a minute
    with CaptureQueriesContext(connection) as captured:
        response = owner_client.get(audit_url(workspace))
    assert response.status_code == 200
    assert len(response.json()) == 1
    assert len(captured) == 2  # the token with its user; the page with the admin check


def test_token_bound_to_another_workspace_never_reads_this_one(
    bearer_client: Callable[..., APIClient], user: User, organization: Any, workspace: Any
) -> None:
    """The user is an admin of both workspaces; the token is bound to the other one."""
    other = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Other")
    client = bearer_client(user, workspace=other)
    assert_problem(client.get(audit_url(workspace)), 403, "token_workspace_scope")
    assert client.get(audit_url(other)).status_code == 200
    unknown = Workspace(pk=uuid.uuid4())
    assert_problem(client.get(audit_url(unknown)), 404, "not_found")  # 404 comes first


def test_admin_of_a_workspace_without_events_gets_an_empty_page(
    owner_client: APIClient, workspace: Any
) -> None:
    AccessAuditEvent.objects.filter(workspace_id=workspace.pk).delete()
    response = owner_client.get(audit_url(workspace))
    assert response.status_code == 200
    assert response.json() == []


def test_non_member_gets_403_and_no_rows(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], workspace: Any
) -> None:
    stranger = make_user()
    assert_problem(bearer_client(stranger).get(audit_url(workspace)), 403, "no_workspace_access")


@pytest.mark.parametrize(
    ("role", "status", "code"),
    [("editor", "active", "role_too_low"), ("admin", "inactive", "no_workspace_access")],
)
def test_demoted_or_deactivated_admin_is_refused_at_once(
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    role: str,
    status: str,
    code: str,
) -> None:
    admin = make_user()
    membership = WorkspaceMembership.objects.create(workspace=workspace, user=admin, role="admin")
    client = bearer_client(admin)
    assert client.get(audit_url(workspace)).status_code == 200
    WorkspaceMembership.objects.filter(pk=membership.pk).update(role=role, status=status)
    assert_problem(client.get(audit_url(workspace)), 403, code)


# --- Renderer --------------------------------------------------------------------------------


class Color(TextChoices):
    RED = "red", "Red"


@pytest.mark.parametrize(
    "data",
    [
        {"a": 1, "nested": [1, {"b": None, "c": True, "d": 1.5, "e": -3}], "empty": {}, "list": []},
        {"text": 'ünïcode \u2028 line \u2029 paragraph \x00 \x1f \x7f "quoted" \\ / \t\n'},
        {"aware": datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)},
        {"naive": datetime.datetime(2026, 1, 2, 3, 4, 5), "date": datetime.date(2026, 1, 2)},  # noqa: DTZ001
        {
            "time": datetime.time(3, 4, 5, 6),
            "uuid": uuid.UUID(int=7),
            "decimal": decimal.Decimal("1.10"),
        },
        {"lazy": gettext_lazy("Lazy"), "choice": Color.RED, "tuple": (1, 2)},
        {"big": 2**70},  # beyond orjson: DRF's encoder renders it
        [],
        "plain",
        0,
    ],
)
def test_fast_renderer_gives_drfs_bytes(data: Any) -> None:
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)


def test_fast_renderer_indents_like_drf_when_asked() -> None:
    data = {"a": [1, 2]}
    accepted = "application/json; indent=2"
    assert FastJSONRenderer().render(data, accepted) == JSONRenderer().render(data, accepted)
    assert FastJSONRenderer().render(None) == b""


def test_fast_renderer_fails_like_drf_on_unknown_types() -> None:
    with pytest.raises(TypeError):
        FastJSONRenderer().render({"x": object()})
