"""Declarative endpoint tests: the standard shape of a workspace-scoped ``/api/v1`` endpoint,
written once and inherited (a support module, not a test module: pytest collects only the
``Test*`` classes that inherit these mixins).

A test class names its endpoint and how to make one of its objects, and inherits the tests::

    class TestAccountEndpoints(WorkspaceListTests, DetailTests):
        list_url = "/api/v1/accounts"
        schema = "Account"                        # the component of the detail's $schema
        write_role = "admin"                      # who may DELETE the detail URL
        foreign_answer = MEMBERS_ONLY
        not_allowed = (("post", "list"), ("patch", "detail"))

        def detail_url(self, obj: str) -> str:
            return f"/api/v1/accounts/{obj}"

        def make(self, workspace, owner) -> str:  # an object of ``workspace``; returns its ID
            return str(make_account(workspace, "discord_webhook", ...).pk)

The tests run as the organization owner (admin of the fixture ``workspace``) with real bearer
tokens through the API, against a second organization's workspace (``Scene.foreign``) whose owner
the caller is not a member of:

- ``ListTests`` (a list of the caller's own) and ``WorkspaceListTests`` (``?workspace_id=``):
  keyset pages cover the caller's workspace once, newest first, and never show the other
  workspace's objects; another workspace's list, an unknown and a missing ``workspace_id``.
- ``DetailTests``: 200 with the representation its ``$schema`` documents; another workspace's
  object, an unknown and a malformed ID; 405 for the methods the endpoint does not have; and, as
  ``AccessTests``, 401 without credentials, 403 for a token without the scope, an inactive
  member or one below ``read_role`` / ``write_role`` (a refused DELETE changes nothing, the
  role itself succeeds).
- ``WorkspaceResourceTests``: one resource per workspace (``url?workspace_id=``), the detail
  tests with the workspace as the object.

tests/api/test_endpoint_support.py checks that the mixins fail an endpoint that answers otherwise.

``foreign_answer`` is what another workspace's object (or list) answers. The standard is the
unknown ID's answer, 404 ``not_found``, so that a caller cannot tell one from the other; an
endpoint that answers otherwise declares it (``MEMBERS_ONLY``, with the document that says so).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import pytest
from rest_framework.test import APIClient

from tests.openapi_support import SchemaChecker
from tests.problem_asserts import assert_invalid, assert_problem
from workspaces.access import WORKSPACE_ROLE_RANK, Actor
from workspaces.models import User, Workspace, WorkspaceMembership

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
MALFORMED_ID = "not-an-id"


class Answer(NamedTuple):
    status: int
    code: str


NOT_FOUND = Answer(404, "not_found")
# Workspace access is decided by membership after the workspace is found: a workspace (and so any
# object of it) the caller is no member of answers 403, an unknown one 404
# (docs/people-and-roles.md "Roles", workspaces/access.py ``require_workspace``).
MEMBERS_ONLY = Answer(403, "no_workspace_access")


class Caller:
    """One person's bearer token (or none) over the scene's one test client: a client per person
    would load the middleware again for each, most of what such a test costs."""

    def __init__(self, client: Caller, token: str | None) -> None:
        self.client = client
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

    def request(self, method: str, url: str, data: Any = None, **options: Any) -> Any:
        return getattr(self.client, method)(url, data, **options, **self.headers)

    def get(self, url: str, data: Any = None) -> Any:
        return self.request("get", url, data)

    def delete(self, url: str) -> Any:
        return self.request("delete", url)


@dataclass
class Scene:
    """The caller's workspace and another organization's, and a caller for each person."""

    owner: User
    workspace: Workspace
    stranger: User
    foreign: Workspace
    make_token: Callable[..., str]  # a real API token, sent as a bearer token through the API
    api: APIClient

    def caller(self, user: User | None, **token_options: Any) -> Caller:
        """``user`` with a new token (``permissions``, ``workspace``…); ``None``: no credentials."""
        return Caller(self.api, self.make_token(user, **token_options) if user else None)

    def member(
        self, role: str, *, status: str = "active", workspace: Workspace | None = None
    ) -> Caller:
        """A new member of ``workspace`` (the scene's) with ``role``."""
        email = f"{role}-{status}-{uuid.uuid4().hex[:8]}@example.com"
        person = User.objects.create_user(email, "correct horse battery")
        WorkspaceMembership.objects.create(
            workspace=workspace or self.workspace, user=person, role=role, status=status
        )
        return self.caller(person)


def role_below(role: str) -> str | None:
    """The workspace role just below ``role`` (``None`` below viewer)."""
    lower = [name for name, rank in WORKSPACE_ROLE_RANK.items() if rank < WORKSPACE_ROLE_RANK[role]]
    return max(lower, key=WORKSPACE_ROLE_RANK.__getitem__) if lower else None


def assert_no_leak(response: Any, scene: Scene, *foreign_ids: str) -> None:
    """Nothing of the other workspace is in the answer: not its objects' IDs (beyond the one the
    caller asked for), not its own ID or name."""
    content = response.content.decode()
    for secret in (*foreign_ids, str(scene.foreign.pk), scene.foreign.name):
        assert secret not in content, (secret, content[:500])


class EndpointCase:
    """What every mixin needs: the declarations and the scene they run in."""

    list_url: ClassVar[str | None] = None
    schema: ClassVar[str]  # the component of the detail's ``$schema``
    read_role: ClassVar[str] = "viewer"
    write_role: ClassVar[str | None] = None  # who may DELETE the detail URL (None: not tested)
    not_allowed: ClassVar[tuple[tuple[str, str], ...]] = ()  # (method, "list" | "detail")
    foreign_answer: ClassVar[Answer] = NOT_FOUND

    def make(self, workspace: Workspace, owner: User) -> str:
        """Create one object of the endpoint in ``workspace`` (``owner`` is its admin)."""
        raise NotImplementedError

    def detail_url(self, obj: str) -> str:
        raise NotImplementedError

    def home(self, scene: Scene, obj: str) -> Workspace:
        """The workspace whose members reach ``obj`` (the scene's, unless ``obj`` is one)."""
        return scene.workspace

    def list_query(self, workspace_id: str) -> dict[str, str]:
        """The list's query for ``workspace_id``: none for a list of the caller's own."""
        return {"workspace_id": workspace_id} if isinstance(self, WorkspaceListTests) else {}

    def read_urls(self, obj: str, workspace_id: str, *, scoped: bool = False) -> list[str]:
        """The URLs the tests read: the detail, and the list when there is one (``scoped``: only
        those that name the workspace; a list of the caller's own refuses no member)."""
        urls = [self.detail_url(obj)]
        query = self.list_query(workspace_id)
        if self.list_url is not None and (query or not scoped):
            listed = "&".join(f"{k}={v}" for k, v in query.items())
            urls.append(f"{self.list_url}?{listed}" if listed else self.list_url)
        return urls

    @pytest.fixture
    def scene(
        self,
        user: User,
        workspace: Workspace,
        make_user: Callable[..., User],
        make_token: Callable[..., str],
    ) -> Scene:
        from workspaces.services import organization_create, workspace_create

        stranger = make_user("stranger@example.com")
        organization = organization_create(actor=Actor(user=stranger), name="Elsewhere Inc")
        foreign = workspace_create(
            actor=Actor(user=stranger), organization_id=organization.pk, name="Elsewhere"
        )
        return Scene(user, workspace, stranger, foreign, make_token, APIClient())

    def owner(self, scene: Scene, **token_options: Any) -> Caller:
        return scene.caller(scene.owner, **token_options)


class AccessTests(EndpointCase):
    """401 and 403 on the endpoint's reads (and its DELETE when ``write_role`` is set)."""

    def test_refused_without_credentials_scope_or_role(self, scene: Scene) -> None:
        obj = self.make(scene.workspace, scene.owner)
        self.assert_401_without_credentials(scene, self.read_urls(obj, str(scene.workspace.pk)))
        self.assert_403_without_the_scope(scene, obj)
        self.assert_403_without_the_role(scene, obj)
        if self.write_role is not None:
            self.assert_delete_needs(scene, obj, self.write_role)

    def assert_401_without_credentials(self, scene: Scene, urls: list[str]) -> None:
        anonymous = scene.caller(None)
        for url in urls:
            response = anonymous.get(url)
            assert_problem(response, 401, "not_authenticated")
            assert response["WWW-Authenticate"].startswith("Bearer")

    def assert_403_without_the_scope(self, scene: Scene, obj: str) -> None:
        """A write-only token reads nothing; a read-only one deletes nothing."""
        write_only = self.owner(scene, permissions=("api:write",))
        for url in self.read_urls(obj, str(scene.workspace.pk)):
            assert_problem(write_only.get(url), 403, "token_permission")
        if self.write_role is not None:
            read_only = self.owner(scene, permissions=("api:read",))
            assert_problem(read_only.delete(self.detail_url(obj)), 403, "token_permission")
            assert self.owner(scene).get(self.detail_url(obj)).status_code == 200

    def assert_403_without_the_role(self, scene: Scene, obj: str) -> None:
        """An inactive member and one below ``read_role`` are refused; ``read_role`` reads."""
        urls = self.read_urls(obj, str(scene.workspace.pk), scoped=True)
        home = self.home(scene, obj)
        inactive = scene.member("admin", status="inactive", workspace=home)
        for url in urls:
            assert_problem(inactive.get(url), 403, "no_workspace_access")
        below_read = role_below(self.read_role)
        if below_read is not None:
            low = scene.member(below_read, workspace=home)
            for url in urls:
                assert_problem(low.get(url), 403, "role_too_low")
        reader = scene.member(self.read_role, workspace=home)
        for url in urls:
            assert reader.get(url).status_code == 200, url

    def assert_delete_needs(self, scene: Scene, obj: str, role: str) -> None:
        """A member one role below ``role`` is refused and changes nothing; one of ``role``
        deletes."""
        below = role_below(role)
        if below is not None:
            refused = scene.member(below, workspace=self.home(scene, obj)).delete(
                self.detail_url(obj)
            )
            assert_problem(refused, 403, "role_too_low")
            assert self.owner(scene).get(self.detail_url(obj)).status_code == 200
        deleted = scene.member(role, workspace=self.home(scene, obj)).delete(self.detail_url(obj))
        assert deleted.status_code == 204, (deleted.status_code, deleted.content[:500])


class DetailTests(AccessTests):
    """The detail URL: the representation, foreign and unknown IDs, methods not allowed."""

    def test_get_answers_the_documented_representation(self, scene: Scene, settings: Any) -> None:
        settings.HERALD_PUBLIC_URL = ""  # $schema URLs from the request origin (testserver)
        obj = self.make(scene.workspace, scene.owner)
        response = self.owner(scene).get(self.detail_url(obj))
        assert response.status_code == 200, (response.status_code, response.content[:500])
        body = response.json()
        assert SchemaChecker().validate(body) == self.schema
        assert body.get("id", obj) == obj

    def test_foreign_unknown_ids_and_methods_not_allowed(self, scene: Scene) -> None:
        foreign = self.make(scene.foreign, scene.stranger)
        client = self.owner(scene)
        refused = client.get(self.detail_url(foreign))
        body = assert_problem(refused, *self.foreign_answer)
        assert_no_leak(refused, scene)
        unknown = assert_problem(client.get(self.detail_url(UNKNOWN_ID)), *NOT_FOUND)
        assert_problem(client.get(self.detail_url(MALFORMED_ID)), *NOT_FOUND)
        if self.foreign_answer == NOT_FOUND:  # the same answer: nothing tells them apart
            assert body["detail"].replace(foreign, UNKNOWN_ID) == unknown["detail"]
        self.assert_without_an_id(client)
        self.assert_405(client, self.make(scene.workspace, scene.owner))

    def assert_without_an_id(self, client: Caller) -> None:
        """The detail URL always names its object: nothing to ask."""

    def assert_405(self, client: Caller, obj: str) -> None:
        for method, which in self.not_allowed:
            url = self.detail_url(obj) if which == "detail" else self.list_url
            assert url is not None
            response = client.request(method, url, {}, format="json")
            assert_problem(response, 405, "method_not_allowed")


class ListTests(EndpointCase):
    """The list URL: keyset pages of the caller's workspace only."""

    page_size: ClassVar[int] = 2

    def test_list_pages_the_callers_workspace_only(self, scene: Scene) -> None:
        foreign = self.make(scene.foreign, scene.stranger)
        made = [self.make(scene.workspace, scene.owner) for _ in range(3)]
        assert self.list_url is not None
        client, query = self.owner(scene), self.list_query(str(scene.workspace.pk))
        seen: list[str] = []
        cursor: str | None = None
        for _ in range(50):
            page_query = {
                **query,
                "limit": self.page_size,
                **({"cursor": cursor} if cursor else {}),
            }
            response = client.get(self.list_url, page_query)
            assert response.status_code == 200, (response.status_code, response.content[:500])
            assert_no_leak(response, scene, foreign)
            page = response.json()
            assert len(page["items"]) <= self.page_size
            seen += [item["id"] for item in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen)), "an object on two pages"
        assert [obj for obj in seen if obj in made] == made[::-1], "newest first, each once"
        assert_invalid(client.get(self.list_url, {**query, "cursor": "garbage"}), "query.cursor")
        self.assert_other_workspaces_lists(scene, client, foreign)

    def assert_other_workspaces_lists(self, scene: Scene, client: Caller, foreign: str) -> None:
        """A list of the caller's own names no workspace: nothing more to ask."""


class WorkspaceListTests(ListTests):
    """A list that names its workspace (``?workspace_id=``): another workspace's list answers
    ``foreign_answer`` without its items, an unknown one 404, none 422."""

    def assert_other_workspaces_lists(self, scene: Scene, client: Caller, foreign: str) -> None:
        assert self.list_url is not None
        refused = client.get(self.list_url, self.list_query(str(scene.foreign.pk)))
        assert_problem(refused, *self.foreign_answer)
        assert_no_leak(refused, scene, foreign)
        assert_problem(client.get(self.list_url, self.list_query(UNKNOWN_ID)), *NOT_FOUND)
        assert_invalid(client.get(self.list_url), "query.workspace_id")


class WorkspaceResourceTests(DetailTests):
    """One resource per workspace, read as ``url?workspace_id=`` (settings, projections): the
    detail tests with the workspace as the object, and none named is a 422."""

    url: ClassVar[str]

    def make(self, workspace: Workspace, owner: User) -> str:
        return str(workspace.pk)

    def detail_url(self, obj: str) -> str:
        return f"{self.url}?workspace_id={obj}"

    def assert_without_an_id(self, client: Caller) -> None:
        assert_invalid(client.get(self.url), "query.workspace_id")
