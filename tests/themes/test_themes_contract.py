"""Theme responses against the served contract: every body names its JSON Schema in ``$schema``
(the component the operation declares) and validates against it; the path and page parameters
are declared with their types and bounds; list endpoints run a fixed number of queries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from tests.openapi_support import SchemaChecker, declared_component, served_contract
from tests.themes_support import (
    create_theme,
    image_bytes,
    make_assets,
    manifest,
    publish,
    replace_draft,
    upload_asset,
)
from workspaces.models import User


@pytest.fixture(autouse=True)
def _origin_from_request(settings: Any) -> None:
    settings.HERALD_PUBLIC_URL = ""


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return served_contract()


THEME_OPERATIONS = {
    "themes_built_ins",
    "themes_list",
    "themes_create",
    "themes_available",
    "themes_get",
    "themes_delete",
    "themes_draft_replace",
    "themes_publish",
    "themes_revisions_list",
    "themes_revision_get",
    "theme_settings_organization_get",
    "theme_settings_organization_set",
    "theme_assignments_get",
    "theme_assignments_set",
    "theme_assets_list",
    "theme_assets_upload",
    "theme_assets_delete",
    "theme_assets_content",
}


def test_every_theme_operation_is_declared(contract: dict[str, Any]) -> None:
    declared = {
        operation["operationId"]
        for item in contract["paths"].values()
        for method, operation in item.items()
        if method in {"get", "post", "put", "delete"}
    }
    assert declared >= THEME_OPERATIONS


def test_path_and_page_parameters_are_declared_with_their_bounds(contract: dict[str, Any]) -> None:
    revision = contract["paths"]["/api/v1/themes/{theme_id}/revisions/{revision}"]["get"]
    params = {p["name"]: p for p in revision["parameters"]}
    assert params["revision"]["in"] == "path"
    assert params["revision"]["schema"] == {"type": "integer", "format": "int64", "minimum": 1}
    assert params["organization_id"]["required"] is True
    assets = contract["paths"]["/api/v1/theme-assets"]["get"]
    params = {p["name"]: p for p in assets["parameters"]}
    assert params["organization_id"]["required"] is True
    assert params["limit"]["schema"] == {
        "type": "integer",
        "format": "int64",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
    }
    assert params["cursor"]["schema"] == {"type": "string", "maxLength": 1024}
    create = contract["paths"]["/api/v1/themes"]["post"]
    body = create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(contract["components"]["schemas"][body]["required"]) == {"name", "organization_id"}


@pytest.mark.django_db
def test_every_theme_response_validates_against_its_schema(
    contract: dict[str, Any],
    bearer_client: Callable[..., APIClient],
    user: User,
    organization: Any,
    workspace: Any,
    media_storage: Any,
) -> None:
    checker = SchemaChecker()
    owner = bearer_client(user)
    org = str(organization.pk)
    checked: set[str] = set()

    def check(response: Any, template: str, method: str, status: int) -> Any:
        assert response.status_code == status, (template, response.content[:400])
        body = response.json()
        assert checker.validate(body) == declared_component(contract, template, method, status), (
            template
        )
        checked.add(contract["paths"][template][method]["operationId"])
        return body

    check(owner.get("/api/v1/themes/built-ins"), "/api/v1/themes/built-ins", "get", 200)
    theme = check(
        owner.post("/api/v1/themes", {"name": "Brand", "organization_id": org}, format="json"),
        "/api/v1/themes",
        "post",
        201,
    )
    theme_id = theme["draft"]["theme_id"]
    asset = check(
        upload_asset(owner, organization, image_bytes()), "/api/v1/theme-assets", "post", 201
    )
    body = manifest(
        "paper",
        assets=[
            {
                "id": "t",
                "alt": "Leaves",
                "mimeType": "image/png",
                "slot": "empty-state-illustration",
                "sourceUrl": f"asset:{asset['id']}",
            }
        ],
    )
    check(
        replace_draft(owner, organization, theme, body),
        "/api/v1/themes/{theme_id}/draft",
        "put",
        200,
    )
    check(
        publish(owner, organization, theme_id, draft=2, published=None),
        "/api/v1/themes/{theme_id}/publish",
        "post",
        201,
    )
    check(owner.get("/api/v1/themes", {"organization_id": org}), "/api/v1/themes", "get", 200)
    check(
        owner.get(f"/api/v1/themes/{theme_id}", {"organization_id": org}),
        "/api/v1/themes/{theme_id}",
        "get",
        200,
    )
    check(
        owner.get(f"/api/v1/themes/{theme_id}/revisions", {"organization_id": org}),
        "/api/v1/themes/{theme_id}/revisions",
        "get",
        200,
    )
    check(
        owner.get(f"/api/v1/themes/{theme_id}/revisions/1", {"organization_id": org}),
        "/api/v1/themes/{theme_id}/revisions/{revision}",
        "get",
        200,
    )
    check(
        owner.get("/api/v1/themes/available", {"workspace_id": str(workspace.pk)}),
        "/api/v1/themes/available",
        "get",
        200,
    )
    check(
        owner.put(
            "/api/v1/theme-settings/organization",
            {"organization_id": org, "default_reference": {"kind": "organization", "id": theme_id}},
            format="json",
        ),
        "/api/v1/theme-settings/organization",
        "put",
        200,
    )
    check(
        owner.get("/api/v1/theme-settings/organization", {"organization_id": org}),
        "/api/v1/theme-settings/organization",
        "get",
        200,
    )
    check(
        owner.put(
            f"/api/v1/theme-assignments/{workspace.pk}",
            {"reference": {"kind": "built_in", "id": "garden", "version": 1}},
            format="json",
        ),
        "/api/v1/theme-assignments/{workspace_id}",
        "put",
        200,
    )
    check(
        owner.get(f"/api/v1/theme-assignments/{workspace.pk}"),
        "/api/v1/theme-assignments/{workspace_id}",
        "get",
        200,
    )
    check(
        owner.get("/api/v1/theme-assets", {"organization_id": org}),
        "/api/v1/theme-assets",
        "get",
        200,
    )
    # Problems validate against the error model too.
    check(
        owner.put(
            f"/api/v1/themes/{theme_id}/draft",
            {"organization_id": org, "expected_revision": 1, "name": "x", "manifest": body},
            format="json",
        ),
        "/api/v1/themes/{theme_id}/draft",
        "put",
        409,
    )
    assert THEME_OPERATIONS - checked == {
        "themes_delete",
        "theme_assets_delete",
        "theme_assets_content",
    }


@pytest.mark.django_db
def test_list_endpoints_run_a_fixed_number_of_queries(
    bearer_client: Callable[..., APIClient], user: User, organization: Any, workspace: Any
) -> None:
    owner = bearer_client(user)
    org = str(organization.pk)

    def queries(url: str, query: dict[str, Any]) -> int:
        owner.get(url, query)  # warm-up: token bookkeeping is not counted
        with CaptureQueriesContext(connection) as captured:
            assert owner.get(url, query).status_code == 200
        return len(captured.captured_queries)

    def lists() -> dict[str, int]:
        return {
            "themes": queries("/api/v1/themes", {"organization_id": org, "limit": 100}),
            "available": queries(
                "/api/v1/themes/available", {"workspace_id": str(workspace.pk), "limit": 100}
            ),
            "assets": queries("/api/v1/theme-assets", {"organization_id": org, "limit": 100}),
        }

    theme = create_theme(owner, organization, "First")
    publish(owner, organization, theme["draft"]["theme_id"], draft=1, published=None)
    make_assets(organization, user, 2, start=timezone.now(), step=timedelta(seconds=1))
    few = lists()
    for number in range(8):
        created = create_theme(owner, organization, f"Theme {number}")
        publish(owner, organization, created["draft"]["theme_id"], draft=1, published=None)
    make_assets(organization, user, 40, start=timezone.now(), step=timedelta(seconds=1))
    assert lists() == few
    assert max(few.values()) <= 7
