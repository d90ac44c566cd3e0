"""Organization themes over the API: create from the default built-in, the draft and its
revision check, publishing immutable revisions, summaries, the available-to-workspace page, the
organization default, workspace assignment, deletion, and who may do what."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.problem_asserts import assert_invalid, assert_problem
from tests.themes_support import create_theme, manifest, publish, replace_draft
from themes.builtins import BUILT_INS, DEFAULT_BUILT_IN_ID, built_in_manifest
from workspaces.access import Actor
from workspaces.models import OrganizationMembership, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

THEME_FIELDS = {"$schema", "draft", "latest_published", "summary"}
DRAFT_FIELDS = {"$schema", "manifest", "revision", "theme_id", "updated_at", "updated_by"}
PUBLISHED_FIELDS = {
    "$schema",
    "manifest",
    "published_at",
    "published_by",
    "revision",
    "source_revision",
    "theme_id",
}
SUMMARY_FIELDS = {
    "$schema",
    "assigned_workspace_count",
    "built_in",
    "created_at",
    "description",
    "draft_revision",
    "icon_pack",
    "is_organization_default",
    "name",
    "organization_id",
    "published_revision",
    "reference",
    "supported_schemes",
    "updated_at",
}
MANIFEST_FIELDS = {
    "id",
    "name",
    "description",
    "revision",
    "schemaVersion",
    "iconPack",
    "supportedSchemes",
    "schemes",
    "fonts",
    "assets",
}


@pytest.fixture
def owner(bearer_client: Callable[..., APIClient], user: User, workspace: Any) -> APIClient:
    return bearer_client(user)


def org_query(organization: Any) -> dict[str, str]:
    return {"organization_id": str(organization.pk)}


def test_create_with_only_name_and_organization_starts_from_the_default_built_in(
    owner: APIClient, organization: Any, user: User
) -> None:
    response = owner.post(
        "/api/v1/themes",
        {"name": "Acme Brand", "organization_id": str(organization.pk)},
        format="json",
    )
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    theme_id = body["draft"]["theme_id"]
    assert response["Location"] == f"/api/v1/themes/{theme_id}"
    assert set(body) == THEME_FIELDS
    assert set(body["draft"]) == DRAFT_FIELDS
    assert set(body["summary"]) == SUMMARY_FIELDS
    assert body["draft"]["revision"] == 1
    assert body["draft"]["updated_by"] == str(user.pk)
    assert body["latest_published"] is None
    draft_manifest = body["draft"]["manifest"]
    assert set(draft_manifest) == MANIFEST_FIELDS
    default = built_in_manifest(DEFAULT_BUILT_IN_ID)
    assert draft_manifest["schemes"] == default["schemes"]
    assert draft_manifest["name"] == "Acme Brand"
    assert draft_manifest["id"] == theme_id
    summary = body["summary"]
    assert summary["built_in"] is False
    assert summary["reference"] == {"kind": "organization", "id": theme_id, "version": None}
    assert summary["draft_revision"] == 1
    assert summary["published_revision"] is None
    assert summary["organization_id"] == str(organization.pk)
    assert summary["supported_schemes"] == ["light", "dark"]
    assert summary["icon_pack"] == default["iconPack"]
    assert summary["is_organization_default"] is False
    assert summary["assigned_workspace_count"] == 0

    fetched = owner.get(f"/api/v1/themes/{theme_id}", org_query(organization))
    assert fetched.status_code == 200
    assert fetched.json() == body


def test_create_from_another_built_in_and_name_clash(owner: APIClient, organization: Any) -> None:
    response = owner.post(
        "/api/v1/themes",
        {
            "name": "Paper",
            "organization_id": str(organization.pk),
            "description": "Ours",
            "base_reference": {"kind": "built_in", "id": "paper"},
        },
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["draft"]["manifest"]["schemes"] == built_in_manifest("paper")["schemes"]
    assert response.json()["summary"]["description"] == "Ours"
    clash = owner.post(
        "/api/v1/themes", {"name": "Paper", "organization_id": str(organization.pk)}, format="json"
    )
    assert_problem(clash, 409, "theme_name_taken")
    unknown = owner.post(
        "/api/v1/themes",
        {
            "name": "X",
            "organization_id": str(organization.pk),
            "base_reference": {"kind": "built_in", "id": "nope"},
        },
        format="json",
    )
    assert_invalid(unknown, "body.base_reference.id")
    assert_invalid(
        owner.post("/api/v1/themes", {"name": "X"}, format="json"), "body.organization_id"
    )
    assert_invalid(
        owner.post(
            "/api/v1/themes",
            {"name": "X", "organization_id": str(organization.pk), "x": 1},
            format="json",
        ),
        "body.x",
    )


def test_replace_draft_checks_the_revision(owner: APIClient, organization: Any) -> None:
    theme = create_theme(owner, organization)
    changed = manifest("garden", id="brand", name="Brand green")
    response = replace_draft(owner, organization, theme, changed, name="Brand green")
    assert response.status_code == 200, response.content[:400]
    body = response.json()
    assert body["draft"]["revision"] == 2
    assert body["draft"]["manifest"]["schemes"] == built_in_manifest("garden")["schemes"]
    assert body["summary"]["name"] == "Brand green"
    stale = replace_draft(owner, organization, theme, changed, expected_revision=1)
    problem = assert_problem(stale, 409, "revision_conflict")
    assert problem["current_revision"] == 2


def test_publishing_twice_yields_revisions_1_and_2_and_revision_1_is_unchanged(
    owner: APIClient, organization: Any
) -> None:
    theme = create_theme(owner, organization)
    theme_id = theme["draft"]["theme_id"]
    first = publish(owner, organization, theme_id, draft=1, published=None)
    assert first.status_code == 201, first.content[:300]
    assert first["Location"] == f"/api/v1/themes/{theme_id}/revisions/1"
    assert set(first.json()) == PUBLISHED_FIELDS
    assert (first.json()["revision"], first.json()["source_revision"]) == (1, 1)
    revision_1 = owner.get(f"/api/v1/themes/{theme_id}/revisions/1", org_query(organization)).json()

    replace_draft(owner, organization, theme, manifest("midnight", id="b", name="Night"))
    replace_draft(
        owner, organization, theme, manifest("studio", id="b", name="Studio"), expected_revision=2
    )
    conflict = publish(owner, organization, theme_id, draft=3, published=None)
    body = assert_problem(conflict, 409, "revision_conflict")
    assert body["current_published_revision"] == 1
    assert_problem(
        publish(owner, organization, theme_id, draft=2, published=1), 409, "revision_conflict"
    )
    second = publish(owner, organization, theme_id, draft=3, published=1)
    assert second.status_code == 201
    assert (second.json()["revision"], second.json()["source_revision"]) == (2, 3)
    assert second.json()["manifest"]["schemes"] == built_in_manifest("studio")["schemes"]

    again = owner.get(f"/api/v1/themes/{theme_id}/revisions/1", org_query(organization)).json()
    assert again == revision_1
    assert again["manifest"]["schemes"] == built_in_manifest(DEFAULT_BUILT_IN_ID)["schemes"]

    detail = owner.get(f"/api/v1/themes/{theme_id}", org_query(organization)).json()
    assert detail["latest_published"]["revision"] == 2
    assert detail["summary"]["published_revision"] == 2
    assert detail["summary"]["reference"]["version"] == 2
    assert detail["summary"]["icon_pack"] == built_in_manifest("studio")["iconPack"]

    page = owner.get(
        f"/api/v1/themes/{theme_id}/revisions", {**org_query(organization), "limit": 1}
    ).json()
    assert [item["revision"] for item in page["items"]] == [2]
    assert "manifest" not in page["items"][0]
    rest = owner.get(
        f"/api/v1/themes/{theme_id}/revisions",
        {**org_query(organization), "cursor": page["next_cursor"]},
    ).json()
    assert [(i["revision"], i["source_revision"]) for i in rest["items"]] == [(1, 1)]
    assert rest["next_cursor"] is None


def test_revision_path_and_query_rules(owner: APIClient, organization: Any) -> None:
    theme_id = create_theme(owner, organization)["draft"]["theme_id"]
    assert_invalid(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/0", org_query(organization)),
        "path.revision",
    )
    assert_invalid(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/abc", org_query(organization)),
        "path.revision",
    )
    assert_invalid(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/{2**63}", org_query(organization)),
        "path.revision",
    )
    # int64's largest value is a valid revision number that simply does not exist (not a 500).
    assert_problem(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/{2**63 - 1}", org_query(organization)),
        404,
        "not_found",
    )
    assert_invalid(owner.get(f"/api/v1/themes/{theme_id}/revisions/1"), "query.organization_id")
    assert_problem(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/1", org_query(organization)),
        404,
        "not_found",
    )
    assert_problem(
        owner.get("/api/v1/themes/not-a-theme", org_query(organization)), 404, "not_found"
    )


def test_summaries_page_newest_first(owner: APIClient, organization: Any) -> None:
    names = [f"Theme {n}" for n in range(5)]
    for name in names:
        create_theme(owner, organization, name)
    first = owner.get("/api/v1/themes", {**org_query(organization), "limit": 3})
    assert first.status_code == 200
    body = first.json()
    assert [item["name"] for item in body["items"]] == names[::-1][:3]
    assert all(set(item) == SUMMARY_FIELDS for item in body["items"])
    second = owner.get(
        "/api/v1/themes", {**org_query(organization), "limit": 3, "cursor": body["next_cursor"]}
    )
    assert [item["name"] for item in second.json()["items"]] == names[::-1][3:]
    assert second.json()["next_cursor"] is None
    assert "manifest" not in body["items"][0]


def test_available_page_lists_built_ins_then_published_themes_only(
    owner: APIClient, organization: Any, workspace: Any
) -> None:
    draft_only = create_theme(owner, organization, "Draft only")
    published = create_theme(owner, organization, "Published")
    publish(owner, organization, published["draft"]["theme_id"], draft=1, published=None)
    replace_draft(owner, organization, published, manifest("confetti", id="x", name="Later draft"))

    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {
            "workspace_id": str(workspace.pk),
            "limit": 4,
            **({"cursor": cursor} if cursor else {}),
        }
        response = owner.get("/api/v1/themes/available", query)
        assert response.status_code == 200, response.content[:300]
        seen += response.json()["items"]
        cursor = response.json()["next_cursor"]
        if not cursor:
            break
    assert [item["reference"]["id"] for item in seen] == [b.id for b in BUILT_INS] + [
        published["draft"]["theme_id"]
    ]
    assert all(item["built_in"] for item in seen[:-1])
    org_item = seen[-1]
    assert org_item["built_in"] is False
    assert org_item["draft_revision"] is None  # no drafts here
    assert (
        org_item["icon_pack"] == built_in_manifest(DEFAULT_BUILT_IN_ID)["iconPack"]
    )  # the published one
    assert draft_only["draft"]["theme_id"] not in {item["reference"]["id"] for item in seen}
    assert all("manifest" not in item for item in seen)
    assert seen[0]["is_organization_default"] is True  # Herald's default until one is set


def test_available_page_needs_a_workspace_admin(
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    organization: Any,
) -> None:
    editor = make_user()
    WorkspaceMembership.objects.create(workspace=workspace, user=editor, role="editor")
    OrganizationMembership.objects.create(organization=organization, user=editor, role="member")
    response = bearer_client(editor).get(
        "/api/v1/themes/available", {"workspace_id": str(workspace.pk)}
    )
    assert_problem(response, 403, "role_too_low")


def test_default_assignment_and_delete_guards(
    owner: APIClient, organization: Any, workspace: Any
) -> None:
    theme = create_theme(owner, organization)
    theme_id = theme["draft"]["theme_id"]
    reference = {"kind": "organization", "id": theme_id}

    not_published = owner.put(
        "/api/v1/theme-settings/organization",
        {"organization_id": str(organization.pk), "default_reference": reference},
        format="json",
    )
    assert_problem(not_published, 409, "theme_not_published")
    publish(owner, organization, theme_id, draft=1, published=None)

    response = owner.put(
        "/api/v1/theme-settings/organization",
        {"organization_id": str(organization.pk), "default_reference": reference},
        format="json",
    )
    assert response.status_code == 200, response.content[:300]
    assert response.json()["default_reference"] == {
        "kind": "organization",
        "id": theme_id,
        "version": None,
    }
    assert (
        owner.get(f"/api/v1/themes/{theme_id}", org_query(organization)).json()["summary"][
            "is_organization_default"
        ]
        is True
    )
    body = assert_problem(
        owner.delete(f"/api/v1/themes/{theme_id}?organization_id={organization.pk}"),
        409,
        "theme_in_use",
    )
    assert body["is_organization_default"] is True

    owner.put(
        "/api/v1/theme-settings/organization",
        {"organization_id": str(organization.pk), "default_reference": None},
        format="json",
    )
    assigned = owner.put(
        f"/api/v1/theme-assignments/{workspace.pk}",
        {"reference": {**reference, "version": 1}},
        format="json",
    )
    assert assigned.status_code == 200, assigned.content[:300]
    assert assigned.json()["effective_reference"] == {
        "kind": "organization",
        "id": theme_id,
        "version": 1,
    }
    assert assigned.json()["effective_manifest"]["id"] == theme_id  # revision 1's manifest
    bad_version = owner.put(
        f"/api/v1/theme-assignments/{workspace.pk}",
        {"reference": {**reference, "version": 2}},
        format="json",
    )
    assert_invalid(bad_version, "body.reference.version")
    summary = owner.get(f"/api/v1/themes/{theme_id}", org_query(organization)).json()["summary"]
    assert summary["assigned_workspace_count"] == 1
    body = assert_problem(
        owner.delete(f"/api/v1/themes/{theme_id}?organization_id={organization.pk}"),
        409,
        "theme_in_use",
    )
    assert body["assigned_workspace_count"] == 1

    cleared = owner.put(
        f"/api/v1/theme-assignments/{workspace.pk}", {"reference": None}, format="json"
    )
    assert cleared.json()["reference"] is None
    assert cleared.json()["effective_reference"] == {
        "kind": "built_in",
        "id": DEFAULT_BUILT_IN_ID,
        "version": None,
    }
    assert (
        owner.delete(f"/api/v1/themes/{theme_id}?organization_id={organization.pk}").status_code
        == 204
    )
    assert_problem(
        owner.get(f"/api/v1/themes/{theme_id}", org_query(organization)), 404, "not_found"
    )
    assert owner.get("/api/v1/themes", org_query(organization)).json()["items"] == []
    # The name is free again; the published revision stayed (immutable).
    assert create_theme(owner, organization)["draft"]["revision"] == 1
    from themes.models import PublishedRevision

    assert PublishedRevision.objects.filter(theme_id=theme_id).count() == 1


def test_assignment_of_a_built_in_and_of_another_organizations_theme(
    owner: APIClient, organization: Any, workspace: Any, user: User
) -> None:
    from workspaces.services import organization_create

    other = organization_create(actor=Actor(user=user), name="Other")
    foreign = create_theme(owner, other, "Foreign")
    publish(owner, other, foreign["draft"]["theme_id"], draft=1, published=None)
    response = owner.put(
        f"/api/v1/theme-assignments/{workspace.pk}",
        {"reference": {"kind": "organization", "id": foreign["draft"]["theme_id"]}},
        format="json",
    )
    assert_problem(response, 404, "not_found")
    response = owner.put(
        f"/api/v1/theme-assignments/{workspace.pk}",
        {"reference": {"kind": "built_in", "id": "midnight"}},
        format="json",
    )
    assert response.status_code == 200
    current = owner.get(f"/api/v1/theme-assignments/{workspace.pk}").json()
    assert current["reference"]["id"] == "midnight"
    assert current["effective_manifest"] == built_in_manifest("midnight")
    available = owner.get("/api/v1/themes/available", {"workspace_id": str(workspace.pk)}).json()[
        "items"
    ]
    assert (
        next(i for i in available if i["reference"]["id"] == "midnight")["assigned_workspace_count"]
        == 1
    )


# --- Access: organization owner/admin only; workspace-bound tokens never -------------------------


def _organization_routes(organization: Any, theme_id: str) -> list[tuple[str, str, Any]]:
    org = str(organization.pk)
    return [
        ("get", f"/api/v1/themes?organization_id={org}", None),
        ("post", "/api/v1/themes", {"name": "New", "organization_id": org}),
        ("get", f"/api/v1/themes/{theme_id}?organization_id={org}", None),
        (
            "put",
            f"/api/v1/themes/{theme_id}/draft",
            {"organization_id": org, "expected_revision": 1, "name": "x", "manifest": manifest()},
        ),
        (
            "post",
            f"/api/v1/themes/{theme_id}/publish",
            {
                "organization_id": org,
                "expected_draft_revision": 1,
                "expected_published_revision": None,
            },
        ),
        ("get", f"/api/v1/themes/{theme_id}/revisions?organization_id={org}", None),
        ("get", f"/api/v1/themes/{theme_id}/revisions/1?organization_id={org}", None),
        ("delete", f"/api/v1/themes/{theme_id}?organization_id={org}", None),
        ("get", f"/api/v1/theme-settings/organization?organization_id={org}", None),
        (
            "put",
            "/api/v1/theme-settings/organization",
            {"organization_id": org, "default_reference": None},
        ),
        ("get", f"/api/v1/theme-assets?organization_id={org}", None),
        (
            "delete",
            f"/api/v1/theme-assets/3b0c6f9e-5d1a-4c57-9a43-6c2d1f1e2a10?organization_id={org}",
            None,
        ),
    ]


def test_workspace_bound_token_non_member_and_member_get_403_on_organization_routes(
    owner: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    user: User,
    organization: Any,
    workspace: Any,
) -> None:
    theme_id = create_theme(owner, organization)["draft"]["theme_id"]
    member = make_user()
    OrganizationMembership.objects.create(organization=organization, user=member, role="member")
    callers = {
        "workspace-bound token of the owner": (
            bearer_client(user, workspace=workspace),
            "token_workspace_scope",
        ),
        "non-member": (bearer_client(make_user()), "no_organization_access"),
        "organization member": (bearer_client(member), "role_too_low"),
    }
    for label, (client, code) in callers.items():
        for method, path, body in _organization_routes(organization, theme_id):
            response = (
                getattr(client, method)(path, body, format="json")
                if body is not None
                else getattr(client, method)(path)
            )
            assert response.status_code == 403, (label, method, path, response.content[:200])
            assert_problem(response, 403, code)
    # The same routes work for an organization admin.
    admin = make_user()
    OrganizationMembership.objects.create(organization=organization, user=admin, role="admin")
    assert bearer_client(admin).get("/api/v1/themes", org_query(organization)).status_code == 200


def test_read_only_token_cannot_write(
    bearer_client: Callable[..., APIClient], user: User, organization: Any, workspace: Any
) -> None:
    reader = bearer_client(user, permissions=("api:read",))
    response = reader.post(
        "/api/v1/themes", {"name": "x", "organization_id": str(organization.pk)}, format="json"
    )
    assert response.status_code == 403
    assert reader.get("/api/v1/themes", org_query(organization)).status_code == 200


def test_unauthenticated_is_401(organization: Any) -> None:
    response = APIClient().get("/api/v1/themes", org_query(organization))
    assert_problem(response, 401, "not_authenticated")


def test_create_from_a_published_organization_theme(owner: APIClient, organization: Any) -> None:
    source = create_theme(owner, organization, "Source")
    source_id = source["draft"]["theme_id"]
    unpublished = owner.post(
        "/api/v1/themes",
        {
            "name": "Copy",
            "organization_id": str(organization.pk),
            "base_reference": {"kind": "organization", "id": source_id},
        },
        format="json",
    )
    assert_problem(unpublished, 409, "theme_not_published")
    replace_draft(owner, organization, source, manifest("garden", id="s", name="Source"))
    publish(owner, organization, source_id, draft=2, published=None)
    copy = owner.post(
        "/api/v1/themes",
        {
            "name": "Copy",
            "organization_id": str(organization.pk),
            "base_reference": {"kind": "organization", "id": source_id, "version": 1},
        },
        format="json",
    )
    assert copy.status_code == 201, copy.content[:300]
    body = copy.json()
    assert body["draft"]["manifest"]["schemes"] == built_in_manifest("garden")["schemes"]
    assert body["draft"]["manifest"]["id"] == body["draft"]["theme_id"] != source_id
    assert body["draft"]["revision"] == 1


def test_admin_pages_are_read_only(
    owner: APIClient, organization: Any, make_user: Callable[..., User]
) -> None:
    from django.test import Client

    theme_id = create_theme(owner, organization)["draft"]["theme_id"]
    publish(owner, organization, theme_id, draft=1, published=None)
    admin = make_user("admin@example.com", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(admin)
    for model in (
        "theme",
        "publishedrevision",
        "themeasset",
        "organizationthemesettings",
        "themeassignment",
    ):
        assert browser.get(f"/admin/themes/{model}/").status_code == 200, model
        assert browser.get(f"/admin/themes/{model}/add/").status_code == 403, model
    from themes.models import PublishedRevision

    revision = PublishedRevision.objects.get(theme_id=theme_id)
    page = browser.get(f"/admin/themes/publishedrevision/{revision.pk}/change/")
    assert page.status_code == 200  # a view-only page
    assert b'name="_save"' not in page.content
    assert browser.post(f"/admin/themes/publishedrevision/{revision.pk}/delete/").status_code == 403
