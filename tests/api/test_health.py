"""Liveness and readiness probes.

In-process tests cover the response shapes, authentication/throttle exemption and the object
store check against a real S3-compatible server (moto's server mode on 127.0.0.1). The `slow`
tests run real gunicorn processes with the environment a deployment would use: one whose
PostgreSQL is unreachable, one wired to the object store through HERALD_S3_* variables only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
import time_machine
from botocore.config import Config
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import override_settings
from rest_framework.test import APIClient

from config import health
from config.api.problems import PROBLEM_CONTENT_TYPE
from config.api.throttling import UserRateThrottle
from config.version import RELEASE

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
HEALTH = "/api/v1/health"
READY = "/api/v1/ready"
SERVER_DB_TIMEOUT = health.DB_TIMEOUT_SECONDS  # what a real server uses (before any patching)
AWS = {"access_key": "testing", "secret_key": "testing", "region_name": "us-east-1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_dependency_problem(response: Any, failing: list[str], instance: str = READY) -> None:
    body = response.json()
    assert response.status_code == 503
    assert response.headers["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)
    assert body["status"] == 503
    assert body["code"] == "dependency_unavailable"
    assert body["type"].endswith("/docs/problems/dependency_unavailable")
    assert body["failing"] == failing
    for name in failing:
        assert name in body["detail"]
    assert body["$schema"].endswith("/api/v1/schemas/ErrorModel.json")
    assert body["instance"] == instance


@pytest.fixture(autouse=True)
def _patient_database_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process tests are about outcomes, not the 3 s limit: a loaded CI machine can take
    longer than that to open a PostgreSQL connection."""
    monkeypatch.setattr(health, "DB_TIMEOUT_SECONDS", 15.0)


# --- Liveness ----------------------------------------------------------------------------------


