"""The package as it ships: the wheel the Dockerfile installs must hold every
first-party app of ``INSTALLED_APPS`` with its templates, static files, JSON data and migrations,
and must run on its own.

The fast tests compare pyproject's package list and package-data patterns with the apps Django
loads. The ``slow`` test builds the wheel from the Docker build context, installs it into a new
virtual environment outside the checkout (tests/shipped_support.py) and, from an empty folder,
runs what the image runs: ``django-admin check``, ``migrate``, ``collectstatic`` and gunicorn with
docker/gunicorn.conf.py, serving the liveness probe, the API docs and a static asset of them.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
import requests
import yaml
from django.apps import apps

from tests.shipped_support import (
    GUNICORN_CONF,
    ROOT,
    installed_context,
    installed_env,
    installed_wheel,
    stages,
)

# Packages the wheel ships that are not Django apps: the provider adapters and the CLI.
NON_APP_PACKAGES = ("providers", "cli")
# Kinds of files an app may carry besides Python modules (templates, data, static/ assets).
DATA_FILE_SUFFIXES = (".html", ".txt", ".json", ".css", ".js", ".svg", ".png", ".woff2")


def pyproject_setuptools() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"])


def first_party_apps() -> list[str]:
    """Top-level packages of the INSTALLED_APPS that live in this checkout."""
    found: list[str] = []
    for app_config in apps.get_app_configs():
        top = app_config.name.split(".")[0]
        init = ROOT / top / "__init__.py"
        module_file = importlib.import_module(top).__file__
        if init.is_file() and module_file and Path(module_file).resolve() == init.resolve():
            found.append(top)
    return sorted(set(found))


def shipped_top_levels() -> list[str]:
    return sorted({*first_party_apps(), *NON_APP_PACKAGES})


def package_folders(top: str) -> list[str]:
    """Dotted names of ``top`` and of every folder below it that holds a file (each is a
    namespace package for setuptools' package finder, so each must be found)."""
    names = []
    for folder in [ROOT / top, *sorted((ROOT / top).rglob("*"))]:
        if not folder.is_dir() or "__pycache__" in folder.parts:
            continue
        if any(child.is_file() for child in folder.iterdir()):
            names.append(".".join(folder.relative_to(ROOT).parts))
    return names


def package_data_patterns() -> list[str]:
    data = pyproject_setuptools().get("package-data", {})
    assert isinstance(data, dict)
    return [pattern for values in data.values() for pattern in values]


# --- Fast checks of pyproject.toml against INSTALLED_APPS ----------------------------------


def test_first_party_apps_are_found() -> None:
    apps_found = first_party_apps()
    # The apps of this checkout, and none of the third-party ones installed in .venv.
    assert {"config", "workspaces", "publishing", "reposts"} <= set(apps_found)
    assert not {"rest_framework", "drf_spectacular", "django"} & set(apps_found)


def test_every_first_party_app_and_its_folders_are_packaged() -> None:
    from setuptools import find_namespace_packages

    setuptools = pyproject_setuptools()
    find = setuptools["packages"]
    assert isinstance(find, dict)
    options = find["find"]
    assert options.get("namespaces", True), "templates/ and static/ folders are namespace packages"
    found = set(find_namespace_packages(where=str(ROOT), include=options["include"]))
    missing = [
        name for top in shipped_top_levels() for name in package_folders(top) if name not in found
    ]
    assert not missing, (
        "first-party packages left out of the wheel: add them to "
        f"[tool.setuptools.packages.find] include in pyproject.toml: {missing}"
    )
    for top in first_party_apps():
        if (ROOT / top / "migrations").is_dir():
            assert f"{top}.migrations" in found


def test_package_data_covers_every_non_python_file_of_the_apps() -> None:
    patterns = package_data_patterns()
    for suffix in DATA_FILE_SUFFIXES:
        assert any(fnmatch.fnmatch(f"file{suffix}", p) for p in patterns), suffix
    missing = [
        path.relative_to(ROOT).as_posix()
        for top in shipped_top_levels()
        for path in (ROOT / top).rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in (".py", ".pyc")
        and not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)
    ]
    assert not missing, f"not in the wheel (add to [tool.setuptools.package-data]): {missing}"


