"""Me, organizations and workspaces: status codes, Location, conflicts and
keyset cursor pagination."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.endpoint_support import MEMBERS_ONLY, DetailTests, ListTests, Scene
from tests.problem_asserts import assert_invalid, assert_problem
from workspaces.models import (
    OrganizationMembership,
    User,
    Workspace,
    WorkspaceMembership,
)

pytestmark = pytest.mark.django_db


# --- Me -------------------------------------------------------------------------------------


def test_me_with_a_token(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any, organization: Any
) -> None:
    data = bearer_client(user, permissions=("api:read",)).get("/api/v1/me").json()
    assert data["user"]["email"] == user.email
    assert [o["id"] for o in data["organizations"]] == [str(organization.pk)]
    assert data["organizations"][0]["role"] == "owner"
    assert [w["id"] for w in data["workspaces"]] == [str(workspace.pk)]
    assert data["workspaces"][0]["role"] == "admin"
    assert data["token"]["permissions"] == ["api:read"]
    assert data["token"]["workspace_id"] is None
    assert "$schema" in data


def test_me_with_a_workspace_bound_token_hides_organizations(
    bearer_client: Callable[..., APIClient], user: User, workspace: Any
) -> None:
    data = bearer_client(user, workspace=workspace).get("/api/v1/me").json()
    assert data["organizations"] == []
    assert data["token"]["workspace_id"] == str(workspace.pk)


def test_me_with_a_session_has_no_token(session_client: APIClient, workspace: Any) -> None:
    data = session_client.get("/api/v1/me").json()
    assert data["token"] is None
    assert len(data["workspaces"]) == 1


# --- Organizations --------------------------------------------------------------------------


def test_create_organization(owner_client: APIClient, user: User) -> None:
    response = owner_client.post("/api/v1/organizations", {"name": "  Beta  "}, format="json")
    assert response.status_code == 201
    created = response.json()
    assert (created["name"], created["role"]) == ("Beta", "owner")
    assert response["Location"] == f"/api/v1/organizations/{created['id']}"
    fetched = owner_client.get(response["Location"])
    assert fetched.status_code == 200
    assert fetched.json()["id"] == created["id"]
    assert OrganizationMembership.objects.get(organization_id=created["id"]).user == user


def test_organization_of_someone_else_is_403(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], organization: Any
) -> None:
    response = bearer_client(make_user()).get(f"/api/v1/organizations/{organization.pk}")
    assert_problem(response, 403, "no_organization_access")


def test_unknown_organization_is_404(owner_client: APIClient) -> None:
    response = owner_client.get("/api/v1/organizations/00000000-0000-4000-8000-000000000000")
    assert_problem(response, 404, "not_found")


def test_organization_list_shows_my_role(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], organization: Any
) -> None:
    person = make_user()
    OrganizationMembership.objects.create(organization=organization, user=person, role="member")
    items = bearer_client(person).get("/api/v1/organizations").json()["items"]
    assert [(i["id"], i["role"]) for i in items] == [(str(organization.pk), "member")]


# --- Workspaces -----------------------------------------------------------------------------


def test_create_workspace(owner_client: APIClient, organization: Any, workspace: Any) -> None:
    response = owner_client.post(
        "/api/v1/workspaces",
        {"organization_id": str(organization.pk), "name": "Second", "timezone": "Europe/Berlin"},
        format="json",
    )
    assert response.status_code == 201
    created = response.json()
    assert response["Location"] == f"/api/v1/workspaces/{created['id']}"
    assert (created["name"], created["timezone"], created["role"]) == (
        "Second",
        "Europe/Berlin",
        "admin",
    )
    assert created["member_count"] == 1
    assert created["plan"]["code"] == "self_hosted"
    assert owner_client.get(response["Location"]).json()["id"] == created["id"]


@pytest.mark.parametrize("name", ["Main", "main", " MAIN "])
def test_duplicate_workspace_name_is_409(
    owner_client: APIClient, organization: Any, workspace: Any, name: str
) -> None:
    response = owner_client.post(
        "/api/v1/workspaces", {"organization_id": str(organization.pk), "name": name}, format="json"
    )
    assert_problem(response, 409, "name_taken")
    assert Workspace.objects.count() == 1


def test_rename_to_a_taken_name_is_409(
    owner_client: APIClient, organization: Any, workspace: Any
) -> None:
    other = owner_client.post(
        "/api/v1/workspaces",
        {"organization_id": str(organization.pk), "name": "Other"},
        format="json",
    ).json()
    response = owner_client.patch(
        f"/api/v1/workspaces/{other['id']}", {"name": "MAIN"}, format="json"
    )
    assert_problem(response, 409, "name_taken")
    response = owner_client.patch(
        f"/api/v1/workspaces/{other['id']}",
        {"name": "Renamed", "timezone": "Asia/Tokyo"},
        format="json",
    )
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["timezone"]) == ("Renamed", "Asia/Tokyo")


def test_workspace_needs_an_organization_admin(
    bearer_client: Callable[..., APIClient], make_user: Callable[..., User], organization: Any
) -> None:
    person = make_user()
    OrganizationMembership.objects.create(organization=organization, user=person, role="member")
    response = bearer_client(person).post(
        "/api/v1/workspaces",
        {"organization_id": str(organization.pk), "name": "Mine"},
        format="json",
    )
    assert_problem(response, 403, "role_too_low")


def test_workspace_in_unknown_organization_is_404(owner_client: APIClient) -> None:
    response = owner_client.post(
        "/api/v1/workspaces",
        {"organization_id": "00000000-0000-4000-8000-000000000000", "name": "X"},
        format="json",
    )
    assert_problem(response, 404, "not_found")


def test_usage(owner_client: APIClient, workspace: Any) -> None:
    data = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/usage").json()
    assert data["plan"]["code"] == "self_hosted"
    assert set(data["limits"]) == {
        "connected_accounts",
        "scheduled_publications",
        "discovery_calls",
    }
    assert data["period_start"] < data["period_end"]


# --- Cursor pagination ----------------------------------------------------------------------


@pytest.fixture
def many_members(workspace: Any) -> list[User]:
    users = User.objects.bulk_create([User(email=f"p{i}@example.com") for i in range(7)])
    WorkspaceMembership.objects.bulk_create(
        [WorkspaceMembership(workspace=workspace, user=u, role="viewer") for u in users]
    )
    return users


def test_cursor_pages_cover_the_list_once_newest_first(
    owner_client: APIClient, workspace: Any, many_members: list[User]
) -> None:
    url = f"/api/v1/workspaces/{workspace.pk}/members"
    seen: list[str] = []
    stamps: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = f"?limit=3&cursor={cursor}" if cursor else "?limit=3"
        page = owner_client.get(url + query).json()
        pages += 1
        seen += [item["user_id"] for item in page["items"]]
        stamps += [item["created_at"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        # A member added while paging does not shift later pages.
        if pages == 1:
            WorkspaceMembership.objects.create(
                workspace=workspace, user=User.objects.create(email="late@example.com")
            )
    assert pages == 3
    assert len(seen) == len(set(seen)) == 8
    assert stamps == sorted(stamps, reverse=True)


def test_default_page_size_is_20(owner_client: APIClient, user: User, organization: Any) -> None:
    Workspace.objects.bulk_create(
        [Workspace(organization=organization, name=f"W{i}") for i in range(25)]
    )
    WorkspaceMembership.objects.bulk_create(
        [
            WorkspaceMembership(workspace=w, user=user)
            for w in Workspace.objects.exclude(memberships__user=user)
        ]
    )
    page = owner_client.get("/api/v1/workspaces").json()
    assert len(page["items"]) == 20
    assert page["next_cursor"]


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        base64.urlsafe_b64encode(b'["2020-01-01T00:00:00+00:00", "x"]').decode(),
        "A" * 1025,
    ],
)
def test_malformed_or_oversized_cursor_is_422(
    owner_client: APIClient, workspace: Any, cursor: str
) -> None:
    response = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/members?cursor={cursor}")
    assert_invalid(response, "query.cursor")


def test_cursor_of_another_list_is_422(
    owner_client: APIClient, user: User, organization: Any, workspace: Any, many_members: list[User]
) -> None:
    members_cursor = owner_client.get(f"/api/v1/workspaces/{workspace.pk}/members?limit=1").json()[
        "next_cursor"
    ]
    assert members_cursor
    response = owner_client.get(f"/api/v1/workspaces?cursor={members_cursor}")
    assert_invalid(response, "query.cursor")
    # Another workspace's member list is another list too.
    other = owner_client.post(
        "/api/v1/workspaces", {"organization_id": str(organization.pk), "name": "B"}, format="json"
    ).json()
    response = owner_client.get(f"/api/v1/workspaces/{other['id']}/members?cursor={members_cursor}")
    assert_invalid(response, "query.cursor")


@pytest.mark.parametrize("limit", ["0", "101", "x"])
def test_page_limit_bounds(owner_client: APIClient, limit: str) -> None:
    assert_invalid(owner_client.get(f"/api/v1/organizations?limit={limit}"), "query.limit")


def test_the_compiled_workspace_page_is_the_orms_keyset_page(
    user: User, make_user: Callable[..., User], organization: Any, workspace: Any
) -> None:
    """``selectors.workspace_page_for_actor`` runs SQL compiled once per shape
    (``WORKSPACE_PAGE``): page by page it gives what ``keyset_page`` gives for
    ``workspace_list_for_actor``, annotations included, for a token bound to one workspace too."""
    from config.api.pagination import keyset_page
    from workspaces import selectors
    from workspaces.access import Actor
    from workspaces.models import ApiToken

    others = Workspace.objects.bulk_create(
        [Workspace(organization=organization, name=f"W{i}") for i in range(6)]
    )
    colleague = make_user()
    WorkspaceMembership.objects.bulk_create(
        [WorkspaceMembership(workspace=w, user=user, role="editor") for w in others]
        + [WorkspaceMembership(workspace=w, user=colleague) for w in others[:3]]
    )

    def seen(page: Any) -> list[tuple[Any, ...]]:
        return [
            (w.pk, w.name, w.caller_role, w.member_count, w.plan_name, w.created_at)
            for w in page.items
        ]

    token = ApiToken(user=user, workspace_id=workspace.pk)
    for actor in (Actor(user=user), Actor(user=user, token=token)):
        compiled_cursor = orm_cursor = None
        pages = 0
        while True:
            compiled = selectors.workspace_page_for_actor(
                actor=actor, limit=3, cursor=compiled_cursor
            )
            orm = keyset_page(
                selectors.workspace_list_for_actor(actor=actor),
                list_key="workspaces",
                limit=3,
                cursor=orm_cursor,
            )
            assert seen(compiled) == seen(orm)
            assert (compiled.next_cursor is None) == (orm.next_cursor is None)
            pages += 1
            compiled_cursor, orm_cursor = compiled.next_cursor, orm.next_cursor
            if compiled_cursor is None:
                break
        assert pages == (3 if actor.token is None else 1)


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestWorkspaceEndpoints(ListTests, DetailTests):
    list_url = "/api/v1/workspaces"
    schema = "Workspace"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("put", "detail"), ("post", "detail"), ("delete", "list"))

    def make(self, workspace: Workspace, owner: User) -> str:
        from workspaces.access import Actor
        from workspaces.services import workspace_create

        name = f"Space {Workspace.objects.count()}"
        made = workspace_create(
            actor=Actor(user=owner), organization_id=workspace.organization_id, name=name
        )
        return str(made.pk)

    def detail_url(self, obj: str) -> str:
        return f"/api/v1/workspaces/{obj}"

    def home(self, scene: Scene, obj: str) -> Workspace:
        return Workspace.objects.get(pk=obj)
