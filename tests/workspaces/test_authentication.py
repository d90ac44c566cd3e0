"""Bearer tokens and browser sessions: 401 versus 403, CSRF, one-time tokens."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_problem
from workspaces.access import Actor
from workspaces.models import ApiToken, User, WorkspaceMembership
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"
TOKENS = "/api/v1/api-tokens"


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


# --- 401 ------------------------------------------------------------------------------------


def test_missing_credentials_are_401_with_challenge(api_client: APIClient) -> None:
    response = api_client.get(ME)
    assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token hrld_00000000_" + "A" * 43,
        "Bearer not-a-herald-token",
        "Bearer hrld_XYZ_short",
        "Bearer hrld_0000000g_" + "A" * 43,
    ],
)
def test_malformed_credentials_are_401(api_client: APIClient, header: str) -> None:
    response = api_client.get(ME, HTTP_AUTHORIZATION=header)
    assert_problem(response, 401, "not_authenticated")


def test_unknown_token_is_401(api_client: APIClient) -> None:
    response = api_client.get(ME, HTTP_AUTHORIZATION="Bearer hrld_0123abcd_" + "A" * 43)
    assert_problem(response, 401, "not_authenticated")


def test_right_id_with_wrong_secret_is_401(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user)
    forged = token[: -len("x")] + ("B" if token[-1] != "B" else "C")
    assert_problem(bearer(forged).get(ME), 401, "not_authenticated")
    assert bearer(token).get(ME).status_code == 200


def test_token_expires_with_the_clock(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user, expires_at=timezone.now() + timedelta(days=1))
    assert bearer(token).get(ME).status_code == 200
    with time_machine.travel(timezone.now() + timedelta(days=1, seconds=1)):
        assert_problem(bearer(token).get(ME), 401, "not_authenticated")


def test_token_expired_in_the_database_is_401(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user)
    ApiToken.objects.filter(user=user).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_problem(bearer(token).get(ME), 401, "not_authenticated")


def test_revoked_token_is_401(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user)
    ApiToken.objects.filter(user=user).update(revoked_at=timezone.now())
    assert_problem(bearer(token).get(ME), 401, "not_authenticated")


def test_token_of_an_inactive_user_is_401(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user)
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert_problem(bearer(token).get(ME), 401, "not_authenticated")


def test_valid_token_records_last_use(user: User, make_token: Callable[..., str]) -> None:
    token = make_token(user)
    response = bearer(token).get(ME)
    assert response.status_code == 200
    assert response.json()["user"]["email"] == user.email
    assert ApiToken.objects.get(user=user).last_used_at is not None


# --- 403 ------------------------------------------------------------------------------------


def test_read_only_token_cannot_write(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any
) -> None:
    client = bearer_client(user, permissions=("api:read",))
    assert client.get("/api/v1/workspaces").status_code == 200
    response = client.post("/api/v1/organizations", {"name": "Other"}, format="json")
    assert_problem(response, 403, "token_permission")
    response = client.patch(f"/api/v1/workspaces/{workspace.pk}", {"name": "X"}, format="json")
    assert_problem(response, 403, "token_permission")


def test_write_only_token_cannot_read(bearer_client: Callable[..., APIClient], user: User) -> None:
    client = bearer_client(user, permissions=("api:write",))
    assert_problem(client.get(ME), 403, "token_permission")


@pytest.fixture
def second_workspace(user: User, organization: Any, workspace: Any) -> Any:
    return workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Second")


def test_token_bound_to_workspace_a_is_refused_on_workspace_b(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any, second_workspace: Any
) -> None:
    client = bearer_client(user, workspace=workspace)
    assert client.get(f"/api/v1/workspaces/{workspace.pk}").status_code == 200
    for path in (
        f"/api/v1/workspaces/{second_workspace.pk}",
        f"/api/v1/workspaces/{second_workspace.pk}/members",
        f"/api/v1/workspaces/{second_workspace.pk}/access-audit",
    ):
        assert_problem(client.get(path), 403, "token_workspace_scope")
    listed = [item["id"] for item in client.get("/api/v1/workspaces").json()["items"]]
    assert listed == [str(workspace.pk)]


def test_workspace_bound_token_cannot_reach_organizations(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any, organization: Any
) -> None:
    client = bearer_client(user, workspace=workspace)
    assert_problem(client.get("/api/v1/organizations"), 403, "token_workspace_scope")
    assert_problem(
        client.get(f"/api/v1/organizations/{organization.pk}"), 403, "token_workspace_scope"
    )


def test_inactive_member_gets_403(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], workspace: Any
) -> None:
    member = make_user()
    WorkspaceMembership.objects.create(
        workspace=workspace, user=member, role="admin", status="inactive"
    )
    client = bearer_client(member)
    assert_problem(client.get(f"/api/v1/workspaces/{workspace.pk}"), 403, "no_workspace_access")
    assert client.get("/api/v1/workspaces").json()["items"] == []


def test_viewer_cannot_change_the_workspace(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], workspace: Any
) -> None:
    viewer = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=viewer, role="viewer")
    client = bearer_client(viewer)
    assert client.get(f"/api/v1/workspaces/{workspace.pk}").status_code == 200
    response = client.patch(f"/api/v1/workspaces/{workspace.pk}", {"name": "X"}, format="json")
    assert_problem(response, 403, "role_too_low")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", TOKENS),
        ("post", TOKENS),
        ("delete", TOKENS + "/0123abcd"),
        ("get", "/api/v1/workspaces/{ws}/deletion-preview"),
        ("delete", "/api/v1/workspaces/{ws}"),
    ],
)
def test_bearer_tokens_are_refused_on_session_only_routes(
    owner_client: APIClient, workspace: Any, method: str, path: str
) -> None:
    body = {"name": "t", "permissions": ["api:read"], "confirm_name": workspace.name}
    response = getattr(owner_client, method)(path.format(ws=workspace.pk), body, format="json")
    assert_problem(response, 403, "session_required")


# --- Sessions, CSRF and token management ----------------------------------------------------


def test_session_post_without_csrf_token_is_403(session_client: APIClient) -> None:
    response = session_client.post(
        TOKENS, {"name": "ci", "permissions": ["api:read"]}, format="json"
    )
    assert_problem(response, 403, "csrf_failed")
    assert not ApiToken.objects.exists()


def test_session_delete_without_csrf_token_is_403(
    session_client: APIClient, user: User, make_token: Callable[..., str]
) -> None:
    make_token(user)
    token = ApiToken.objects.get()
    assert_problem(session_client.delete(f"{TOKENS}/{token.pk}"), 403, "csrf_failed")
    token.refresh_from_db()
    assert token.revoked_at is None


def test_session_reads_need_no_csrf_token(session_client: APIClient) -> None:
    assert session_client.get(TOKENS).status_code == 200


def test_session_creates_a_token_that_is_shown_once(
    session_client: APIClient,
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    workspace: Any,
) -> None:
    response = session_client.post(
        TOKENS,
        {"name": "ci", "permissions": ["api:read", "api:write"], "workspace_id": str(workspace.pk)},
        format="json",
        **csrf_headers(session_client),
    )
    assert response.status_code == 201
    created = response.json()
    full = created["token"]
    token_id, secret = full.removeprefix("hrld_").split("_", 1)
    assert created["id"] == token_id
    assert created["status"] == "active"
    assert created["workspace_id"] == str(workspace.pk)
    assert response["Location"].endswith(f"{TOKENS}/{token_id}")

    row = ApiToken.objects.get(pk=token_id)
    assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    stored = [str(value) for value in ApiToken.objects.values_list(flat=False).get(pk=token_id)]
    assert not any(secret in value for value in stored)

    listing = session_client.get(TOKENS)
    assert listing.status_code == 200
    assert secret not in listing.content.decode()
    [item] = listing.json()["items"]
    assert item["id"] == token_id
    assert "token" not in item
    assert "secret_hash" not in item

    assert bearer(full).get(f"/api/v1/workspaces/{workspace.pk}").status_code == 200


def test_session_revokes_a_token(
    session_client: APIClient,
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    make_token: Callable[..., str],
) -> None:
    full = make_token(user)
    token = ApiToken.objects.get()
    response = session_client.delete(f"{TOKENS}/{token.pk}", **csrf_headers(session_client))
    assert response.status_code == 204
    assert_problem(bearer(full).get(ME), 401, "not_authenticated")
    [item] = session_client.get(TOKENS).json()["items"]
    assert item["status"] == "revoked"


def test_cannot_revoke_someone_elses_token(
    session_client: APIClient,
    csrf_headers: Callable[[Any], dict[str, str]],
    make_user: Callable[..., User],
    make_token: Callable[..., str],
) -> None:
    full = make_token(make_user())
    token = ApiToken.objects.get()
    response = session_client.delete(f"{TOKENS}/{token.pk}", **csrf_headers(session_client))
    assert_problem(response, 404, "not_found")
    assert bearer(full).get(ME).status_code == 200


@pytest.mark.parametrize(
    ("expires_in", "ok"),
    [(timedelta(days=365) - timedelta(minutes=1), True), (timedelta(days=366), False)],
)
def test_token_expiry_is_at_most_365_days(
    session_client: APIClient,
    csrf_headers: Callable[[Any], dict[str, str]],
    expires_in: timedelta,
    ok: bool,
) -> None:
    expires_at = (timezone.now() + expires_in).isoformat()
    response = session_client.post(
        TOKENS,
        {"name": "ci", "permissions": ["api:read"], "expires_at": expires_at},
        format="json",
        **csrf_headers(session_client),
    )
    if ok:
        assert response.status_code == 201
    else:
        body = assert_problem(response, 422, "invalid")
        assert [e["location"] for e in body["errors"]] == ["body.expires_at"]


def test_token_for_a_workspace_the_user_cannot_access_is_refused(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    make_user: Callable[..., User],
    workspace: Any,
) -> None:
    client = make_session_client(make_user())
    response = client.post(
        TOKENS,
        {"name": "ci", "permissions": ["api:read"], "workspace_id": str(workspace.pk)},
        format="json",
        **csrf_headers(client),
    )
    assert_problem(response, 403, "no_workspace_access")
    assert not ApiToken.objects.exists()