@pytest.fixture
def database_touches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every attempt to open a database connection, from any thread, fails and is recorded."""
    touched: list[str] = []

    def refuse(self: BaseDatabaseWrapper) -> None:
        touched.append(threading.current_thread().name)
        raise OperationalError("database unreachable (test)")

    monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", refuse)
    return touched


def test_liveness_is_ok_and_never_touches_the_database(database_touches: list[str]) -> None:
    response = APIClient().get(HEALTH)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert body == {"$schema": body["$schema"], "status": "ok", "version": body["version"]}
    assert body["version"]["release"] == RELEASE
    assert body["$schema"].endswith("/api/v1/schemas/Liveness.json")
    assert database_touches == []


def test_readiness_is_503_naming_the_database_when_no_probe_can_run(
    database_touches: list[str],
) -> None:
    with override_settings(HERALD_S3_BUCKET=None):
        response = APIClient().get(READY)
    assert_dependency_problem(response, ["database"])
    assert response.headers["Cache-Control"] == "no-store"
    assert database_touches, "the readiness probe must have tried the database"


@pytest.mark.django_db
def test_readiness_is_ready_without_storage_key_when_s3_is_not_configured() -> None:
    with override_settings(HERALD_S3_BUCKET=None):
        response = APIClient().get(READY)
    assert response.status_code == 200, response.content
    body = response.json()
    redis = {"redis": "ok"} if settings.REDIS_URL else {}  # probed whenever REDIS_URL is set
    assert body == {"$schema": body["$schema"], "status": "ready", "database": "ok", **redis}
    assert "storage" not in body
    assert body["$schema"].endswith("/api/v1/schemas/Readiness.json")
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_probes_need_no_authentication_and_are_exempt_from_the_api_throttle(
    monkeypatch: pytest.MonkeyPatch, owner_client: APIClient
) -> None:
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "2/min"})
    # Control: the throttle is live for ordinary API requests at this rate.
    statuses = [owner_client.get("/api/v1/me").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]

    anonymous = APIClient()
    garbage = APIClient(HTTP_AUTHORIZATION="Bearer not-a-token")
    with override_settings(HERALD_S3_BUCKET=None):
        for client in (anonymous, garbage, owner_client):
            for path in (HEALTH, READY):
                assert [client.get(path).status_code for _ in range(4)] == [200] * 4, path


def test_probes_are_exempt_from_the_https_redirect() -> None:
    """Orchestrators call the probes over plain HTTP inside the network."""
    with override_settings(SECURE_SSL_REDIRECT=True):
        client = APIClient()
        assert client.get(HEALTH).status_code == 200
        assert client.get("/api/v1/me").status_code == 301


# --- Object store (real S3-compatible server) ------------------------------------------------


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


def new_bucket(s3: Any, *, versioned: bool = False) -> str:
    name = f"herald-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def s3_settings(endpoint: str, bucket: str, timeout: float = 15.0) -> override_settings:
    """The STORAGES the settings module builds from HERALD_S3_* (see test_deploy_settings)."""
    options = {
        "bucket_name": bucket,
        "endpoint_url": endpoint,
        "client_config": Config(
            connect_timeout=5,
            read_timeout=30,
            retries={"mode": "standard", "max_attempts": 3},
            s3={"addressing_style": "path"},
        ),
        "location": "",
        "default_acl": None,
        "file_overwrite": False,
        **AWS,
    }
    return override_settings(
        HERALD_S3_BUCKET=bucket,
        HERALD_S3_CHECK_TIMEOUT_SECONDS=timeout,
        STORAGES={
            "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
    )


def test_storage_override_resets_the_cached_default_storage() -> None:
    """Django resets `default_storage` when STORAGES changes (Django 5 `storages_changed`)."""
    before = getattr(default_storage, "bucket_name", None)  # instantiates the configured one
    with s3_settings("http://127.0.0.1:1", "herald-override"):
        assert default_storage.bucket_name == "herald-override"
    assert getattr(default_storage, "bucket_name", None) == before


@pytest.mark.slow
@pytest.mark.django_db
def test_readiness_writes_reads_and_deletes_a_random_object(moto_endpoint: str, s3: Any) -> None:
    bucket = new_bucket(s3, versioned=True)
    with s3_settings(moto_endpoint, bucket):
        response = APIClient().get(READY)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {
        "$schema": body["$schema"],
        "status": "ready",
        "database": "ok",
        **({"redis": "ok"} if settings.REDIS_URL else {}),
        "storage": "ok",
    }
    # Nothing is left behind ...
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    # ... but the versioned bucket proves a random object was written, then deleted.
    history = s3.list_object_versions(Bucket=bucket)
    written = [version["Key"] for version in history.get("Versions", [])]
    deleted = [marker["Key"] for marker in history.get("DeleteMarkers", [])]
    assert len(written) == 1
    assert written == deleted
    assert written[0].startswith("herald-readiness/")


@pytest.mark.slow
@pytest.mark.django_db
def test_readiness_is_503_naming_storage_when_the_bucket_is_missing(moto_endpoint: str) -> None:
    with s3_settings(moto_endpoint, f"missing-{uuid.uuid4().hex[:12]}"):
        response = APIClient().get(READY)
    assert_dependency_problem(response, ["storage"])


@pytest.mark.slow
@pytest.mark.django_db
def test_readiness_is_503_naming_storage_when_the_server_is_down() -> None:
    started = time.monotonic()
    with s3_settings(f"http://127.0.0.1:{free_port()}", "herald-media"):
        response = APIClient().get(READY)
    assert_dependency_problem(response, ["storage"])
    assert time.monotonic() - started < 5


@pytest.fixture
def hung_endpoint() -> Iterator[dict[str, Any]]:
    """A TCP server that accepts connections and never answers; records client hang-ups."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    state: dict[str, Any] = {
        "url": f"http://127.0.0.1:{listener.getsockname()[1]}",
        "accepted": 0,
        "closed_by_client": threading.Event(),
    }
    stop = threading.Event()
    held: list[socket.socket] = []

    def watch(conn: socket.socket) -> None:
        conn.settimeout(0.2)
        while not stop.is_set():
            try:
                if conn.recv(65536) == b"":
                    state["closed_by_client"].set()
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            state["accepted"] += 1
            held.append(conn)
            threading.Thread(target=watch, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.slow
@pytest.mark.django_db
def test_readiness_is_bounded_when_the_object_store_hangs(hung_endpoint: dict[str, Any]) -> None:
    started = time.monotonic()
    with s3_settings(hung_endpoint["url"], "herald-media", timeout=1.0):
        response = APIClient().get(READY)
    elapsed = time.monotonic() - started
    assert_dependency_problem(response, ["storage"])
    assert hung_endpoint["accepted"] >= 1, "the check must have reached the hung endpoint"
    assert elapsed < 3.5, f"readiness took {elapsed:.1f}s with a 1s limit"
    # botocore's own read timeout (not its 60 s default, with retries) ends the stuck call.
    assert hung_endpoint["closed_by_client"].wait(timeout=3), "the probe thread is still stuck"


@pytest.mark.slow
@pytest.mark.django_db
def test_storage_result_is_cached_30s_on_success_and_5s_on_failure(
    moto_endpoint: str, s3: Any
) -> None:
    bucket = f"herald-{uuid.uuid4().hex[:12]}"
    locmem = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    client = APIClient()

    def storage_status() -> str:
        response = client.get(READY)
        if response.status_code == 200:
            return str(response.json()["storage"])
        assert_dependency_problem(response, ["storage"])
        return "failing"

    with (
        override_settings(CACHES=locmem),
        s3_settings(moto_endpoint, bucket),
        time_machine.travel(time.time(), tick=False) as traveller,
    ):
        assert storage_status() == "failing"  # no bucket yet
        s3.create_bucket(Bucket=bucket)
        assert storage_status() == "failing"  # cached failure
        traveller.shift(4)
        assert storage_status() == "failing"  # still within 5 s
        traveller.shift(2)
        assert storage_status() == "ok"  # failure expired: probed again
        s3.delete_bucket(Bucket=bucket)  # empty: the probe cleaned up after itself
        assert storage_status() == "ok"  # cached success
        traveller.shift(28)
        assert storage_status() == "ok"  # still within 30 s
        traveller.shift(3)
        assert storage_status() == "failing"  # success expired: probed again


@pytest.mark.slow
@pytest.mark.django_db
def test_storage_result_ttls_in_the_configured_cache(moto_endpoint: str, s3: Any) -> None:
    """With REDIS_URL, the cached result lives in Redis (shared by all web processes)."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        pytest.skip("configured cache is not Redis (set REDIS_URL); TTLs shown with time-machine")
    key = backend.make_and_validate_key(health.S3_CACHE_KEY)
    redis = backend._cache.get_client(key)

    bucket = new_bucket(s3)
    with s3_settings(moto_endpoint, bucket):
        assert APIClient().get(READY).status_code == 200
        assert 25 <= redis.ttl(key) <= 30
    with s3_settings(moto_endpoint, f"missing-{uuid.uuid4().hex[:12]}"):
        backend.delete(health.S3_CACHE_KEY)
        assert APIClient().get(READY).status_code == 503
        assert 1 <= redis.ttl(key) <= 5


# --- Real server processes -------------------------------------------------------------------


def server_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    dropped = ("HERALD_", "DATABASE_URL", "REDIS_URL", "AWS_", "SECRET_KEY", "ALLOWED_HOSTS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update({"HERALD_DATA_DIR": str(tmp_path / "data"), "HERALD_ENVIRONMENT": "local"})
    env.update(overrides)
    return env


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start gunicorn (as in production) with a controlled environment; return its base URL."""
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> str:
        port = free_port()
        log = (tmp_path / f"gunicorn-{port}.log").open("wb")
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
            ],
            cwd=ROOT,
            env=server_env(tmp_path, **env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(process)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            with contextlib.suppress(requests.RequestException):  # refused, or still booting
                requests.get(f"{base}{HEALTH}", timeout=2)
                return base
            time.sleep(0.1)
        log.flush()
        output = (tmp_path / f"gunicorn-{port}.log").read_text(errors="replace")
        pytest.fail(f"gunicorn did not start:\n{output[-3000:]}")

    try:
        yield start
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)


