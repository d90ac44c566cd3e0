"""The role matrix of docs/people-and-roles.md ("Roles"), enforced over every ``/api/v1`` route.

``MATRIX`` maps each route and method (listed from the URL resolver) to the least role that may
call it. The test fails when a route is missing from the table (or the table names a route that
no longer exists), and, for every route, calls it as each of the five people below with a request
that is otherwise valid: a person the table refuses must get a 403 problem; a person it admits
must not (any other answer: 2xx, 404, 409, 422… is about the request, not the role).

People: the organization owner (who created the workspace, so also its admin: the "workspace
owner"), an organization admin who is not a member of the workspace, and a workspace admin,
editor and viewer (organization members).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_problem
from tests.providers import tiny_png
from tests.publishing_support import make_account, make_media
from workspaces.access import Actor
from workspaces.models import OrganizationMembership, User, WorkspaceMembership
from workspaces.web_session import SESSION_AUTHENTICATED_AT

PEOPLE = ("org_owner", "org_admin", "ws_admin", "editor", "viewer")
# The least role → who may call. The organization admin reaches a workspace only through a
# membership of it (they can give themselves one: they may create workspaces and invite).
ALLOWED = {
    "public": set(PEOPLE),
    "signed_in": set(PEOPLE),
    "viewer": {"org_owner", "ws_admin", "editor", "viewer"},
    "editor": {"org_owner", "ws_admin", "editor"},
    "admin": {"org_owner", "ws_admin"},
    "org_member": set(PEOPLE),
    "org_admin": {"org_owner", "org_admin"},
    "org_owner": {"org_owner"},
    "instance_admin": set(),
}

# (method, route) → least role. Keep in step with the "Roles" table of docs/people-and-roles.md.
MATRIX: dict[tuple[str, str], str] = {
    ("GET", "health"): "public",
    ("GET", "ready"): "public",
    ("GET", "schemas/<str:name>.json"): "public",
    ("GET", "me"): "signed_in",
    ("GET", "organizations"): "signed_in",
    ("POST", "organizations"): "signed_in",
    ("GET", "organizations/<str:organization_id>"): "org_member",
    ("GET", "workspaces"): "signed_in",
    ("POST", "workspaces"): "org_admin",
    ("GET", "workspaces/<str:workspace_id>"): "viewer",
    ("PATCH", "workspaces/<str:workspace_id>"): "admin",
    ("DELETE", "workspaces/<str:workspace_id>"): "org_owner",
    ("GET", "workspaces/<str:workspace_id>/usage"): "viewer",
    ("GET", "workspaces/<str:workspace_id>/deletion-preview"): "org_owner",
    ("GET", "workspaces/<str:workspace_id>/members"): "viewer",
    ("PATCH", "workspaces/<str:workspace_id>/members/<str:user_id>"): "admin",
    ("DELETE", "workspaces/<str:workspace_id>/members/<str:user_id>"): "admin",
    ("GET", "workspaces/<str:workspace_id>/invitations"): "admin",
    ("POST", "workspaces/<str:workspace_id>/invitations"): "admin",
    ("GET", "workspaces/<str:workspace_id>/access-audit"): "admin",
    ("POST", "invitations/accept"): "signed_in",
    ("POST", "invitations/<str:invitation_id>/resend"): "admin",
    ("DELETE", "invitations/<str:invitation_id>"): "admin",
    ("GET", "api-tokens"): "signed_in",
    ("POST", "api-tokens"): "signed_in",
    ("DELETE", "api-tokens/<str:token_id>"): "signed_in",
    ("GET", "account-providers"): "viewer",
    ("GET", "accounts"): "viewer",
    ("POST", "accounts/connect"): "editor",
    ("GET", "accounts/oauth/callback"): "public",
    # A pending choice belongs to the user who started the connect (anyone else: 404); applying
    # it checks that user's editor role in its workspace.
    ("GET", "accounts/choices/<str:choice_id>"): "signed_in",
    ("POST", "accounts/choices/<str:choice_id>"): "signed_in",
    ("POST", "meta/deauthorize"): "public",
    ("POST", "meta/data-deletion"): "public",
    ("GET", "meta/data-deletion/<str:confirmation_code>"): "public",
    ("GET", "accounts/<str:account_id>"): "viewer",
    ("DELETE", "accounts/<str:account_id>"): "admin",
    ("GET", "accounts/<str:account_id>/destination-options"): "viewer",
    ("GET", "capabilities"): "viewer",
    ("GET", "media"): "viewer",
    ("POST", "media"): "editor",
    ("GET", "media/<str:media_id>"): "viewer",
    ("GET", "media/<str:media_id>/content"): "viewer",
    ("DELETE", "media/<str:media_id>"): "editor",
    ("POST", "uploads"): "editor",
    ("PATCH", "uploads/<str:upload_id>"): "editor",
    ("DELETE", "uploads/<str:upload_id>"): "editor",
    ("GET", "publications"): "viewer",
    ("POST", "publications"): "editor",
    ("GET", "publications/<str:publication_id>"): "viewer",
    ("PUT", "publications/<str:publication_id>"): "editor",
    ("DELETE", "publications/<str:publication_id>"): "editor",  # admin once one published
    ("POST", "publications/<str:publication_id>/schedule"): "editor",
    ("POST", "publications/<str:publication_id>/publish-now"): "editor",
    ("POST", "publications/<str:publication_id>/cancel"): "editor",
    ("POST", "publications/<str:publication_id>/retry-failed"): "editor",
    ("GET", "publications/<str:publication_id>/events"): "viewer",
    ("POST", "publications/<str:publication_id>/queue"): "editor",
    ("GET", "workspaces/<str:workspace_id>/posting-schedule"): "viewer",
    ("PUT", "workspaces/<str:workspace_id>/posting-schedule"): "editor",
    ("GET", "workspaces/<str:workspace_id>/calendar-feed"): "viewer",
    ("POST", "workspaces/<str:workspace_id>/calendar-feed"): "editor",
    ("GET", "events"): "viewer",
    ("GET", "provider-readiness"): "viewer",
    ("POST", "admin/provider-readiness/approval-reviews"): "instance_admin",
    ("POST", "admin/provider-readiness/runtime-controls"): "instance_admin",
    ("POST", "admin/provider-readiness/certifications"): "instance_admin",
    ("GET", "themes"): "org_admin",
    ("POST", "themes"): "org_admin",
    ("GET", "themes/built-ins"): "signed_in",
    ("GET", "themes/available"): "admin",
    ("GET", "themes/<str:theme_id>"): "org_admin",
    ("DELETE", "themes/<str:theme_id>"): "org_admin",
    ("PUT", "themes/<str:theme_id>/draft"): "org_admin",
    ("POST", "themes/<str:theme_id>/publish"): "org_admin",
    ("GET", "themes/<str:theme_id>/revisions"): "org_admin",
    ("GET", "themes/<str:theme_id>/revisions/<str:revision>"): "org_admin",
    ("GET", "theme-settings/organization"): "org_admin",
    ("PUT", "theme-settings/organization"): "org_admin",
    ("GET", "theme-assignments/<str:workspace_id>"): "viewer",
    ("PUT", "theme-assignments/<str:workspace_id>"): "admin",
    ("GET", "theme-assets"): "org_admin",
    ("POST", "theme-assets"): "org_admin",
    ("DELETE", "theme-assets/<str:asset_id>"): "org_admin",
    ("GET", "theme-assets/<str:asset_id>/content"): "org_member",  # drafts-only assets: 404
    ("GET", "voice-profiles"): "viewer",
    ("POST", "voice-profiles"): "editor",
    ("GET", "voice-profiles/<str:voice_profile_id>"): "viewer",
    ("PUT", "voice-profiles/<str:voice_profile_id>"): "editor",
    ("DELETE", "voice-profiles/<str:voice_profile_id>"): "editor",
    ("POST", "voice-profiles/<str:voice_profile_id>/default"): "editor",
    ("PUT", "voice-profile-assignments/<str:account_id>"): "editor",
    ("POST", "publication-opportunities/discover"): "editor",
    ("GET", "repost-automation"): "viewer",
    ("PUT", "repost-automation"): "admin",
    ("POST", "repost-account-grants"): "admin",
    ("DELETE", "repost-account-grants/<str:grant_id>"): "admin",
}


def _walk(patterns: list[Any], prefix: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found += _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            found.append((prefix + str(pattern.pattern), pattern.callback))
    return found


def api_routes() -> set[tuple[str, str]]:
    """Every (method, route) under /api/v1, from the URL resolver and each view's handlers."""
    routes: set[tuple[str, str]] = set()
    for route, callback in _walk(get_resolver().url_patterns):
        if not route.startswith("api/v1/"):
            continue
        view = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
        if view is not None:
            methods = [
                m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)
            ]
        else:  # a function view: the methods it answers (require_http_methods or GET)
            methods = ["GET"]
        routes |= {(method, route.removeprefix("api/v1/")) for method in methods}
    return routes


