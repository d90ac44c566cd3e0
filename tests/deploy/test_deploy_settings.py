"""Deployment settings: every value comes from the environment, so each test runs
Django in a subprocess with a controlled environment and inspects the effective settings."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Evaluates the settings module once per scenario (it reads the environment at import time)
# in one subprocess: {name: {variable: value}} on stdin, {name: {setting: value}} on stdout.
MATRIX = """
import importlib, json, os, sys
base = dict(os.environ)
results = {}
for name, variables in json.loads(sys.stdin.read()).items():
    os.environ.clear()
    os.environ.update(base)
    os.environ.update(variables)
    import config.settings as s
    s = importlib.reload(s)
    db = s.DATABASES["default"]
    options = s.STORAGES["default"].get("OPTIONS", {})
    client_config = options.get("client_config")
    results[name] = {
        "ENGINE": db["ENGINE"],
        "CONN_MAX_AGE": db["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": db["CONN_HEALTH_CHECKS"],
        "DB_OPTIONS": db.get("OPTIONS", {}),
        "CACHE_BACKEND": s.CACHES["default"]["BACKEND"],
        "CACHE_LOCATION": s.CACHES["default"].get("LOCATION"),
        "CELERY_BROKER_URL": s.CELERY_BROKER_URL,
        "CELERY_VISIBILITY_TIMEOUT": s.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout"),
        "ALLOWED_HOSTS": s.ALLOWED_HOSTS,
        "CSRF_TRUSTED_ORIGINS": s.CSRF_TRUSTED_ORIGINS,
        "STORAGE_BACKEND": s.STORAGES["default"]["BACKEND"],
        "STORAGE_BUCKET": options.get("bucket_name"),
        "STORAGE_ENDPOINT": options.get("endpoint_url"),
        "S3_CONNECT_TIMEOUT": getattr(client_config, "connect_timeout", None),
        "S3_READ_TIMEOUT": getattr(client_config, "read_timeout", None),
        "S3_RETRIES": getattr(client_config, "retries", None),
        "S3_ADDRESSING": (getattr(client_config, "s3", None) or {}).get("addressing_style"),
        "S3_CHECK_TIMEOUT": s.HERALD_S3_CHECK_TIMEOUT_SECONDS,
        "SECURE_SSL_REDIRECT": s.SECURE_SSL_REDIRECT,
        "DEBUG": s.DEBUG,
    }
print(json.dumps(results))
"""


def controlled_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    """Only what a process needs to run, plus the variables under test: nothing inherited."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "HERALD_DATA_DIR": str(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    env.update(variables)
    return env


def run(
    tmp_path: Path, args: list[str], stdin: str | None = None, **variables: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        cwd=ROOT,
        env=controlled_env(tmp_path, **variables),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def production(**extra: str) -> dict[str, str]:
    return {
        "HERALD_ENVIRONMENT": "production",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "herald.example.com",
        "HERALD_PUBLIC_URL": "https://herald.example.com",
        "DATABASE_URL": "postgres://herald:secret@db.internal:5432/herald",
        "REDIS_URL": "redis://redis.internal:6379/0",
        "HERALD_CREDENTIALS_KEY": "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE=",
        "HERALD_S3_BUCKET": "herald-media",
        "HERALD_S3_ENDPOINT_URL": "https://s3.example.com",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "example-secret",
        "HERALD_TRUST_X_FORWARDED_PROTO": "true",
        **extra,
    }


# --- manage.py check --deploy ----------------------------------------------------------------

CHECK_DEPLOY = ["manage.py", "check", "--deploy", "--fail-level", "WARNING"]


def test_check_deploy_is_clean_in_production(tmp_path: Path) -> None:
    result = run(tmp_path, CHECK_DEPLOY, **production())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_is_clean_in_staging_with_the_secret_key_in_a_mounted_file(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "secret"
    key_file.write_text(secrets.token_urlsafe(64) + "\n", encoding="utf-8")
    variables = production(HERALD_ENVIRONMENT="staging", SECRET_KEY_FILE=str(key_file))
    del variables["SECRET_KEY"]
    result = run(tmp_path, CHECK_DEPLOY, **variables)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_does_flag_a_weak_secret_key(tmp_path: Path) -> None:
    """Control: the deploy check is live, so the clean results above mean something."""
    result = run(tmp_path, CHECK_DEPLOY, **production(SECRET_KEY="short"))
    assert result.returncode != 0
    assert "security.W009" in result.stdout + result.stderr


# --- SECRET_KEY ------------------------------------------------------------------------------


@pytest.mark.parametrize("environment", ["production", "staging"])
def test_missing_secret_key_fails_loudly_outside_local(tmp_path: Path, environment: str) -> None:
    variables = production(HERALD_ENVIRONMENT=environment)
    del variables["SECRET_KEY"]
    result = run(tmp_path, ["manage.py", "check"], **variables)
    assert result.returncode != 0
    assert "SECRET_KEY must be set outside HERALD_ENVIRONMENT=local" in result.stderr
    assert not (tmp_path / "data" / "secret_key").exists()


def test_local_generates_and_keeps_a_secret_key(tmp_path: Path) -> None:
    snippet = "import config.settings as s; print(s.SECRET_KEY)"
    first = run(tmp_path, ["-c", snippet])
    second = run(tmp_path, ["-c", snippet])
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "data" / "secret_key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert first.stdout.strip() == second.stdout.strip() == key_file.read_text().strip()
    assert len(first.stdout.strip()) >= 50


def test_the_sqlite_database_is_owner_only_whichever_command_creates_it(tmp_path: Path) -> None:
    """`manage.py migrate` alone (not `make run`, which also sets umask 077), under umask 022."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.umask(0o022); os.execv(sys.executable, sys.argv[1:])",
            sys.executable,
            "manage.py",
            "migrate",
            "--no-input",
            "-v",
            "0",
        ],
        cwd=ROOT,
        env=controlled_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    files = sorted((tmp_path / "data").glob("herald.sqlite3*"))
    assert tmp_path / "data" / "herald.sqlite3" in files
    assert {path.name: path.stat().st_mode & 0o777 for path in files} == {
        path.name: 0o600 for path in files
    }


# --- Effective values ------------------------------------------------------------------------


def _without(variables: dict[str, str], *names: str) -> dict[str, str]:
    return {key: value for key, value in variables.items() if key not in names}


SCENARIOS = {
    "production": production(),
    "embedded": {},
    "no_allowed_hosts": _without(production(), "ALLOWED_HOSTS"),
    "two_hosts": production(ALLOWED_HOSTS="a.example, b.example"),
    "aws_s3": _without(production(), "HERALD_S3_ENDPOINT_URL"),
    "virtual_hosts": production(HERALD_S3_ADDRESSING_STYLE="virtual"),
    "check_timeout": production(HERALD_S3_CHECK_TIMEOUT_SECONDS="2.5"),
}


@pytest.fixture(scope="module")
def effective(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp_path = tmp_path_factory.mktemp("settings")
    result = run(tmp_path, ["-c", MATRIX], stdin=json.dumps(SCENARIOS))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_production_values(effective: dict[str, dict[str, Any]]) -> None:
    values = effective["production"]
    # PostgreSQL: persistent connections, checked before reuse, bounded connect.
    assert values["ENGINE"] == "django.db.backends.postgresql"
    assert values["CONN_MAX_AGE"] > 0
    assert values["CONN_HEALTH_CHECKS"] is True
    assert values["DB_OPTIONS"]["connect_timeout"] == 5
    # Redis: Celery broker and the shared cache (rate limits, readiness results).
    assert values["CACHE_BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert values["CACHE_LOCATION"] == "redis://redis.internal:6379/0"
    assert values["CELERY_BROKER_URL"] == "redis://redis.internal:6379/0"
    assert values["CELERY_VISIBILITY_TIMEOUT"] == 3600
    # S3: bounded botocore calls, path-style addressing for a custom endpoint.
    assert values["STORAGE_BACKEND"] == "storages.backends.s3.S3Storage"
    assert values["STORAGE_BUCKET"] == "herald-media"
    assert values["STORAGE_ENDPOINT"] == "https://s3.example.com"
    assert values["S3_CONNECT_TIMEOUT"] == 5
    assert values["S3_READ_TIMEOUT"] == 30
    assert values["S3_RETRIES"] == {"mode": "standard", "max_attempts": 3}
    assert values["S3_ADDRESSING"] == "path"
    assert values["S3_CHECK_TIMEOUT"] == 5.0
    assert effective["check_timeout"]["S3_CHECK_TIMEOUT"] == 2.5
    assert values["ALLOWED_HOSTS"] == ["herald.example.com"]
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["DEBUG"] is False


def test_embedded_default_values(effective: dict[str, dict[str, Any]]) -> None:
    values = effective["embedded"]
    assert values["ENGINE"] == "django.db.backends.sqlite3"
    assert values["CONN_MAX_AGE"] == 0
    assert values["CACHE_BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    assert values["CELERY_BROKER_URL"] == "filesystem://"
    assert values["STORAGE_BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert values["S3_CONNECT_TIMEOUT"] is None
    assert values["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]", "testserver"]
    assert values["SECURE_SSL_REDIRECT"] is False


def test_public_url_is_the_default_host_and_trusted_origin_outside_local(
    effective: dict[str, dict[str, Any]],
) -> None:
    assert effective["no_allowed_hosts"]["ALLOWED_HOSTS"] == ["herald.example.com"]
    assert effective["no_allowed_hosts"]["CSRF_TRUSTED_ORIGINS"] == ["https://herald.example.com"]
    assert effective["two_hosts"]["ALLOWED_HOSTS"] == ["a.example", "b.example"]


def test_s3_addressing_style_is_auto_on_aws_and_configurable(
    effective: dict[str, dict[str, Any]],
) -> None:
    assert effective["aws_s3"]["S3_ADDRESSING"] == "auto"
    assert effective["aws_s3"]["STORAGE_ENDPOINT"] is None
    assert effective["virtual_hosts"]["S3_ADDRESSING"] == "virtual"


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def test_redis_url_drives_the_cache_and_the_celery_broker(tmp_path: Path) -> None:
    if not _reachable("127.0.0.1", 6379):
        pytest.skip("no Redis on 127.0.0.1:6379")
    snippet = (
        "import django, uuid; django.setup(); from django.core.cache import caches; "
        "from config.celery import app; "
        "cache = caches['default']; key = 'deploy-test:' + uuid.uuid4().hex; "
        "cache.set(key, 'v', 5); print(type(cache).__name__, cache.get(key), app.conf.broker_url); "
        "cache.delete(key)"
    )
    result = run(tmp_path, ["-c", snippet], REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["RedisCache", "v", "redis://127.0.0.1:6379/0"]
