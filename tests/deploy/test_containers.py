"""Static checks of the container files (Dockerfile, docker-compose.yml, docker/*).

No Docker engine is needed: the files are parsed and their key properties asserted, and the
health-check script is exercised against a throwaway HTTP server on 127.0.0.1. The rules:
container health checks use the
liveness probe only, readiness failures must never restart anything.
"""

from __future__ import annotations

import fnmatch
import http.server
import json
import os
import runpy
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shipped_support import dockerfile_instructions, stages

ROOT = Path(__file__).resolve().parents[2]
LIVENESS = "/api/v1/health"
READINESS = "/api/v1/ready"
APP_SERVICES = ("web", "worker", "beat", "migrate")
REQUIRED_APP_ENV = (
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "HERALD_ENVIRONMENT",
    "ALLOWED_HOSTS",
    "HERALD_PUBLIC_URL",
    "HERALD_CREDENTIALS_KEY",
)


# --- Dockerfile ----------------------------------------------------------------------------


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list), f"exec form expected: {arguments!r}"
    return [str(item) for item in value]


def test_dockerfile_is_multi_stage_on_python_311_slim() -> None:
    all_stages = stages()
    assert len(all_stages) >= 2
    names = [name for _, name, _ in all_stages]
    assert "builder" in names
    runtime_image, _, runtime = all_stages[-1]
    assert runtime_image == "python:3.11-slim"
    # The runtime stage takes only the built environment from the builder, not the sources.
    copies_from_builder = [
        args for keyword, args in runtime if keyword == "COPY" and "--from=builder" in args
    ]
    assert copies_from_builder
    assert all("/opt/venv" in args for args in copies_from_builder)
    assert not any(keyword == "COPY" and args.startswith(". ") for keyword, args in runtime)


def test_builder_installs_the_project_from_wheels() -> None:
    _, _, builder = stages()[0]
    runs = " ".join(args for keyword, args in builder if keyword == "RUN")
    assert "pip wheel" in runs
    assert "--no-index" in runs


def test_runtime_runs_as_a_non_root_user() -> None:
    _, _, runtime = stages()[-1]
    users = [args for keyword, args in runtime if keyword == "USER"]
    assert users, "the runtime stage sets USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    # Every instruction that starts a process at run time comes after the USER switch.
    last_user = max(i for i, (keyword, _) in enumerate(runtime) if keyword == "USER")
    for keyword in ("CMD", "ENTRYPOINT", "HEALTHCHECK"):
        positions = [i for i, (k, _) in enumerate(runtime) if k == keyword]
        assert all(i > last_user for i in positions), keyword