def test_every_route_is_in_the_matrix() -> None:
    routes = api_routes()
    assert sorted(routes - set(MATRIX)) == [], "routes missing from MATRIX (and the Roles table)"
    assert sorted(set(MATRIX) - routes) == [], "MATRIX names routes that do not exist"


W = "workspaces/<str:workspace_id>"
P = "publications/<str:publication_id>"
T = "themes/<str:theme_id>"
V = "voice-profiles/<str:voice_profile_id>"
# "Roles" table row (by the start of its label) → the routes it covers. Every route is in one row.
ROLES_ROWS: dict[str, list[tuple[str, str]]] = {
    "Health, readiness": [
        ("GET", "health"),
        ("GET", "ready"),
        ("GET", "schemas/<str:name>.json"),
        ("GET", "me"),
        ("GET", "organizations"),
        ("POST", "organizations"),
        ("GET", "workspaces"),
        ("GET", "api-tokens"),
        ("POST", "api-tokens"),
        ("DELETE", "api-tokens/<str:token_id>"),
        ("POST", "invitations/accept"),
        ("GET", "accounts/oauth/callback"),
        ("GET", "accounts/choices/<str:choice_id>"),
        ("POST", "accounts/choices/<str:choice_id>"),
        ("POST", "meta/deauthorize"),
        ("POST", "meta/data-deletion"),
        ("GET", "meta/data-deletion/<str:confirmation_code>"),
        ("GET", "themes/built-ins"),
    ],
    "Read an organization": [("GET", "organizations/<str:organization_id>")],
    "Create a workspace": [("POST", "workspaces")],
    "Themes, theme drafts": [
        ("GET", "themes"),
        ("POST", "themes"),
        ("GET", T),
        ("DELETE", T),
        ("PUT", f"{T}/draft"),
        ("POST", f"{T}/publish"),
        ("GET", f"{T}/revisions"),
        ("GET", f"{T}/revisions/<str:revision>"),
        ("GET", "theme-settings/organization"),
        ("PUT", "theme-settings/organization"),
        ("GET", "theme-assets"),
        ("POST", "theme-assets"),
        ("DELETE", "theme-assets/<str:asset_id>"),
    ],
    "Theme asset content": [("GET", "theme-assets/<str:asset_id>/content")],
    "Read a workspace": [
        ("GET", W),
        ("GET", f"{W}/usage"),
        ("GET", f"{W}/members"),
        ("GET", "theme-assignments/<str:workspace_id>"),
        ("GET", "repost-automation"),
        ("GET", "accounts"),
        ("GET", "accounts/<str:account_id>"),
        ("GET", "account-providers"),
        ("GET", "capabilities"),
        ("GET", "accounts/<str:account_id>/destination-options"),
        ("GET", "provider-readiness"),
        ("GET", "media"),
        ("GET", "media/<str:media_id>"),
        ("GET", "media/<str:media_id>/content"),
        ("GET", "publications"),
        ("GET", P),
        ("GET", f"{P}/events"),
        ("GET", f"{W}/posting-schedule"),
        ("GET", f"{W}/calendar-feed"),
        ("GET", "events"),
        ("GET", "voice-profiles"),
        ("GET", V),
    ],
    "Connect an account": [
        ("POST", "accounts/connect"),
        ("POST", "media"),
        ("DELETE", "media/<str:media_id>"),
        ("POST", "uploads"),
        ("PATCH", "uploads/<str:upload_id>"),
        ("DELETE", "uploads/<str:upload_id>"),
        ("POST", "publications"),
        ("PUT", P),
        ("POST", f"{P}/schedule"),
        ("POST", f"{P}/queue"),
        ("PUT", f"{W}/posting-schedule"),
        ("POST", f"{W}/calendar-feed"),
        ("POST", f"{P}/publish-now"),
        ("POST", f"{P}/cancel"),
        ("POST", f"{P}/retry-failed"),
        ("POST", "voice-profiles"),
        ("PUT", V),
        ("DELETE", V),
        ("POST", f"{V}/default"),
        ("PUT", "voice-profile-assignments/<str:account_id>"),
        ("POST", "publication-opportunities/discover"),
    ],
    "Delete a draft": [("DELETE", P)],
    "Delete a publication with a published destination": [],  # state-dependent: tests below
    "Disconnect a connected (shared) account": [("DELETE", "accounts/<str:account_id>")],
    "Rename a workspace": [
        ("PATCH", W),
        ("PATCH", f"{W}/members/<str:user_id>"),
        ("DELETE", f"{W}/members/<str:user_id>"),
        ("GET", f"{W}/invitations"),
        ("POST", f"{W}/invitations"),
        ("POST", "invitations/<str:invitation_id>/resend"),
        ("DELETE", "invitations/<str:invitation_id>"),
        ("GET", f"{W}/access-audit"),
        ("PUT", "theme-assignments/<str:workspace_id>"),
        ("GET", "themes/available"),
        ("PUT", "repost-automation"),
        ("POST", "repost-account-grants"),
        ("DELETE", "repost-account-grants/<str:grant_id>"),
    ],
    "Workspace deletion preview": [("GET", f"{W}/deletion-preview"), ("DELETE", W)],
    "Provider-readiness ledger": [
        ("POST", "admin/provider-readiness/approval-reviews"),
        ("POST", "admin/provider-readiness/runtime-controls"),
        ("POST", "admin/provider-readiness/certifications"),
    ],
}
ROLES_COLUMNS = ("org_owner", "org_admin", "ws_admin", "editor", "viewer")


