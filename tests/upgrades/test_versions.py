"""Herald says which release it is, in the three places an operator looks after an upgrade:
``GET /api/v1/health``, ``herald instance diagnostics`` (tests/cli/test_cli_diagnostics.py) and
every admin page; the package and CHANGELOG.md agree with it."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from django.test import Client

from config.version import RELEASE
from tests.upgrades_support import CHANGELOG, ROOT
from workspaces.models import User


def test_the_release_is_written_once_and_the_package_carries_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "config.version.RELEASE"}
    assert metadata.version("herald") == RELEASE
    assert re.fullmatch(r"\d+\.\d+\.\d+", RELEASE)
    assert RELEASE != "0.1.0", "the previous release was 0.1.0"


def test_the_changelog_describes_this_release() -> None:
    text = CHANGELOG.read_text()
    assert re.search(rf"^## {re.escape(RELEASE)} ", text, re.MULTILINE), "a section per release"
    for heading in ("Migrations", "Changed settings", "Upgrade notes"):
        assert f"### {heading}" in text


def test_health_reports_the_release_and_the_source_revision(client: Client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.HERALD_SOURCE_REVISION = "0123456789abcdef0123456789abcdef01234567"
    response = client.get("/api/v1/health")
    assert response.status_code == 200
    assert response.json()["version"] == {
        "release": RELEASE,
        "source_revision": "0123456789abcdef0123456789abcdef01234567",
    }
    assert response.json()["status"] == "ok"


@pytest.mark.django_db
def test_every_admin_page_names_the_release(client: Client) -> None:
    from config.version import source_revision

    root = User.objects.create_user("root@example.com", "pw-0123456789-root")
    User.objects.filter(pk=root.pk).update(is_staff=True, is_superuser=True)
    client.force_login(root)
    for page in ("/admin/", "/admin/workspaces/plan/"):
        response = client.get(page)
        assert response.status_code == 200, page
        text = response.content.decode()
        assert f"{RELEASE} (source {source_revision()[:12]})" in text, page
