"""Shared assertions on RFC 9457 problem responses."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

PROBLEM_CONTENT_TYPE = "application/problem+json"


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is a problem+json of ``status`` with the stable ``code``; returns the body."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"] == PROBLEM_CONTENT_TYPE
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["title"] == HTTPStatus(status).phrase
    assert body["$schema"].endswith("/api/v1/schemas/ErrorModel.json")
    assert body["type"] == "about:blank" or body["type"].endswith(f"/docs/problems/{code}")
    assert body["instance"] == response.request["PATH_INFO"]
    assert isinstance(body["detail"], str)
    assert body["detail"]
    return body


def error_locations(body: dict[str, Any]) -> list[str]:
    return [error["location"] for error in body["errors"]]


def assert_invalid(response: Any, *locations: str) -> dict[str, Any]:
    """A 422 ``invalid`` problem whose ``errors[]`` name exactly these locations."""
    body = assert_problem(response, 422, "invalid")
    assert sorted(set(error_locations(body))) == sorted(locations), body["errors"]
    for error in body["errors"]:
        assert error["message"]
    return body
