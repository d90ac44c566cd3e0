"""Readiness of TikTok: an app the operator marks as not audited by TikTok
(``HERALD_TIKTOK_AUDITED=false``, the default) is reported ``trial_only`` (private posts
only); once audited the gap is gone."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from tests.providers.tiktok.standin import TikTokStandIn
from tests.publishing_support import API, ok


def _entry(owner_client: APIClient, workspace: Any) -> dict[str, Any]:
    body = ok(owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}))
    (entry,) = [e for e in body["providers"] if e["provider"] == "tiktok"]
    return entry


def _codes(entry: dict[str, Any]) -> list[str]:
    return [issue["code"] for issue in entry["blocking_issues"]]


def test_an_unaudited_app_is_trial_only_and_an_audited_one_is_not(
    owner_client: APIClient, workspace: Any, settings: Any, server: TikTokStandIn
) -> None:
    settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = True
    settings.HERALD_DEPLOYMENT = "cloud"
    entry = _entry(owner_client, workspace)
    assert "approval_trial" in _codes(entry)  # the trial_only blocker
    assert entry["facts"]["approval"]["app_audited"] is False
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "tiktok": server.app_settings(audited=True),
    }
    entry = _entry(owner_client, workspace)
    assert "approval_trial" not in _codes(entry)
    assert "app_audited" not in entry["facts"]["approval"]
    settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = False
    settings.HERALD_DEPLOYMENT = "self_hosted"
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "tiktok": server.app_settings(audited=False),
    }
    entry = _entry(owner_client, workspace)  # not enforced: visible in the facts only
    assert entry["facts"]["approval"]["app_audited"] is False
