"""Requests that are bad before any view runs: a ``Host`` header not in
``ALLOWED_HOSTS`` and a chunked body without a Content-Length are clear 4xx answers, never a
500, a traceback flood in the log, or a body silently dropped."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.problem_asserts import PROBLEM_CONTENT_TYPE, assert_problem

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


# --- Chunked bodies ---------------------------------------------------------------------------

ORGS = "/api/v1/organizations"


def test_chunked_body_without_content_length_is_a_411_problem(owner_client: APIClient) -> None:
    # What gunicorn hands to WSGI for a chunked request: the header, the stream, no CONTENT_LENGTH.
    response = owner_client.generic(
        "POST", ORGS, b"", content_type="application/json", HTTP_TRANSFER_ENCODING="chunked"
    )
    body = assert_problem(response, 411, "length_required")
    assert "Content-Length" in body["detail"]
    # Not a misleading "field required" about a body that was never read.
    assert "errors" not in body


def test_chunked_body_is_refused_before_authentication(api_client: APIClient) -> None:
    response = api_client.generic(
        "POST", ORGS, b"", content_type="application/json", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert_problem(response, 411, "length_required")


def test_chunked_body_elsewhere_is_a_plain_411() -> None:
    response = Client().generic("POST", "/admin/login/", b"", HTTP_TRANSFER_ENCODING="chunked")
    assert response.status_code == 411
    assert response["Content-Type"].startswith("text/plain")


def test_a_body_with_its_content_length_is_read(owner_client: APIClient) -> None:
    response = owner_client.post(ORGS, {"name": "Framed"}, format="json")
    assert response.status_code == 201, response.content


ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def gunicorn_port(tmp_path: Path) -> Iterator[int]:
    """The shipped server (gunicorn, gthread) on a free port, with a throwaway data folder."""
    dropped = ("HERALD_", "DATABASE_URL", "REDIS_URL", "AWS_", "SECRET_KEY", "ALLOWED_HOSTS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update({"HERALD_DATA_DIR": str(tmp_path / "data"), "HERALD_ENVIRONMENT": "local"})
    port = _free_port()
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--threads",
                "2",
                "--graceful-timeout",
                "2",
                "--access-logfile",
                "-",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=1),
            ):
                break
            time.sleep(0.1)
        else:
            pytest.fail("gunicorn did not start")
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{log_path.read_text(errors='replace')[-3000:]}")
        yield port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.mark.slow
def test_gunicorn_chunked_request_is_a_411_problem_and_the_connection_stays_usable(
    gunicorn_port: int,
) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", gunicorn_port, timeout=30)
    try:
        payload = [
            json.dumps({"name": "Chunked"}).encode()[:5],
            json.dumps({"name": "Chunked"}).encode()[5:],
        ]
        connection.request(
            "POST",
            ORGS,
            body=iter(payload),
            encode_chunked=True,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        response = connection.getresponse()
        raw = response.read()
        assert response.status == 411, raw[:500]
        assert response.getheader("Content-Type") == PROBLEM_CONTENT_TYPE
        body = json.loads(raw)
        assert body["code"] == "length_required"
        assert body["status"] == 411
        assert "errors" not in body
        # The same keep-alive connection answers the next request normally (the body was consumed).
        connection.request("GET", "/api/v1/nothing-here", headers={"Accept": "application/json"})
        follow_up = connection.getresponse()
        follow_raw = follow_up.read()
        assert follow_up.status == 404, follow_raw[:300]
        assert json.loads(follow_raw)["code"] == "not_found"
    finally:
        connection.close()


@pytest.mark.slow
def test_gunicorn_access_log_never_holds_a_token_from_the_path(
    gunicorn_port: int, tmp_path: Path
) -> None:
    """Invitation, verification and password-reset links carry their secret in the path;
    gunicorn's access log (outside Django's logging) is filtered like every other log line."""
    invitation = "inv" + "A1b2C3d4" * 5
    reset = "cb1a2z-" + "0123456789abcdef" * 2
    verification = ".eJyrVirNKVCyUkrOzytJzSvRLUktLlGqBQBNMwdu:1tGxyz:" + "Ab-_" * 8
    connection = http.client.HTTPConnection("127.0.0.1", gunicorn_port, timeout=30)
    try:
        for path in (
            f"/invitations/{invitation}/",
            f"/password-reset/MQ/{reset}/",
            f"/verify-email/{verification}/",
        ):
            connection.request("GET", path)
            connection.getresponse().read()
    finally:
        connection.close()
    deadline = time.monotonic() + 10
    log = ""
    while time.monotonic() < deadline:
        log = (tmp_path / "gunicorn.log").read_text(errors="replace")
        if all(
            f'"GET /{page}/' in log for page in ("invitations", "password-reset", "verify-email")
        ):
            break
        time.sleep(0.1)
    assert "/invitations/[REDACTED]" in log, log[-2000:]
    assert "/password-reset/MQ/[REDACTED]" in log, log[-2000:]
    assert "/verify-email/[REDACTED]" in log, log[-2000:]
    assert invitation not in log
    assert reset not in log
    assert verification not in log
