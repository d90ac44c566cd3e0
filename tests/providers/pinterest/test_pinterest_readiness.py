"""Readiness of Pinterest: an app without Standard access (``HERALD_PINTEREST_STANDARD_ACCESS``
false, the default: Trial access) is reported ``trial_only``; with Standard access the gap is
gone; and Pinterest is never advertisable, on a hosted deployment or a self-hosted one."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from tests.providers.pinterest.standin import PinterestStandIn
from tests.publishing_support import API, ok


def _entry(owner_client: APIClient, workspace: Any) -> dict[str, Any]:
    body = ok(owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}))
    (entry,) = [e for e in body["providers"] if e["provider"] == "pinterest"]
    return entry


def _codes(entry: dict[str, Any]) -> list[str]:
    return [issue["code"] for issue in entry["blocking_issues"]]


def test_trial_access_is_trial_only_and_pinterest_is_never_advertised(
    owner_client: APIClient, workspace: Any, settings: Any, server: PinterestStandIn
) -> None:
    settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = True
    settings.HERALD_DEPLOYMENT = "cloud"
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "pinterest": server.app_settings(standard_access=False),
    }
    entry = _entry(owner_client, workspace)
    assert "approval_trial" in _codes(entry)
    assert entry["facts"]["approval"]["app_audited"] is False
    assert entry["advertisable"] is False
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "pinterest": server.app_settings(standard_access=True),
    }
    entry = _entry(owner_client, workspace)
    assert "approval_trial" not in _codes(entry)
    assert entry["advertisable"] is False
    settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = False
    settings.HERALD_DEPLOYMENT = "self_hosted"
    entry = _entry(owner_client, workspace)
    assert entry["advertisable"] is False
    assert entry["state"] != "unsupported"
