"""PROVIDER_OAUTH_APPS comes from the environment: client id and secret with
``_FILE`` variants, URLs defaulting to the real services and overridable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

PRINT_APPS = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.PROVIDER_OAUTH_APPS))"
)


def _apps(env: dict[str, str], tmp_path: Path) -> dict[str, dict[str, str]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "DATABASE_URL"))}
    base.update({"DJANGO_SETTINGS_MODULE": "config.settings", "HERALD_DATA_DIR": str(tmp_path)})
    out = subprocess.run(
        [sys.executable, "-c", PRINT_APPS],
        env={**base, **env},
        cwd=str(settings.BASE_DIR),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    apps: dict[str, dict[str, str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return apps


EXPECTED_X = {
    "client_id": "",
    "client_secret": "",
    "api_url": "https://api.x.com",
    "authorize_url": "https://x.com/i/oauth2/authorize",
    "token_url": "https://api.x.com/2/oauth2/token",
    "revoke_url": "https://api.x.com/2/oauth2/revoke",
}


def test_provider_apps_default_to_the_real_services_unconfigured(tmp_path: Path) -> None:
    apps = _apps({}, tmp_path)

    assert {key: apps["x"][key] for key in EXPECTED_X} == EXPECTED_X
    assert apps["linkedin"]["authorize_url"] == "https://www.linkedin.com/oauth/v2/authorization"
    assert apps["linkedin"]["token_url"] == "https://www.linkedin.com/oauth/v2/accessToken"
    assert apps["linkedin"]["api_url"] == "https://api.linkedin.com"
    assert apps["threads"]["authorize_url"] == "https://threads.net/oauth/authorize"
    assert apps["threads"]["api_url"] == "https://graph.threads.net"


def test_provider_apps_read_secrets_from_files_and_overridden_urls(tmp_path: Path) -> None:
    secret = tmp_path / "x_secret"
    secret.write_text("from-a-file\n", encoding="utf-8")

    apps = _apps(
        {
            "HERALD_X_CLIENT_ID": "herald-x",
            "HERALD_X_CLIENT_SECRET_FILE": str(secret),
            "HERALD_X_API_URL": "http://127.0.0.1:9999/",
            "HERALD_THREADS_CLIENT_ID": "t",
            "HERALD_THREADS_CLIENT_SECRET": "u",
            "HERALD_LINKEDIN_AUTHORIZE_URL": "http://127.0.0.1:9998/oauth/v2/authorization",
        },
        tmp_path,
    )

    assert apps["x"]["client_id"] == "herald-x"
    assert apps["x"]["client_secret"] == "from-a-file"
    assert apps["x"]["api_url"] == "http://127.0.0.1:9999"
    assert apps["x"]["token_url"] == "http://127.0.0.1:9999/2/oauth2/token"
    assert (apps["threads"]["client_id"], apps["threads"]["client_secret"]) == ("t", "u")
    assert apps["linkedin"]["authorize_url"] == "http://127.0.0.1:9998/oauth/v2/authorization"
    assert apps["linkedin"]["token_url"] == "https://www.linkedin.com/oauth/v2/accessToken"