@pytest.mark.slow
def test_server_with_unreachable_database(run_server: Callable[..., str], tmp_path: Path) -> None:
    base = run_server(DATABASE_URL="postgres://postgres@127.0.0.1:1/herald")

    live = requests.get(f"{base}{HEALTH}", timeout=5)
    assert live.status_code == 200
    body = live.json()
    assert body == {"$schema": body["$schema"], "status": "ok", "version": body["version"]}
    assert body["version"]["release"] == RELEASE

    started = time.monotonic()
    ready = requests.get(f"{base}{READY}", timeout=10)
    assert time.monotonic() - started < SERVER_DB_TIMEOUT + 2
    assert_dependency_problem(ready, ["database"])
    assert "storage" not in ready.json()["failing"]

    # Liveness keeps answering while the database stays down: no restart loop.
    assert requests.get(f"{base}{HEALTH}", timeout=5).status_code == 200

    # API requests that need the database are a 503 problem naming it, never a 500, and the
    # server does not log a traceback per request.
    token = "hrld_0123abcd_" + "x" * 43
    for _ in range(3):
        answer = requests.get(
            f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        assert_dependency_problem(answer, ["database"], instance="/api/v1/me")
        assert answer.headers["Retry-After"] == "5"
    logs = "".join(log.read_text(errors="replace") for log in tmp_path.glob("gunicorn-*.log"))
    assert "Traceback" not in logs, logs[-3000:]


@pytest.mark.slow
def test_server_with_s3_configured_from_the_environment(
    run_server: Callable[..., str], moto_endpoint: str, s3: Any, tmp_path: Path
) -> None:
    bucket = new_bucket(s3, versioned=True)
    base = run_server(
        DATABASE_URL=f"sqlite:///{tmp_path / 'ready.sqlite3'}",
        HERALD_S3_BUCKET=bucket,
        HERALD_S3_ENDPOINT_URL=moto_endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        HERALD_S3_CHECK_TIMEOUT_SECONDS="15",  # generous: the first boto3 client is slow to build
    )
    ready = requests.get(f"{base}{READY}", timeout=10)
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body == {
        "$schema": body["$schema"],
        "status": "ready",
        "database": "ok",
        "storage": "ok",
    }
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    assert len(s3.list_object_versions(Bucket=bucket).get("DeleteMarkers", [])) == 1

    # The success is cached: a second call within 30 s does not write another object.
    assert requests.get(f"{base}{READY}", timeout=10).status_code == 200
    assert len(s3.list_object_versions(Bucket=bucket).get("Versions", [])) == 1
