"""A wrong HERALD_CREDENTIALS_KEY is caught at start, not when an account is next used.

Credentials are stored under one key; the instance then runs with another (a key generated anew,
a restored database without its key). The system check ``herald.E001`` (run by ``migrate``
before the processes start, and by ``check --deploy``) and ``/ready`` say that no configured key
opens them. With the right key, or a rotation in progress (new key first, old key second), both
are quiet, and the ready body is unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core import checks
from rest_framework.test import APIClient

from tests.problem_asserts import assert_problem
from tests.publishing_support import make_account
from tests.upgrades_support import ROOT, manage, process_env

pytestmark = pytest.mark.django_db(transaction=True)

STORED_KEY = Fernet.generate_key().decode()
OTHER_KEY = Fernet.generate_key().decode()


@pytest.fixture
def stored(settings: Any, workspace: Any) -> None:
    """An account (and its Mastodon app) encrypted under STORED_KEY."""
    settings.HERALD_CREDENTIALS_KEY = STORED_KEY
    make_account(workspace, "mastodon")


def herald_errors(**kwargs: Any) -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(**kwargs) if m.id == "herald.E001"]


def test_the_wrong_key_fails_the_start_checks_and_ready(stored: None, settings: Any) -> None:
    settings.HERALD_CREDENTIALS_KEY = OTHER_KEY

    for found in (
        herald_errors(databases=["default"]),  # what migrate runs
        herald_errors(include_deployment_checks=True),  # check --deploy
    ):
        assert len(found) == 1
        assert found[0].level == checks.ERROR
        assert "HERALD_CREDENTIALS_KEY" in found[0].msg

    response = APIClient().get("/api/v1/ready")
    body = assert_problem(response, 503, "dependency_unavailable")
    assert body["failing"] == ["credentials"]
    assert "HERALD_CREDENTIALS_KEY opens none of the stored" in body["detail"]


@pytest.mark.parametrize("keys", [STORED_KEY, f"{OTHER_KEY},{STORED_KEY}"], ids=["key", "rotation"])
def test_the_right_key_or_a_rotation_passes(stored: None, settings: Any, keys: str) -> None:
    settings.HERALD_CREDENTIALS_KEY = keys
    assert herald_errors(databases=["default"]) == []
    assert herald_errors(include_deployment_checks=True) == []
    response = APIClient().get("/api/v1/ready")
    assert response.status_code == 200, response.content
    assert "credentials" not in response.json()


def test_nothing_stored_passes(settings: Any) -> None:
    settings.HERALD_CREDENTIALS_KEY = OTHER_KEY
    assert herald_errors(databases=["default"]) == []
    assert APIClient().get("/api/v1/ready").status_code == 200


@pytest.mark.slow
def test_migrate_refuses_to_start_with_the_wrong_key(tmp_path: Path) -> None:
    """``migrate`` is what compose's ``migrate`` service and ``make run`` run before starting
    the processes: with the wrong key it stops there, naming the problem."""
    data = tmp_path / "data"
    env = process_env(data, None, HERALD_CREDENTIALS_KEY=STORED_KEY)
    manage(ROOT, env, "migrate", "--noinput")
    manage(
        ROOT,
        env,
        "shell",
        "-c",
        "from providers import credentials; from publishing.models import ProviderApp; "
        "ProviderApp.objects.create(provider='mastodon', instance_url='https://m.example', "
        "redirect_uri='', credentials_encrypted=credentials.encrypt({'client_id': 'c'}))",
    )
    refused = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env={**env, "HERALD_CREDENTIALS_KEY": OTHER_KEY},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0
    assert "herald.E001" in refused.stderr
    assert "No key in HERALD_CREDENTIALS_KEY opens the stored provider credentials" in (
        refused.stderr
    )
    manage(ROOT, env, "migrate", "--noinput")  # the right key: starts again
