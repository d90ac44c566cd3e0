"""Schemathesis against the served contract (``/docs/openapi.json``), through the WSGI app.

For every operation of the identity and health API, generated requests (valid ones, ones that
use the IDs of real resources, and deliberately invalid ones) must never answer 500, and every
answer must use a declared status code, a declared content type and the declared schema.

The caller is a real bearer token with all permissions, held by a user who owns an organization
and administers a workspace with a second member and a pending invitation. Operations that
refuse bearer tokens (they declare only ``sessionAuth``) are fuzzed through the same user's
signed-in browser session with a CSRF token instead. Each operation gets fresh data
(``transaction=True``: the WSGI app commits, and the database is emptied after each operation),
so what the fuzzer creates, renames or removes for one operation cannot leak into the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH
from django.test import Client
from django.utils import timezone
from django.utils.crypto import get_random_string
from hypothesis import strategies as st

from tests.contract_fuzz_support import (
    CHECKS,
    assert_contract_holds,
    max_examples,
    operation_label,
    operations_under,
)
from workspaces.access import Actor
from workspaces.web_session import SESSION_AUTHENTICATED_AT

# The identity and health API.
FUZZED_PATHS = (
    "/api/v1/health",
    "/api/v1/ready",
    "/api/v1/me",
    "/api/v1/organizations",
    "/api/v1/workspaces",
    "/api/v1/invitations",
    "/api/v1/api-tokens",
)
EXPECTED_OPERATIONS = {
    "GET /api/v1/health",
    "GET /api/v1/ready",
    "GET /api/v1/me",
    "GET /api/v1/organizations",
    "POST /api/v1/organizations",
    "GET /api/v1/organizations/{organization_id}",
    "GET /api/v1/workspaces",
    "POST /api/v1/workspaces",
    "GET /api/v1/workspaces/{workspace_id}",
    "PATCH /api/v1/workspaces/{workspace_id}",
    "DELETE /api/v1/workspaces/{workspace_id}",
    "GET /api/v1/workspaces/{workspace_id}/usage",
    "GET /api/v1/workspaces/{workspace_id}/posting-schedule",
    "PUT /api/v1/workspaces/{workspace_id}/posting-schedule",
    "GET /api/v1/workspaces/{workspace_id}/calendar-feed",
    "POST /api/v1/workspaces/{workspace_id}/calendar-feed",
    "GET /api/v1/workspaces/{workspace_id}/deletion-preview",
    "GET /api/v1/workspaces/{workspace_id}/access-audit",
    "GET /api/v1/workspaces/{workspace_id}/members",
    "PATCH /api/v1/workspaces/{workspace_id}/members/{user_id}",
    "DELETE /api/v1/workspaces/{workspace_id}/members/{user_id}",
    "GET /api/v1/workspaces/{workspace_id}/invitations",
    "POST /api/v1/workspaces/{workspace_id}/invitations",
    "POST /api/v1/invitations/accept",
    "POST /api/v1/invitations/{invitation_id}/resend",
    "DELETE /api/v1/invitations/{invitation_id}",
    "GET /api/v1/api-tokens",
    "POST /api/v1/api-tokens",
    "DELETE /api/v1/api-tokens/{token_id}",
}

MAX_EXAMPLES = max_examples(25)
OPERATIONS = operations_under(*FUZZED_PATHS)


@dataclass(frozen=True)
class World:
    authorization: str
    session_cookies: dict[str, str]
    csrf_token: str
    ids: dict[str, list[str]]


@pytest.fixture
def world(make_user: Any) -> World:
    from workspaces.models import WorkspaceMembership
    from workspaces.services import (
        api_token_create,
        invitation_create,
        organization_create,
        workspace_create,
    )

    owner = make_user("fuzz-owner@example.com")
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Fuzz Org")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Fuzz WS")
    workspace_create(actor=actor, organization_id=organization.pk, name="Second WS")
    editor = make_user("fuzz-editor@example.com")
    WorkspaceMembership.objects.create(
        workspace=workspace, user=editor, role=WorkspaceMembership.Role.EDITOR
    )
    invitation, _ = invitation_create(
        actor=actor,
        workspace_id=str(workspace.pk),
        email="invitee@example.com",
        role=WorkspaceMembership.Role.VIEWER,
    )
    token, full = api_token_create(user=owner, name="fuzz", permissions=["api:read", "api:write"])
    # The owner's browser session, freshly signed in, for the operations that refuse tokens.
    browser = Client()
    browser.force_login(owner)
    session = browser.session
    session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
    session.save()
    csrf_token = get_random_string(CSRF_SECRET_LENGTH, allowed_chars=CSRF_ALLOWED_CHARS)
    return World(
        authorization=f"Bearer {full}",
        session_cookies={
            django_settings.SESSION_COOKIE_NAME: session.session_key or "",
            django_settings.CSRF_COOKIE_NAME: csrf_token,
        },
        csrf_token=csrf_token,
        ids={
            "organization_id": [str(organization.pk)],
            "workspace_id": [str(workspace.pk)],
            "user_id": [str(editor.pk), str(owner.pk)],
            "invitation_id": [str(invitation.pk)],
            "token_id": [str(token.pk)],
            "confirm_name": [workspace.name],
        },
    )


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    from schemathesis import GenerationMode

    strategies = [
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    ]
    names = [p.name for p in operation.path_parameters]
    if names:
        # Real IDs: reach past the 404 into validation, permissions and the services.
        for index in range(max(len(world.ids[name]) for name in names)):
            fixed = {name: world.ids[name][index % len(world.ids[name])] for name in names}
            strategies.append(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed))
            strategies.append(operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed))
    # Real values in bodies: {organization_id} of a new workspace, {workspace_id} of a token,
    # {confirm_name} of a workspace deletion; with real path IDs when the path has any.
    fixed_path = {name: world.ids[name][0] for name in names} or None
    strategies.append(
        operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed_path).map(
            lambda case: _with_real_body_ids(case, world)
        )
    )
    return st.one_of(strategies)


def _with_real_body_ids(case: Any, world: World) -> Any:
    if isinstance(case.body, dict):
        real = {
            name: world.ids[name][0]
            for name in ("organization_id", "workspace_id", "confirm_name")
            if isinstance(case.body.get(name), str)
        }
        if real:
            case.body = {**case.body, **real}
    return case


def _session_only(operation: Any) -> bool:
    security = operation.definition.raw.get("security") or []
    return bool(security) and all(set(requirement) == {"sessionAuth"} for requirement in security)


def test_every_identity_operation_is_fuzzed() -> None:
    assert {operation_label(op) for op in OPERATIONS} == EXPECTED_OPERATIONS


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", OPERATIONS, ids=operation_label)
def test_operation_honours_its_contract(operation: Any, world: World) -> None:
    from django.db import connection

    assert not connection.in_atomic_block  # the app's commits are real; no test transaction
    cookies: dict[str, str] = {}
    if _session_only(operation):
        headers = {"X-CSRFToken": world.csrf_token}
        cookies = world.session_cookies
    else:
        headers = {"Authorization": world.authorization}

    assert_contract_holds(
        _strategy(operation, world), headers=headers, cookies=cookies, examples=MAX_EXAMPLES * 2
    )


# --- Inputs the generator does not produce ---------------------------------------------------

DEEP_JSON = "[" * 100_000 + "]" * 100_000
EDGE_CASES = [
    # (operation, raw body or None, extra headers, query, expected status)
    ("POST /api/v1/organizations", DEEP_JSON, {}, {}, 400),
    ("POST /api/v1/organizations", '{"name": "\\ud800"}', {}, {}, 400),
    ("POST /api/v1/organizations", '{"name": "\\udfff x \\ud83d"}', {}, {}, 400),
    ("POST /api/v1/organizations", '{"name": "ok", "\\ud800": 1}', {}, {}, 400),
    ("POST /api/v1/organizations", '{"name": "\\ud83d\\ude00"}', {}, {}, 201),  # a real pair
    ("POST /api/v1/organizations", '{"name": "x"}', {"Content-Type": "text/plain"}, {}, 415),
    ("POST /api/v1/organizations", '{"name": NaN}', {}, {}, 400),
    ("GET /api/v1/me", None, {"Accept": "text/html"}, {}, 406),
    ("GET /api/v1/workspaces", None, {}, {"limit": ["1", "2"], "unknown": "1"}, 200),
    ("GET /api/v1/workspaces", None, {}, {"limit": "99999999999999999999999"}, 422),
    ("GET /api/v1/workspaces", None, {}, {"cursor": "\x00"}, 422),
    ("PATCH /api/v1/workspaces/{workspace_id}", '{"timezone": "../../etc/passwd"}', {}, {}, 422),
]
"""Deep nesting and lone surrogates used to crash (500); see config/api/parsers.py."""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("label", "body", "extra_headers", "query", "status"),
    EDGE_CASES,
    ids=[f"{c[0]} {c[4]} {index}" for index, c in enumerate(EDGE_CASES)],
)
def test_edge_case_answers_within_the_contract(
    label: str,
    body: str | None,
    extra_headers: dict[str, str],
    query: dict[str, Any],
    status: int,
    world: World,
) -> None:
    operation = {operation_label(op): op for op in OPERATIONS}[label]
    path_parameters = {p.name: world.ids[p.name][0] for p in operation.path_parameters}
    case = operation.Case(path_parameters=path_parameters or None, query=query or None)
    headers = {"Authorization": world.authorization, **extra_headers}
    kwargs: dict[str, Any] = {}
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
        kwargs["data"] = body.encode("utf-8", "surrogatepass")
    response = case.call(headers=headers, **kwargs)
    assert response.status_code == status, response.text[:300]
    case.validate_response(response, checks=CHECKS, headers=headers)