def test_healthcheck_uses_liveness_never_readiness() -> None:
    _, _, runtime = stages()[-1]
    checks = [args for keyword, args in runtime if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    assert LIVENESS in checks[0]
    assert READINESS not in checks[0]
    assert "curl" not in checks[0]
    assert "wget" not in checks[0]
    command = exec_form(checks[0].split("CMD", 1)[1].strip())
    assert command[0] == "python"
    assert command[1] == "/app/healthcheck.py"


def test_default_command_is_gunicorn_on_all_interfaces() -> None:
    _, _, runtime = stages()[-1]
    commands = [exec_form(args) for keyword, args in runtime if keyword == "CMD"]
    assert commands
    command = commands[-1]
    assert command[0] == "gunicorn"
    assert "0.0.0.0:8000" in command
    assert "config.wsgi:application" in command
    assert "/app/gunicorn.conf.py" in command


def test_static_files_are_collected_at_build_time_without_baking_a_secret() -> None:
    _, _, runtime = stages()[-1]
    runs = [args for keyword, args in runtime if keyword == "RUN"]
    collect = [args for args in runs if "collectstatic" in args]
    assert len(collect) == 1
    assert "SECRET_KEY=" in collect[0]
    envs = " ".join(args for keyword, args in runtime if keyword in ("ENV", "ARG"))
    assert "SECRET_KEY" not in envs, "a secret must never be an image ENV/ARG"
    assert "DJANGO_SETTINGS_MODULE=config.settings" in envs
    assert "HERALD_ENVIRONMENT=production" in envs


def test_files_copied_into_the_image_exist() -> None:
    for keyword, arguments in dockerfile_instructions():
        if keyword != "COPY" or "--from=" in arguments:
            continue
        *sources, _destination = arguments.split()
        for source in sources:
            if source != ".":
                assert (ROOT / source).exists(), source


def test_dockerignore_keeps_secrets_and_local_state_out() -> None:
    entries = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for required in (".env", ".venv", ".data", ".git"):
        assert required in entries
    assert "docker" not in entries  # gunicorn.conf.py and healthcheck.py are copied from it


def test_wheel_carries_every_runtime_file_of_the_packages() -> None:
    """The image installs the wheel, so non-Python files must match package-data patterns."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    includes = setuptools["packages"]["find"]["include"]
    patterns = [p for values in setuptools.get("package-data", {}).values() for p in values]
    missing = []
    for top in sorted(p.rstrip("*") for p in includes):
        package = ROOT / top
        if not package.is_dir():
            continue
        for path in package.rglob("*"):
            relative = path.relative_to(ROOT)
            if path.is_dir() or {"__pycache__", "tests"} & set(relative.parts):
                continue
            if path.suffix in (".py", ".pyc", ".pyi"):
                continue
            if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
                missing.append(str(relative))
    assert not missing, f"not in the wheel (add to [tool.setuptools.package-data]): {missing}"


# --- docker-compose.yml --------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def healthcheck_text(service: dict[str, Any]) -> str:
    test = service.get("healthcheck", {}).get("test", "")
    return " ".join(test) if isinstance(test, list) else str(test)


def test_image_build_requires_the_source_revision() -> None:
    """Certification runs record the image's revision: the build refuses to go without it
    (compose's side: tests/deploy/test_shipped_package.py)."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    runtime = dockerfile.split("AS runtime", 1)[1]
    assert 'ARG HERALD_SOURCE_REVISION=""' in runtime
    assert 'RUN test -n "${HERALD_SOURCE_REVISION}"' in runtime
    assert "ENV HERALD_SOURCE_REVISION=${HERALD_SOURCE_REVISION}" in runtime
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert '--build-arg HERALD_SOURCE_REVISION="$$(git rev-parse HEAD)"' in makefile


def test_compose_has_the_services(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) >= {"web", "worker", "beat", "postgres", "redis", "migrate"}
    assert compose["services"]["postgres"]["image"].startswith("postgres:16")
    assert compose["services"]["redis"]["image"].startswith("redis:7")


def test_compose_restart_policies(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if name == "migrate":
            assert service["restart"] == "no", "the one-shot migration must not loop"
        else:
            assert service["restart"] == "unless-stopped", name


def test_compose_health_checks_use_liveness_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert READINESS not in healthcheck_text(service), name
        assert "/ready" not in healthcheck_text(service), name
    web = compose["services"]["web"]
    assert LIVENESS in healthcheck_text(web)
    assert "healthcheck.py" in healthcheck_text(web)
    # Worker and beat have no HTTP probe; they must not inherit the image's web health check.
    for name in ("worker", "beat", "migrate"):
        service = compose["services"][name]
        assert service["healthcheck"].get("disable") is True or LIVENESS not in healthcheck_text(
            service
        ), name
    assert "pg_isready" in healthcheck_text(compose["services"]["postgres"])
    assert "redis-cli ping" in healthcheck_text(compose["services"]["redis"])


def test_compose_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    web = services["web"]["depends_on"]
    assert web["postgres"]["condition"] == "service_healthy"
    assert web["migrate"]["condition"] == "service_completed_successfully"
    assert services["worker"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["command"][:2] == ["django-admin", "migrate"]


def test_compose_app_environment(compose: dict[str, Any]) -> None:
    for name in APP_SERVICES:
        environment = compose["services"][name]["environment"]
        for variable in REQUIRED_APP_ENV:
            assert variable in environment, (name, variable)
        # Secrets come from .env / the shell and are required, never defaulted in the file.
        assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")
        assert environment["HERALD_CREDENTIALS_KEY"].startswith("${HERALD_CREDENTIALS_KEY:?")
        assert environment["DATABASE_URL"].startswith("postgres://")
        assert "@postgres:5432/" in environment["DATABASE_URL"]
        assert environment["REDIS_URL"].startswith("redis://redis:6379/")
        # The web port is meant to sit behind one reverse proxy: count its clients, not it.
        assert environment["HERALD_NUM_PROXIES"] == "${HERALD_NUM_PROXIES:-1}"


def test_compose_celery_roles(compose: dict[str, Any]) -> None:
    services = compose["services"]
    worker = " ".join(services["worker"]["command"])
    assert worker.startswith("celery -A config worker")
    beat_command = services["beat"]["command"]
    assert " ".join(beat_command).startswith("celery -A config beat")
    schedule = beat_command[beat_command.index("--schedule") + 1]
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in services["beat"]["volumes"]}
    directory = str(Path(schedule).parent)
    assert directory in mounts, "the beat schedule lives on a volume"
    assert mounts[directory] in compose["volumes"], "a named volume (writable, persistent)"


# --- docker/gunicorn.conf.py ---------------------------------------------------------------


def test_gunicorn_settings_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(ROOT / "docker" / "gunicorn.conf.py")
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    monkeypatch.setenv("HERALD_WEB_THREADS", "1")
    settings = runpy.run_path(path)
    assert settings["workers"] == 3
    assert settings["worker_class"] == "sync"
    monkeypatch.setenv("HERALD_WEB_THREADS", "8")
    settings = runpy.run_path(path)
    assert (settings["worker_class"], settings["threads"]) == ("gthread", 8)


_GC_PROBE = """
import gc, json, runpy, sys
before = gc.get_threshold()
settings = runpy.run_path(sys.argv[1])
settings["post_worker_init"](None)
print(json.dumps([before, gc.get_threshold(), gc.get_freeze_count()]))
"""


@pytest.mark.parametrize(("gen0", "frozen"), [("", True), ("5000", True), ("0", False)])
def test_gunicorn_workers_tune_garbage_collection(gen0: str, frozen: bool) -> None:
    """After loading the application a worker freezes its boot-time heap and collects young
    garbage less often (HERALD_WEB_GC_GEN0, default 10000); 0 leaves Python's collector as is.
    Run in a child interpreter: freezing is process-wide."""
    env = {key: value for key, value in os.environ.items() if key != "HERALD_WEB_GC_GEN0"}
    if gen0:
        env["HERALD_WEB_GC_GEN0"] = gen0
    result = subprocess.run(
        [sys.executable, "-c", _GC_PROBE, str(ROOT / "docker" / "gunicorn.conf.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    before, after, frozen_objects = json.loads(result.stdout)
    if frozen:
        assert after == [int(gen0 or 10000), *before[1:]]
        assert frozen_objects > 0
    else:
        assert (after, frozen_objects) == (before, 0)


# --- docker/healthcheck.py -----------------------------------------------------------------


class _ProbeHandler(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b'{"status": "ok"}'
    hosts: list[str] = []

    def do_GET(self) -> None:
        type(self).hosts.append(self.headers.get("Host", ""))
        self.send_response(self.status)
        if self.status in (301, 302):
            self.send_header("Location", "https://example.invalid/api/v1/health")
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def probe_server() -> Iterator[tuple[str, type[_ProbeHandler]]]:
    handler = type("Handler", (_ProbeHandler,), {"hosts": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits up to one poll interval: 10 ms, not the default 0.5 s
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{LIVENESS}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def healthcheck(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name in ("ALLOWED_HOSTS", "ALLOWED_HOSTS_FILE", "HERALD_ENVIRONMENT", "HERALD_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("HERALD_PUBLIC_URL_FILE", raising=False)
    return runpy.run_path(str(ROOT / "docker" / "healthcheck.py"))


def test_healthcheck_passes_on_ok(
    healthcheck: dict[str, Any], probe_server: tuple[str, type[_ProbeHandler]]
) -> None:
    url, _ = probe_server
    assert healthcheck["main"](["healthcheck.py", url]) == 0


@pytest.mark.parametrize(
    ("status", "body"),
    [(503, b'{"status": "down"}'), (200, b'{"status": "nope"}'), (301, b"{}"), (200, b"<html>")],
)
def test_healthcheck_fails_otherwise(
    healthcheck: dict[str, Any],
    probe_server: tuple[str, type[_ProbeHandler]],
    status: int,
    body: bytes,
) -> None:
    url, handler = probe_server
    handler.status, handler.body = status, body
    assert healthcheck["main"](["healthcheck.py", url]) == 1


def test_healthcheck_fails_when_nothing_listens(healthcheck: dict[str, Any]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert healthcheck["main"](["healthcheck.py", f"http://127.0.0.1:{port}{LIVENESS}"]) == 1


def test_healthcheck_sends_an_allowed_host(
    healthcheck: dict[str, Any],
    probe_server: tuple[str, type[_ProbeHandler]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, handler = probe_server
    monkeypatch.setenv("HERALD_ENVIRONMENT", "production")
    monkeypatch.setenv("HERALD_PUBLIC_URL", "https://herald.example.com")
    assert healthcheck["main"](["healthcheck.py", url]) == 0
    monkeypatch.setenv("ALLOWED_HOSTS", "*, .example.org, other.example.net")
    assert healthcheck["main"](["healthcheck.py", url]) == 0
    assert handler.hosts == ["herald.example.com", "example.org"]
    monkeypatch.setenv("HERALD_ENVIRONMENT", "local")
    monkeypatch.delenv("ALLOWED_HOSTS")
    assert healthcheck["probe_host"]() is None
