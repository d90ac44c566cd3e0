"""Requests that are bad before any view runs (issue 16): a ``Host`` header not in
``ALLOWED_HOSTS`` and a chunked body without a Content-Length are clear 4xx answers, never a
500, a traceback flood in the log, or a body silently dropped."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import Client

from tests.problem_asserts import assert_problem

pytestmark = pytest.mark.django_db

BAD_HOST = "evil.example"


def _records_of_the_request(caplog: Any) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("path", ["/api/v1/health", "/api/v1/workspaces", "/api/v1/nothing-here"])
@pytest.mark.parametrize("ssl_redirect", [False, True])
def test_bad_host_on_an_api_path_is_one_400_problem_and_one_warning(
    path: str, ssl_redirect: bool, caplog: Any, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.SECURE_SSL_REDIRECT = ssl_redirect  # SecurityMiddleware would ask for the host first
    caplog.set_level(logging.DEBUG)
    response = Client().get(path, HTTP_HOST=BAD_HOST)
    body = assert_problem(response, 400, "malformed_request")
    assert "Host" in body["detail"]
    assert BAD_HOST not in response.content.decode()  # the refused origin is not echoed
    records = _records_of_the_request(caplog)
    assert len(records) == 1, [(r.name, r.levelname, r.getMessage()) for r in records]
    (record,) = records
    assert record.levelno == logging.WARNING
    assert record.name == "django.security.DisallowedHost"
    assert record.exc_info is None
    assert BAD_HOST in record.getMessage()


def test_bad_host_elsewhere_is_a_plain_400_logged_once(caplog: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    caplog.set_level(logging.DEBUG)
    response = Client().get("/admin/login/", HTTP_HOST=BAD_HOST)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    records = _records_of_the_request(caplog)
    assert [(r.name, r.levelno, r.exc_info) for r in records] == [
        ("django.security.DisallowedHost", logging.WARNING, None)
    ]


def test_a_header_with_control_characters_is_logged_escaped(caplog: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    caplog.set_level(logging.DEBUG)
    response = Client().get("/api/v1/health", HTTP_HOST="evil\nforged-line.example")
    assert response.status_code == 400
    (record,) = _records_of_the_request(caplog)
    assert "\n" not in record.getMessage()


def test_good_host_is_untouched(caplog: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["testserver"]
    caplog.set_level(logging.DEBUG)
    response = Client().get("/api/v1/nothing-here")
    assert_problem(response, 404, "not_found")
    assert not [r for r in caplog.records if r.name.startswith("django.security")]