# --- The source revision the image records -------------------------------------------------


def test_image_build_passes_the_source_revision() -> None:
    _, _, runtime = stages()[-1]
    args = [a.split("=", 1)[0].strip() for keyword, a in runtime if keyword == "ARG"]
    envs = " ".join(a for keyword, a in runtime if keyword == "ENV")
    assert "HERALD_SOURCE_REVISION" in args
    assert re.search(r"\bHERALD_SOURCE_REVISION=\$\{?HERALD_SOURCE_REVISION\}?", envs), envs
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    build = compose["x-app"]["build"]
    # Required (":?"): docker compose refuses to build an image that would record "unknown".
    assert build["args"]["HERALD_SOURCE_REVISION"].startswith("${HERALD_SOURCE_REVISION:?")
    for name in ("web", "worker", "beat", "migrate"):
        assert compose["services"][name]["build"] == build


def _source_revision_in_checkout(tmp_path: Path, revision: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("HERALD_SOURCE_REVISION", "PYTHONPATH")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", HERALD_DATA_DIR=str(tmp_path))
    if revision is not None:
        env["HERALD_SOURCE_REVISION"] = revision
    code = (
        "import django; django.setup(); "
        "from readiness.subjects import source_revision; print(source_revision())"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return completed.stdout.strip()


def test_source_revision_follows_the_environment_else_the_checkout(tmp_path: Path) -> None:
    assert _source_revision_in_checkout(tmp_path, "0123abc-built") == "0123abc-built"
    git = shutil.which("git")
    if not git or not (ROOT / ".git").exists():
        pytest.skip("no git checkout to compare with")
    head = subprocess.run(
        [git, "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert _source_revision_in_checkout(tmp_path, None) == head
    assert _source_revision_in_checkout(tmp_path, "") == head


# --- The installed wheel, outside the checkout ---------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Installed:
    """Runs commands of the installed environment from an empty folder."""

    def __init__(self, bin_dir: Path, workdir: Path) -> None:
        self.bin = bin_dir
        self.venv = bin_dir.parent.resolve()
        self.empty = workdir / "empty"
        self.empty.mkdir()
        self.data = workdir / "data"
        self.static = workdir / "static"
        self.app = workdir / "app"  # what the Dockerfile copies to /app
        self.app.mkdir()
        shutil.copy2(GUNICORN_CONF, self.app / "gunicorn.conf.py")
        self.port = free_port()
        # As in the image: production settings, here over plain HTTP on 127.0.0.1.
        self.env = installed_env(
            bin_dir,
            self.data,
            HERALD_ENVIRONMENT="production",
            SECRET_KEY=os.urandom(24).hex(),
            HERALD_PUBLIC_URL=f"http://127.0.0.1:{self.port}",
            HERALD_HTTPS="false",
            HERALD_STATIC_ROOT=str(self.static),
            WEB_CONCURRENCY="1",
            HERALD_WEB_THREADS="2",
        )
        self.env.pop("HERALD_SOURCE_REVISION", None)  # the test sets it where it wants it

    def run(self, *command: str, **extra_env: str) -> str:
        env = {**self.env, **extra_env}
        executable = str(self.bin / command[0])
        completed = subprocess.run(
            [executable, *command[1:]],
            cwd=self.empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, f"{' '.join(command)}:\n{output[-4000:]}"
        return completed.stdout


@pytest.fixture(scope="module")
def installed(installed_herald_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return Installed(installed_herald_bin, tmp_path_factory.mktemp("shipped"))


@pytest.mark.slow
def test_wheel_holds_every_file_of_the_shipped_packages(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed_wheel()).namelist())
    tops = shipped_top_levels()
    # The copy the wheel was built from (the checkout may have changed since).
    copied = installed_context()
    context = [
        p.relative_to(copied).as_posix()
        for p in sorted(copied.rglob("*"))
        if p.is_file() and p.relative_to(copied).parts[0] in tops
    ]
    assert any(name.startswith("reposts/migrations/") for name in context)
    missing = [name for name in context if name not in names]
    assert not missing, f"files of the build context left out of the wheel: {missing}"


@pytest.mark.slow
def test_installed_package_runs_outside_the_checkout(installed: Installed) -> None:
    # Every first-party app (and its migrations) imports from the new environment only.
    listing = installed.run(
        "python",
        "-c",
        "import django, importlib, json, sys; django.setup(); "
        "from django.apps import apps; "
        "files = {c.name: c.module.__file__ for c in apps.get_app_configs()}; "
        "files.update({c.name + '.migrations': importlib.import_module(c.name + '.migrations')"
        ".__file__ for c in apps.get_app_configs() if c.name in sys.argv[1:]}); "
        f"files.update({{n: importlib.import_module(n).__file__ for n in {NON_APP_PACKAGES!r}}}); "
        "from readiness.subjects import source_revision; "
        "print(json.dumps({'files': files, 'path': sys.path, 'revision': source_revision()}))",
        *[top for top in first_party_apps() if (ROOT / top / "migrations").is_dir()],
    )
    report = json.loads(listing)
    for top in shipped_top_levels():
        name = next(n for n in report["files"] if n.split(".")[0] == top)
        location = Path(report["files"][name]).resolve()
        assert location.is_relative_to(installed.venv), f"{name} imported from {location}"
    for top in first_party_apps():
        if (ROOT / top / "migrations").is_dir():
            location = Path(report["files"][f"{top}.migrations"]).resolve()
            assert location.is_relative_to(installed.venv), location
    root = ROOT.resolve()
    assert not [p for p in report["path"] if p and Path(p).resolve() == root]
    # The source revision comes from the image's environment (Dockerfile ARG/ENV); an installed
    # package has no .git to read it from.
    assert report["revision"] == "unknown"
    revision_code = (
        "import django; django.setup(); "
        "from readiness.subjects import source_revision; print(source_revision())"
    )
    shown = installed.run("python", "-c", revision_code, HERALD_SOURCE_REVISION="f00d")
    assert shown.strip() == "f00d"

    installed.run("django-admin", "check")
    migrated = installed.run("django-admin", "migrate", "--noinput")
    assert "Applying reposts." in migrated
    installed.run("django-admin", "collectstatic", "--noinput")
    assert any(installed.static.rglob("*.css"))

    server = subprocess.Popen(
        [
            str(installed.bin / "gunicorn"),
            "--config",
            str(installed.app / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{installed.port}",
            "config.wsgi:application",
        ],
        cwd=installed.empty,
        env=installed.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{installed.port}"
    try:
        health = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.poll() is None:
            try:
                health = requests.get(f"{base}/api/v1/health", timeout=30)
                break
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.2)
        assert health is not None, f"gunicorn did not answer (exit {server.poll()})"
        assert health.status_code == 200, health.text

        docs = requests.get(f"{base}/docs/", timeout=30)
        assert docs.status_code == 200, docs.text[:500]
        assets = re.findall(r"""["'](/static/[^"']+\.(?:css|js))["']""", docs.text)
        assert assets, "the docs page references its static assets"
        for asset in assets:
            served = requests.get(base + asset, timeout=30)
            assert served.status_code == 200, asset
            expected = "text/css" if asset.endswith(".css") else "javascript"
            assert expected in served.headers["Content-Type"], (asset, served.headers)
            assert (
                served.content == (installed.static / asset.removeprefix("/static/")).read_bytes()
            )
    finally:
        server.terminate()
        try:
            _, errors = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            _, errors = server.communicate()
    assert "Traceback" not in errors, errors[-4000:]
