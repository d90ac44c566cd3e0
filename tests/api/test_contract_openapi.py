"""The served contract: ``/docs/openapi.json``, the interactive docs, and the ``$schema`` of every
response.

- The OpenAPI document is JSON, OpenAPI 3, validates with drf-spectacular with no warning, and
  declares every identity operation with its request and response schemas, both security
  schemes, and the problem responses each operation can return.
- ``/docs/`` renders the interactive docs from this instance's own static files (no CDN).
- Every response object carries ``$schema``: the absolute URL of a JSON Schema (Draft 2020-12)
  that this instance serves and that the real response validates against; problem bodies too.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from config.api.problems import PROBLEM_CONTENT_TYPE
from tests.openapi_support import (
    ERROR_MODEL_REF,
    SchemaChecker,
    declared_component,
    expected_problems,
    operations,
    served_contract,
)
from workspaces.models import User

# Operations that only a browser session may call: a bearer token is not a way in.
SESSION_ONLY = {
    "api_tokens_list",
    "api_tokens_create",
    "api_tokens_revoke",
    "workspaces_delete",
    "workspaces_deletion_preview",
}
WITH_BODY = {
    "organizations_create",
    "workspaces_create",
    "workspaces_update",
    "workspaces_delete",
    "workspace_members_update",
    "workspace_invitations_create",
    "invitations_accept",
    "api_tokens_create",
}
IDENTITY_OPERATIONS = {
    "health_liveness",
    "health_readiness",
    "me_get",
    "organizations_list",
    "organizations_create",
    "organizations_get",
    "workspaces_list",
    "workspaces_create",
    "workspaces_get",
    "workspaces_update",
    "workspaces_delete",
    "workspaces_deletion_preview",
    "workspaces_usage",
    "workspaces_access_audit",
    "workspace_members_list",
    "workspace_members_update",
    "workspace_members_remove",
    "workspace_invitations_list",
    "workspace_invitations_create",
    "invitations_accept",
    "invitations_resend",
    "invitations_revoke",
    "api_tokens_list",
    "api_tokens_create",
    "api_tokens_revoke",
}


@pytest.fixture(autouse=True)
def _origin_from_request(settings: Any) -> None:
    """``$schema`` URLs are built from the request's origin (``http://testserver``)."""
    settings.HERALD_PUBLIC_URL = ""


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return served_contract()