def _roles_rows() -> dict[str, set[str]]:
    """The "Roles" table of docs/people-and-roles.md: row label → who has a ✓."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "people-and-roles.md").read_text()
    section = doc.split("\n## Roles\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] in ("Operation", "---"):
            continue
        rows[cells[0]] = {
            who for who, mark in zip(ROLES_COLUMNS, cells[1:], strict=True) if mark == "✓"
        }
    return rows


def test_the_roles_table_says_what_the_matrix_enforces() -> None:
    rows = _roles_rows()
    covered: list[tuple[str, str]] = []
    for prefix, routes in ROLES_ROWS.items():
        labels = [label for label in rows if label.startswith(prefix)]
        assert len(labels) == 1, f"Roles table: no single row starting {prefix!r}"
        marks = rows[labels[0]]
        for route in routes:
            assert marks == ALLOWED[MATRIX[route]], (
                f"Roles row {prefix!r} vs {route}: {MATRIX[route]}"
            )
        covered += routes
    assert sorted(covered) == sorted(MATRIX), "every route belongs to exactly one Roles row"
    assert len(rows) == len(ROLES_ROWS), "a Roles row the test does not know"
    assert (
        rows[next(r for r in rows if r.startswith("Delete a publication with"))] == ALLOWED["admin"]
    )
    assert rows[next(r for r in rows if r.startswith("Delete a draft"))] == ALLOWED["editor"]


# --- The world every route is called in ------------------------------------------------------


@dataclass
class World:
    people: dict[str, User]
    ids: dict[str, Any]


def _session(user: User) -> APIClient:
    client = APIClient()  # a browser session (the one credential every route accepts)
    client.force_login(user)
    session = client.session
    session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
    session.save()
    return client


@pytest.fixture
def world(
    user: User,
    organization: Any,
    workspace: Any,
    make_user: Any,
    media_storage: Any,
    settings: Any,
    tmp_path: Any,
) -> World:
    from publishing.services.publications import publication_create
    from reposts.services import repost_grant_create
    from themes.services.themes import theme_create
    from voice.models import VoiceProfile
    from workspaces.services import invitation_create, workspace_create

    people = {"org_owner": user}
    for name, org_role, ws_role in (
        ("org_admin", "admin", None),
        ("ws_admin", "member", "admin"),
        ("editor", "member", "editor"),
        ("viewer", "member", "viewer"),
    ):
        person = make_user(f"{name}@example.com")
        OrganizationMembership.objects.create(organization=organization, user=person, role=org_role)
        if ws_role:
            WorkspaceMembership.objects.create(workspace=workspace, user=person, role=ws_role)
        people[name] = person
    owner = Actor(user=user)
    account = make_account(workspace, "discord_webhook")
    publication = publication_create(
        actor=owner,
        workspace_id=workspace.pk,
        text="Hello",
        destinations=[{"account_id": str(account.pk)}],
    )
    media = make_media(workspace)
    settings.MEDIA_ROOT = tmp_path  # resumable uploads spool there
    from publishing.services.uploads import upload_create

    resumable = upload_create(
        actor=owner, length=10, metadata={"workspace_id": str(workspace.pk), "filename": "a.bin"}
    )
    theme = theme_create(actor=owner, organization_id=organization.pk, name="House")
    invitation, _ = invitation_create(
        actor=owner, workspace_id=workspace.pk, email="new@example.com", role="viewer"
    )
    profile = VoiceProfile.objects.filter(workspace=workspace).first()
    assert profile is not None
    # A repost grant: the workspace reposts through an account of a second workspace of the owner.
    other = workspace_create(actor=owner, organization_id=organization.pk, name="Second")
    grant = repost_grant_create(
        actor=owner,
        source_workspace_id=workspace.pk,
        target_account_id=make_account(other, "mastodon").pk,
    )
    handle = io.BytesIO(tiny_png())
    handle.name = "logo.png"
    uploaded = _session(user).post(
        "/api/v1/theme-assets",
        {"organization_id": str(organization.pk), "kind": "image", "name": "logo", "file": handle},
        format="multipart",
    )
    assert uploaded.status_code == 201, uploaded.content
    ids = {
        "organization_id": str(organization.pk),
        "workspace_id": str(workspace.pk),
        "workspace_name": workspace.name,
        "account_id": str(account.pk),
        "publication_id": str(publication.pk),
        "media_id": str(media.pk),
        "theme_id": str(theme.pk),
        "invitation_id": str(invitation.pk),
        "voice_profile_id": str(profile.pk),
        "member_id": str(people["viewer"].pk),
        "grant_id": str(grant.pk),
        "upload_id": str(resumable.pk),
        "asset_id": uploaded.json()["id"],
        "theme_manifest": theme.draft_manifest,
        "unknown": "00000000-0000-4000-8000-000000000000",
    }
    return World(people=people, ids=ids)


def _request(method: str, route: str, person: str, world: World) -> tuple[str, Any, str]:
    """(path, body, format) of an otherwise valid request."""
    i = world.ids
    path_values = {
        "name": "ErrorModel",
        "organization_id": i["organization_id"],
        "workspace_id": i["workspace_id"],
        "user_id": i["member_id"],
        "invitation_id": i["invitation_id"],
        "token_id": i["unknown"],
        "account_id": i["account_id"],
        "media_id": i["media_id"],
        "publication_id": i["publication_id"],
        "theme_id": i["theme_id"],
        "revision": "1",
        "asset_id": i["asset_id"],
        "voice_profile_id": i["voice_profile_id"],
        "grant_id": i["grant_id"],
        "upload_id": i["upload_id"],
        "choice_id": i["unknown"],
        "confirmation_code": "unknown",
    }
    path = "/api/v1/" + route
    for name, value in path_values.items():
        path = path.replace(f"<str:{name}>", value)
    ws, org = {"workspace_id": i["workspace_id"]}, {"organization_id": i["organization_id"]}
    query: dict[str, str] = {}
    body: Any = None
    fmt = "json"
    key = (method, route)
    if method == "GET" and route in {
        "account-providers",
        "accounts",
        "capabilities",
        "media",
        "publications",
        "provider-readiness",
        "themes/available",
        "voice-profiles",
        "repost-automation",
        "events",
    }:
        query = ws
    elif method in {"GET", "DELETE"} and (
        route.startswith(("themes", "theme-assets", "theme-settings"))
    ):
        query = org
    bodies: dict[tuple[str, str], Any] = {
        ("POST", "organizations"): {"name": f"Org of {person}"},
        ("POST", "workspaces"): {**org, "name": f"Space of {person}"},
        ("PATCH", "workspaces/<str:workspace_id>"): {"name": "Main"},
        ("DELETE", "workspaces/<str:workspace_id>"): {
            "confirm_name": i["workspace_name"],
            "current_password": "correct horse battery",
        },
        ("PATCH", "workspaces/<str:workspace_id>/members/<str:user_id>"): {"role": "viewer"},
        ("POST", "workspaces/<str:workspace_id>/invitations"): {
            "email": f"{person}-friend@example.com",
            "role": "viewer",
        },
        ("POST", "invitations/accept"): {"token": "not-a-token"},
        ("POST", "api-tokens"): {"name": "t", "permissions": ["api:read"]},
        ("POST", "accounts/connect"): {
            **ws,
            "provider": "discord_webhook",
            "fields": {"webhook_url": "http://127.0.0.1:9/x"},
        },
        ("POST", "publications"): {
            **ws,
            "text": "Hi",
            "destinations": [{"account_id": i["account_id"]}],
        },
        ("PUT", "publications/<str:publication_id>"): {
            "expected_revision": 1,
            "text": "Hi",
            "destinations": [{"account_id": i["account_id"]}],
        },
        ("POST", "publications/<str:publication_id>/schedule"): {
            "scheduled_at": "2099-01-01T00:00:00Z"
        },
        ("POST", "publications/<str:publication_id>/publish-now"): {},
        ("POST", "publications/<str:publication_id>/queue"): {},
        ("PUT", "workspaces/<str:workspace_id>/posting-schedule"): {
            "timezone": "Europe/Paris",
            "slots": [{"weekday": 0, "time": "09:30", "account_id": i["account_id"]}],
        },
        ("POST", "publications/<str:publication_id>/cancel"): {},
        ("POST", "publications/<str:publication_id>/retry-failed"): {},
        ("POST", "admin/provider-readiness/approval-reviews"): {
            "provider": "mastodon",
            "outcome": "approved",
        },
        ("POST", "admin/provider-readiness/runtime-controls"): {
            "provider": "mastodon",
            "mode": "enabled",
            "reason": "r",
        },
        ("POST", "admin/provider-readiness/certifications"): {
            "provider": "mastodon",
            "kind": "local",
            "operation": "publish_text",
            "checks": [],
        },
        ("POST", "themes"): {**org, "name": f"Theme of {person}"},
        ("PUT", "themes/<str:theme_id>/draft"): {
            **org,
            "expected_revision": 1,
            "name": "House",
            "manifest": i["theme_manifest"],
        },
        ("POST", "themes/<str:theme_id>/publish"): {
            **org,
            "expected_draft_revision": 1,
            "expected_published_revision": None,
        },
        ("PUT", "theme-settings/organization"): {
            **org,
            "default_reference": {"kind": "built_in", "id": "paper"},
        },
        ("PUT", "theme-assignments/<str:workspace_id>"): {"reference": None},
        ("POST", "voice-profiles"): {**ws, "name": f"Voice of {person}"},
        ("PUT", "voice-profiles/<str:voice_profile_id>"): {
            **ws,
            "name": "Default voice",
            "definition": {},
            "expected_revision": 1,
        },
        ("PUT", "voice-profile-assignments/<str:account_id>"): {"voice_profile_id": None},
        ("POST", "publication-opportunities/discover"): {**ws, "platforms": ["mastodon"]},
        ("PUT", "repost-automation"): {**ws, "expected_revision": 0, "policies": []},
        ("POST", "repost-account-grants"): {
            "source_workspace_id": i["workspace_id"],
            "target_account_id": i["account_id"],
        },
    }
    if key == ("POST", "media"):
        handle = io.BytesIO(tiny_png())
        handle.name = "pixel.png"
        body, fmt = {**ws, "file": handle}, "multipart"
    elif key == ("POST", "theme-assets"):
        handle = io.BytesIO(tiny_png())
        handle.name = "logo.png"
        body, fmt = {**org, "kind": "image", "name": f"logo-{person}", "file": handle}, "multipart"
    else:
        body = bodies.get(key)
    if key == ("GET", "accounts/oauth/callback"):
        query = {"state": "unknown", "code": "x"}
    if key == ("GET", "accounts/<str:account_id>/destination-options"):
        query = {"region_code": "US", "language": "en"}
    if query:
        from urllib.parse import urlencode

        path += "?" + urlencode(query)
    return path, body, fmt


def _call(client: APIClient, method: str, path: str, body: Any, fmt: str) -> Any:
    if path.startswith("/api/v1/uploads"):  # tus: headers, and raw bytes for PATCH
        ws_id = path_workspace[0]
        headers = {
            "HTTP_TUS_RESUMABLE": "1.0.0",
            "HTTP_UPLOAD_LENGTH": "10",
            "HTTP_UPLOAD_OFFSET": "0",
            "HTTP_UPLOAD_METADATA": "workspace_id "
            + base64.b64encode(ws_id.encode()).decode()
            + ",filename "
            + base64.b64encode(b"a.bin").decode(),
        }
        data = b"01234" if method == "PATCH" else b""
        return client.generic(
            method, path, data, content_type="application/offset+octet-stream", **headers
        )
    handler = getattr(client, method.lower())
    if body is None:
        return handler(path)
    return handler(path, body, format=fmt)


WORKSPACE_ROLES = {"viewer", "editor", "admin"}
path_workspace: list[str] = [""]  # the world's workspace, for the tus metadata of _call
# Least privileged first, so that a refused call cannot be explained by an earlier one's effect.
ORDER = ("viewer", "editor", "org_admin", "ws_admin", "org_owner")


@pytest.mark.parametrize(
    ("method", "route"), sorted(MATRIX), ids=[f"{m} {r}" for m, r in sorted(MATRIX)]
)
def test_route_admits_exactly_the_roles_of_the_matrix(
    method: str, route: str, world: World, provider_settings: Any
) -> None:
    allowed = ALLOWED[MATRIX[(method, route)]]
    path_workspace[:] = [world.ids["workspace_id"]]
    answers: dict[str, tuple[int, str]] = {}
    # The refused first (their calls change nothing), then the admitted, least privileged first.
    for person in [p for p in ORDER if p not in allowed] + [p for p in ORDER if p in allowed]:
        path, body, fmt = _request(method, route, person, world)
        response = _call(_session(world.people[person]), method, path, body, fmt)
        code = ""
        if response.get("Content-Type", "").startswith("application/problem+json"):
            code = response.json().get("code", "")
        answers[person] = (response.status_code, code)
    wrong = {
        person: answer
        for person, answer in answers.items()
        if answer[0] == 500 or (answer[0] == 403) != (person not in allowed)
    }
    # One refusal may be a 404: a resource found through a workspace (a grant) is unknown to
    # someone who is not a member of it (the organization admin), as for an unknown ID.
    if wrong.get("org_admin", (0,))[0] == 404 and MATRIX[(method, route)] in WORKSPACE_ROLES:
        del wrong["org_admin"]
    assert wrong == {}, f"{method} {route} ({MATRIX[(method, route)]}): {answers}"


# --- The two deliberate rules -------------------------------------------------------------------


def test_an_editor_may_not_disconnect_a_shared_account(world: World, bearer_client: Any) -> None:
    from publishing.models import Account

    path = f"/api/v1/accounts/{world.ids['account_id']}"
    refused = bearer_client(world.people["editor"]).delete(path)
    assert_problem(refused, 403, "role_too_low")
    assert (
        "Disconnecting a shared account needs the workspace role admin" in refused.json()["detail"]
    )
    assert Account.objects.get(pk=world.ids["account_id"]).status == Account.Status.ACTIVE
    assert bearer_client(world.people["ws_admin"]).delete(path).status_code == 204
    assert Account.objects.get(pk=world.ids["account_id"]).status == Account.Status.DISCONNECTED


def _publication_with(world: World, *statuses: str) -> str:
    from publishing.models import Destination, Publication
    from publishing.services.publications import publication_create
    from workspaces.models import Workspace

    workspace = Workspace.objects.get(pk=world.ids["workspace_id"])
    accounts = [
        make_account(workspace, "discord_webhook", external_id=f"x{n}")
        for n in range(len(statuses))
    ]
    publication = publication_create(
        actor=Actor(user=world.people["org_owner"]),
        workspace_id=workspace.pk,
        text="Hello",
        destinations=[{"account_id": str(a.pk)} for a in accounts],
    )
    for account, status in zip(accounts, statuses, strict=True):
        Destination.objects.filter(publication=publication, account=account).update(status=status)
    publication_status = {"published": "published", "failed": "failed", "canceled": "canceled"}
    Publication.objects.filter(pk=publication.pk).update(
        status=publication_status.get(statuses[0], "draft")
    )
    return str(publication.pk)


@pytest.mark.parametrize(
    "statuses",
    [("draft",), ("failed",), ("canceled",), ("scheduled",), ("failed", "canceled")],
    ids=lambda s: "+".join(s),
)
def test_an_editor_deletes_publications_that_never_published(
    world: World, bearer_client: Any, statuses: tuple[str, ...]
) -> None:
    from publishing.models import Publication

    pk = _publication_with(world, *statuses)
    assert (
        bearer_client(world.people["editor"]).delete(f"/api/v1/publications/{pk}").status_code
        == 204
    )
    assert not Publication.objects.filter(pk=pk).exists()


@pytest.mark.parametrize(
    "statuses", [("published",), ("failed", "published")], ids=lambda s: "+".join(s)
)
def test_deleting_a_publication_with_a_published_destination_is_admin_only(
    world: World, bearer_client: Any, statuses: tuple[str, ...]
) -> None:
    from publishing.models import Publication

    pk = _publication_with(world, *statuses)
    path = f"/api/v1/publications/{pk}"
    refused = bearer_client(world.people["editor"]).delete(path)
    assert_problem(refused, 403, "role_too_low")
    assert "published destinations needs the workspace role admin" in refused.json()["detail"]
    assert_problem(bearer_client(world.people["viewer"]).delete(path), 403, "role_too_low")
    assert Publication.objects.filter(pk=pk).exists()
    assert bearer_client(world.people["ws_admin"]).delete(path).status_code == 204
    assert not Publication.objects.filter(pk=pk).exists()
