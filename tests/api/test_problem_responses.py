"""Every /api/ error is application/problem+json, whatever produced it."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
import time_machine
from django.test import override_settings
from rest_framework import serializers
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from config.api import throttling
from config.api.problems import RequestValidationError, problem_exception_handler
from config.api.request import StrictSerializer, parse_body
from tests.crash_urls import SECRET_INTERNAL
from tests.problem_asserts import assert_invalid, assert_problem

pytestmark = pytest.mark.django_db

ORGS = "/api/v1/organizations"


# --- DRF and domain exceptions --------------------------------------------------------------


def test_unknown_resource_id_is_a_404_problem(owner_client: APIClient) -> None:
    response = owner_client.get("/api/v1/workspaces/00000000-0000-4000-8000-000000000000")
    assert_problem(response, 404, "not_found")


def test_id_that_is_not_one_of_ours_is_a_404_problem(owner_client: APIClient) -> None:
    assert_problem(owner_client.get("/api/v1/workspaces/not-a-uuid"), 404, "not_found")


@pytest.mark.parametrize(
    "path",
    ["/api/v1/no-such-thing", "/api/v1/workspaces/x/y/z", "/api/v2/me", "/api/"],
)
def test_unknown_api_path_is_a_404_problem(owner_client: APIClient, path: str) -> None:
    assert_problem(owner_client.get(path), 404, "not_found")


def test_unknown_api_path_is_a_404_problem_without_credentials(api_client: APIClient) -> None:
    assert_problem(api_client.post("/api/v1/nothing-here", {}), 404, "not_found")


def test_wrong_method_is_a_405_problem(owner_client: APIClient) -> None:
    response = owner_client.put("/api/v1/me", {}, format="json")
    assert_problem(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


def test_body_that_is_not_json_is_a_400_problem(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, data='{"name": "Acme"', content_type="application/json")
    assert_problem(response, 400, "malformed_body")


def test_body_of_another_media_type_is_a_415_problem(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, data="name=Acme", content_type="text/plain")
    assert_problem(response, 415, "unsupported_media_type")


def test_domain_conflict_is_a_409_problem(owner_client: APIClient, organization: Any) -> None:
    body = {"organization_id": str(organization.pk), "name": "MAIN"}
    response = owner_client.post("/api/v1/workspaces", body, format="json")
    assert_problem(response, 409, "name_taken")


# --- 422 with exact locations ---------------------------------------------------------------


def test_missing_body_field_is_422_at_body_location(owner_client: APIClient) -> None:
    body = assert_invalid(owner_client.post(ORGS, {}, format="json"), "body.name")
    assert body["errors"][0]["message"]


def test_blank_body_field_echoes_the_value(owner_client: APIClient) -> None:
    body = assert_invalid(owner_client.post(ORGS, {"name": ""}, format="json"), "body.name")
    assert body["errors"][0]["value"] == ""


def test_unknown_body_field_is_422(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, {"name": "New", "colour": "red"}, format="json")
    assert_invalid(response, "body.colour")


def test_unknown_and_invalid_fields_are_listed_together(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, {"name": "", "colour": "red"}, format="json")
    assert_invalid(response, "body.name", "body.colour")


def test_every_failing_field_is_listed(owner_client: APIClient) -> None:
    response = owner_client.post(
        "/api/v1/workspaces", {"name": "", "timezone": "Mars/Olympus"}, format="json"
    )
    assert_invalid(response, "body.organization_id", "body.name", "body.timezone")


def test_body_that_is_not_an_object_is_422(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, data="[1, 2]", content_type="application/json")
    assert_invalid(response, "body")


def test_nested_list_item_location(
    session_client: APIClient, csrf_headers: Callable[[Any], dict[str, str]]
) -> None:
    response = session_client.post(
        "/api/v1/api-tokens",
        {"name": "ci", "permissions": ["api:read", "api:everything"]},
        format="json",
        **csrf_headers(session_client),
    )
    body = assert_invalid(response, "body.permissions[1]")
    assert body["errors"][0]["value"] == "api:everything"


def test_query_parameter_location(owner_client: APIClient) -> None:
    body = assert_invalid(owner_client.get("/api/v1/workspaces?limit=abc"), "query.limit")
    assert body["errors"][0]["value"] == "abc"


def test_secret_values_are_not_echoed(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.post("/api/v1/invitations/accept", {"token": "short"}, format="json")
    body = assert_invalid(response, "body.token")
    assert "value" not in body["errors"][0]


class _Example(serializers.Serializer):  # type: ignore[type-arg]
    text = serializers.CharField(max_length=3)


class _Definition(StrictSerializer):
    traits = serializers.ListField(child=serializers.CharField(max_length=5))


class _Body(StrictSerializer):
    definition = _Definition()
    examples = _Example(many=True)


def test_nested_locations_use_dots_for_fields_and_brackets_for_items() -> None:
    payload = {
        "definition": {"traits": ["ok", "ok", "ok", "far too long"], "mood": "x"},
        "examples": [{"text": "ok"}, {"text": "also too long"}],
    }
    request = Request(
        APIRequestFactory().post("/api/v1/example", payload, format="json"),
        parsers=[JSONParser()],
    )
    with pytest.raises(RequestValidationError) as caught:
        parse_body(_Body, request)
    response = problem_exception_handler(caught.value, {"request": request, "view": None})
    assert response is not None
    assert response.status_code == 422
    errors = {error["location"]: error.get("value") for error in response.data["errors"]}
    assert errors == {
        "body.definition.traits[3]": "far too long",
        "body.definition.mood": "x",
        "body.examples[1].text": "also too long",
    }


# --- 413 ------------------------------------------------------------------------------------


@override_settings(HERALD_MAX_JSON_BODY_BYTES=64)
def test_oversized_json_body_is_a_413_problem(owner_client: APIClient) -> None:
    payload = json.dumps({"name": "x" * 100})
    response = owner_client.post(ORGS, data=payload, content_type="application/json")
    assert_problem(response, 413, "payload_too_large")


@override_settings(HERALD_MAX_JSON_BODY_BYTES=64)
def test_body_within_the_limit_is_accepted(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, {"name": "Small"}, format="json")
    assert response.status_code == 201


@override_settings(HERALD_MAX_JSON_BODY_BYTES=64)
def test_oversized_body_is_refused_before_authentication(api_client: APIClient) -> None:
    payload = json.dumps({"name": "x" * 100})
    response = api_client.post(ORGS, data=payload, content_type="application/json")
    assert_problem(response, 413, "payload_too_large")


# --- 429 ------------------------------------------------------------------------------------

BAD_TOKEN = "hrld_00000000_" + "A" * 43


@time_machine.travel("2030-01-01 12:00:05+00:00", tick=False)
def test_failed_authentication_limiter(api_client: APIClient, settings: Any) -> None:
    limit = settings.HERALD_AUTH_FAILURES_PER_MINUTE
    assert limit == 30
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {BAD_TOKEN}")
    for _ in range(limit):
        assert_problem(api_client.get("/api/v1/me"), 401, "not_authenticated")

    response = api_client.get("/api/v1/me")
    assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60

    other_ip = api_client.get("/api/v1/me", REMOTE_ADDR="10.9.9.9")
    assert_problem(other_ip, 401, "not_authenticated")


@time_machine.travel("2030-01-01 12:00:05+00:00", tick=False)
def test_failed_authentication_limit_is_configurable(api_client: APIClient, settings: Any) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    api_client.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    assert_problem(api_client.get("/api/v1/me"), 401, "not_authenticated")
    assert_problem(api_client.get("/api/v1/me"), 401, "not_authenticated")
    assert_problem(api_client.get("/api/v1/me"), 429, "rate_limited")


def test_failure_budget_resets_in_the_next_minute(api_client: APIClient, settings: Any) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 1
    api_client.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    with time_machine.travel("2030-01-01 12:00:05+00:00", tick=False) as clock:
        assert_problem(api_client.get("/api/v1/me"), 401, "not_authenticated")
        assert_problem(api_client.get("/api/v1/me"), 429, "rate_limited")
        clock.shift(60)
        assert_problem(api_client.get("/api/v1/me"), 401, "not_authenticated")


def test_successful_requests_do_not_count_as_failures(
    owner_client: APIClient, settings: Any
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 1
    for _ in range(3):
        assert owner_client.get("/api/v1/me").status_code == 200


def test_api_user_throttle_is_a_429_problem(
    owner_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(throttling.UserRateThrottle, "THROTTLE_RATES", {"user": "2/min"})
    assert owner_client.get("/api/v1/me").status_code == 200
    assert owner_client.get("/api/v1/me").status_code == 200
    response = owner_client.get("/api/v1/me")
    assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60


# --- 500 ------------------------------------------------------------------------------------


@pytest.fixture
def crash_client() -> APIClient:
    return APIClient(raise_request_exception=False)


@pytest.mark.parametrize("path", ["/api/v1/test-crash", "/api/v1/test-crash-plain"])
@override_settings(ROOT_URLCONF="tests.crash_urls", DEBUG=False)
def test_unexpected_exception_is_a_detail_free_500_problem(
    crash_client: APIClient, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = crash_client.get(path)
    body = assert_problem(response, 500, "internal_error")
    text = response.content.decode()
    for leak in ("Traceback", "hunter2", "RuntimeError", "KeyError", ".py", SECRET_INTERNAL):
        assert leak not in text
    assert set(body) == {"$schema", "type", "title", "status", "detail", "instance", "code"}
    # The failure is logged on the server instead.
    assert any(SECRET_INTERNAL in str(record.exc_info) for record in caplog.records)


@override_settings(ROOT_URLCONF="tests.crash_urls", DEBUG=False)
def test_crash_urlconf_keeps_the_real_routes(crash_client: APIClient) -> None:
    assert_problem(crash_client.get("/api/v1/me"), 401, "not_authenticated")


# --- Problem type documentation -------------------------------------------------------------


def test_problem_type_uri_resolves(owner_client: APIClient) -> None:
    body = assert_problem(owner_client.get("/api/v1/nothing"), 404, "not_found")
    path = body["type"].removeprefix("http://testserver")
    assert path == "/docs/problems/not_found"
    assert APIClient().get(path).status_code == 200


@pytest.mark.parametrize(
    "code",
    [
        "invalid",
        "malformed_body",
        "not_authenticated",
        "permission_denied",
        "not_found",
        "method_not_allowed",
        "payload_too_large",
        "rate_limited",
        "internal_error",
        "unsupported_media_type",
        "token_permission",
        "token_workspace_scope",
        "session_required",
        "csrf_failed",
        "no_workspace_access",
        "no_organization_access",
        "role_too_low",
        "name_taken",
        "last_admin",
        "already_member",
        "invitation_exists",
        "invitation_not_pending",
        "invitation_email_mismatch",
        "recent_authentication_required",
        "deletion_blocked",
    ],
)
def test_every_identity_problem_code_is_documented(api_client: APIClient, code: str) -> None:
    response = api_client.get(f"/docs/problems/{code}")
    assert response.status_code == 200
    assert code in response.content.decode()


def test_unknown_problem_code_is_not_documented(api_client: APIClient) -> None:
    assert api_client.get("/docs/problems/no_such_code").status_code == 404