def identity_operations(contract: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, method, operation in operations(contract):
        if operation["operationId"] in IDENTITY_OPERATIONS:
            yield path, method, operation


# --- A. The OpenAPI document -----------------------------------------------------------------


def test_contract_is_served_as_json_openapi_3() -> None:
    response = Client().get("/docs/openapi.json")

    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == "application/json"
    document = json.loads(response.content)
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "Herald API"


def test_contract_is_public_even_with_a_bad_token() -> None:
    response = Client().get("/docs/openapi.json", HTTP_AUTHORIZATION="Bearer nonsense")

    assert response.status_code == 200


def test_spectacular_validates_the_contract_without_warnings() -> None:
    """``manage.py spectacular --validate --fail-on-warn`` (CI gate); no enum-name collisions."""
    out = io.StringIO()
    call_command(
        "spectacular", validate=True, fail_on_warn=True, file=os.devnull, stdout=out, stderr=out
    )
    names = json.loads(Client().get("/docs/openapi.json").content)["components"]["schemas"]
    hashed = [name for name in names if re.search(r"[0-9a-f]{3}Enum$", name)]
    assert hashed == [], "add these choice sets to ENUM_NAME_OVERRIDES"


def test_every_identity_operation_is_declared(contract: dict[str, Any]) -> None:
    declared = {op["operationId"] for _, _, op in operations(contract)}
    assert declared >= IDENTITY_OPERATIONS
    assert all(path.startswith("/api/v1/") for path in contract["paths"])


def test_operations_declare_request_and_response_schemas(contract: dict[str, Any]) -> None:
    components = contract["components"]["schemas"]
    for _, method, operation in identity_operations(contract):
        op_id = operation["operationId"]
        successes = {code: r for code, r in operation["responses"].items() if code.startswith("2")}
        assert len(successes) == 1, op_id
        ((code, success),) = successes.items()
        if code == "204":
            assert "content" not in success, op_id
        else:
            schema = success["content"]["application/json"]["schema"]
            ref = schema.get("$ref") or schema["items"]["$ref"]
            assert ref.rsplit("/", 1)[1] in components, op_id
        if op_id in WITH_BODY:
            body = operation["requestBody"]
            assert body.get("required", False) is (method != "patch"), op_id
            ref = body["content"]["application/json"]["schema"]["$ref"]
            request_schema = components[ref.rsplit("/", 1)[1]]
            # Unknown body fields are a 422, and the contract says so.
            assert request_schema["additionalProperties"] is False, op_id
        else:
            assert "requestBody" not in operation, op_id


def test_both_security_schemes_are_declared(contract: dict[str, Any]) -> None:
    schemes = contract["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "hrld_<id>_<secret>",
        "description": schemes["bearerAuth"]["description"],
    }
    assert schemes["sessionAuth"]["type"] == "apiKey"
    assert schemes["sessionAuth"]["in"] == "cookie"

    for _, _, operation in identity_operations(contract):
        op_id = operation["operationId"]
        security = operation.get("security")
        if op_id.startswith("health_"):
            assert not security, op_id
        elif op_id in SESSION_ONLY:
            assert security == [{"sessionAuth": []}], op_id
        else:
            assert security == [{"bearerAuth": []}, {"sessionAuth": []}], op_id


def test_operations_declare_their_problem_responses(contract: dict[str, Any]) -> None:
    for path, _, operation in identity_operations(contract):
        responses = operation["responses"]
        errors = {code for code in responses if code[0] in "45"}
        missing = expected_problems(path, operation) - errors
        assert not missing, (operation["operationId"], missing)
        for code in errors:
            assert responses[code]["content"] == {
                PROBLEM_CONTENT_TYPE: {"schema": ERROR_MODEL_REF}
            }, (operation["operationId"], code)
        assert "Retry-After" in responses["429"]["headers"]


def test_access_audit_parameters_match_the_spec(contract: dict[str, Any]) -> None:
    operation = contract["paths"]["/api/v1/workspaces/{workspace_id}/access-audit"]["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert params["workspace_id"]["in"] == "path"
    assert params["workspace_id"]["schema"]["type"] == "string"
    assert params["limit"]["in"] == "query"
    assert params["limit"]["schema"] == {
        "type": "integer",
        "format": "int64",
        "minimum": 1,
        "maximum": 200,
        "default": 50,
    }
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["type"] == "array"


def test_error_model_schema(contract: dict[str, Any]) -> None:
    error_model = contract["components"]["schemas"]["ErrorModel"]
    assert set(error_model["required"]) == {
        "$schema",
        "type",
        "title",
        "status",
        "detail",
        "instance",
        "code",
    }
    assert error_model["properties"]["errors"]["items"] == {
        "$ref": "#/components/schemas/ErrorDetail"
    }


# --- A. Interactive docs from local assets ---------------------------------------------------


class _AssetCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href"} and value:
                self.urls.append(value)


def test_docs_render_from_local_static_assets() -> None:
    client = Client()
    response = client.get("/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    collector = _AssetCollector()
    collector.feed(html)
    assert collector.urls, "the docs page loads no assets"
    assert all(url.startswith("/static/") for url in collector.urls), collector.urls
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", html, re.IGNORECASE)
    assert '"/docs/openapi.json"' in html
    for url in collector.urls:
        asset = client.get(url)
        assert asset.status_code == 200, url
        body = (
            b"".join(asset.streaming_content)  # type: ignore[attr-defined]
            if asset.streaming
            else asset.content
        )
        assert body, url


# --- B. $schema: every response names a JSON Schema that it validates against ----------------


@pytest.fixture
def checker() -> SchemaChecker:
    return SchemaChecker()


def _session(user: User) -> APIClient:
    from django.utils import timezone

    from workspaces.web_session import SESSION_AUTHENTICATED_AT

    client = APIClient()
    client.force_login(user)
    session = client.session
    session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
    session.save()
    return client


@pytest.mark.django_db
def test_every_identity_response_validates_against_its_schema(
    contract: dict[str, Any],
    checker: SchemaChecker,
    user: User,
    organization: Any,
    workspace: Any,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
    settings: Any,
) -> None:
    """One real call per identity operation that answers a body; the body's ``$schema`` names
    the component the contract declares for that status, resolves, and the body validates."""
    owner = bearer_client(user)
    session = _session(user)
    ws = f"/api/v1/workspaces/{workspace.pk}"
    checked: set[str] = set()

    def check(
        client: Any, method: str, path: str, template: str, status: int, body: Any = None
    ) -> Any:
        response = (
            getattr(client, method)(path, body, format="json")
            if body is not None
            else (getattr(client, method)(path))
        )
        assert response.status_code == status, (path, response.content[:500])
        assert response["Content-Type"] == "application/json"
        data = response.json()
        items = data if isinstance(data, list) else [data]
        assert items, path
        for item in items:
            name = checker.validate(item)
            assert name == declared_component(contract, template, method, status), path
        checked.add(contract["paths"][template][method]["operationId"])
        return data

    anonymous = APIClient()
    check(anonymous, "get", "/api/v1/health", "/api/v1/health", 200)
    check(anonymous, "get", "/api/v1/ready", "/api/v1/ready", 200)
    check(owner, "get", "/api/v1/me", "/api/v1/me", 200)

    created_org = check(
        owner, "post", "/api/v1/organizations", "/api/v1/organizations", 201, {"name": "Beta"}
    )
    check(owner, "get", "/api/v1/organizations", "/api/v1/organizations", 200)
    check(
        owner,
        "get",
        f"/api/v1/organizations/{created_org['id']}",
        "/api/v1/organizations/{organization_id}",
        200,
    )

    check(
        owner,
        "post",
        "/api/v1/workspaces",
        "/api/v1/workspaces",
        201,
        {"organization_id": str(organization.pk), "name": "Second", "timezone": "Europe/Paris"},
    )
    check(owner, "get", "/api/v1/workspaces", "/api/v1/workspaces", 200)
    check(owner, "get", ws, "/api/v1/workspaces/{workspace_id}", 200)
    check(owner, "patch", ws, "/api/v1/workspaces/{workspace_id}", 200, {"name": "Main HQ"})
    check(owner, "get", f"{ws}/usage", "/api/v1/workspaces/{workspace_id}/usage", 200)

    invitee = make_user("invitee@example.com")
    invitation = check(
        owner,
        "post",
        f"{ws}/invitations",
        "/api/v1/workspaces/{workspace_id}/invitations",
        201,
        {"email": invitee.email, "role": "editor"},
    )
    assert "accept_url" not in invitation  # e-mailed: the answer carries no link
    settings.HERALD_EMAIL_ENABLED = False  # the other shape: the link, to pass on by hand
    resent = check(
        owner,
        "post",
        f"/api/v1/invitations/{invitation['id']}/resend",
        "/api/v1/invitations/{invitation_id}/resend",
        200,
        {},
    )
    check(owner, "get", f"{ws}/invitations", "/api/v1/workspaces/{workspace_id}/invitations", 200)
    check(
        bearer_client(invitee),
        "post",
        "/api/v1/invitations/accept",
        "/api/v1/invitations/accept",
        200,
        {"token": resent["accept_token"]},
    )
    check(owner, "get", f"{ws}/members", "/api/v1/workspaces/{workspace_id}/members", 200)
    check(
        owner,
        "patch",
        f"{ws}/members/{invitee.pk}",
        "/api/v1/workspaces/{workspace_id}/members/{user_id}",
        200,
        {"role": "viewer", "status": "inactive"},
    )
    check(owner, "get", f"{ws}/access-audit", "/api/v1/workspaces/{workspace_id}/access-audit", 200)

    check(
        session,
        "get",
        f"{ws}/deletion-preview",
        "/api/v1/workspaces/{workspace_id}/deletion-preview",
        200,
    )
    check(
        session,
        "post",
        "/api/v1/api-tokens",
        "/api/v1/api-tokens",
        201,
        {"name": "ci", "permissions": ["api:read"], "workspace_id": str(workspace.pk)},
    )
    check(session, "get", "/api/v1/api-tokens", "/api/v1/api-tokens", 200)

    with_body = {
        op["operationId"]
        for _, _, op in identity_operations(contract)
        if any("content" in r for c, r in op["responses"].items() if c.startswith("2"))
    }
    assert checked == with_body


@pytest.mark.django_db
def test_problem_bodies_validate_against_error_model(
    checker: SchemaChecker, user: User, workspace: Any, bearer_client: Callable[..., APIClient]
) -> None:
    owner = bearer_client(user)
    anonymous = APIClient()
    cases = [
        (anonymous.get("/api/v1/me"), 401),
        (owner.get("/api/v1/api-tokens"), 403),
        (owner.get("/api/v1/workspaces/not-a-workspace"), 404),
        (owner.get("/api/v1/no-such-route"), 404),
        (owner.get("/api/v1/workspaces", {"limit": "0"}), 422),
        (owner.post("/api/v1/organizations", {"name": "Acme", "extra": 1}, format="json"), 422),
        (owner.post("/api/v1/organizations", "{not json", content_type="application/json"), 400),
        (owner.get("/api/v1/schemas/NoSuchThing.json"), 404),
    ]
    for response, status in cases:
        assert response.status_code == status, response.content[:300]
        assert response["Content-Type"] == PROBLEM_CONTENT_TYPE
        body = response.json()
        assert checker.validate(body) == "ErrorModel"
        assert body["status"] == status
    errors = cases[5][0].json()["errors"]
    assert [e["location"] for e in errors] == ["body.extra"]


def test_every_component_schema_is_served_as_valid_json_schema(
    contract: dict[str, Any], checker: SchemaChecker
) -> None:
    for name in contract["components"]["schemas"]:
        document = checker.fetch(f"http://testserver/api/v1/schemas/{name}.json")
        assert document["title"] == name
        # Refs point at the absolute URLs of sibling schema documents, never into the
        # OpenAPI document, and OpenAPI-only keywords are gone.
        text = json.dumps(document)
        assert "#/components/" not in text
        assert '"nullable"' not in text


def test_nullable_fields_accept_null_in_the_json_schema(checker: SchemaChecker) -> None:
    page = checker.fetch("http://testserver/api/v1/schemas/WorkspacePage.json")
    assert page["properties"]["next_cursor"]["type"] == ["string", "null"]
    me = checker.fetch("http://testserver/api/v1/schemas/Me.json")
    token = me["properties"]["token"]
    assert {"type": "null"} in token["anyOf"]


@pytest.mark.django_db
def test_schema_url_uses_the_public_origin_when_configured(
    settings: Any, user: User, bearer_client: Callable[..., APIClient]
) -> None:
    settings.HERALD_PUBLIC_URL = "https://herald.example.org"
    response = bearer_client(user).get("/api/v1/me")
    assert response.json()["$schema"] == "https://herald.example.org/api/v1/schemas/Me.json"
