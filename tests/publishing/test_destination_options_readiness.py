"""Destination options are a provider call under readiness: an operator's disable refuses the
lookup, and unreadable ledgers refuse it too (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError

from readiness import ledgers
from tests.readiness_support import make_account

pytestmark = pytest.mark.django_db


def _options(client: Any, account: Any) -> Any:
    return client.get(
        f"/api/v1/accounts/{account.pk}/destination-options?region_code=US&language=en"
    )


@pytest.fixture
def account(workspace: Any) -> Any:
    return make_account(workspace, "bluesky")


def test_a_ready_account_gets_its_options(owner_client: Any, account: Any) -> None:
    response = _options(owner_client, account)
    assert response.status_code == 200, response.content
    assert response.json()["options"]["language"]


def test_an_environment_disable_refuses_the_lookup(
    owner_client: Any, account: Any, settings: Any
) -> None:
    settings.HERALD_DISABLED_PROVIDERS = ["bluesky"]
    response = _options(owner_client, account)
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "readiness_blocked"
    assert [b["code"] for b in body["decision"]["blockers"]] == ["provider_disabled"]


def test_a_ledger_disable_refuses_the_lookup(
    owner_client: Any, account: Any, admin_user: Any
) -> None:
    ledgers.runtime_control_append(
        operator=admin_user, provider="bluesky", mode="disabled", reason="incident"
    )
    response = _options(owner_client, account)
    assert response.status_code == 409, response.content
    assert "control_disabled" in {b["code"] for b in response.json()["decision"]["blockers"]}


def test_a_disable_of_one_format_leaves_the_others(
    owner_client: Any, account: Any, admin_user: Any
) -> None:
    """Options serve every format of the account: they stay while some format may publish."""
    ledgers.runtime_control_append(
        operator=admin_user,
        provider="bluesky",
        operation="publish_scheduled",
        mode="disabled",
        reason="scheduler incident",
    )
    assert _options(owner_client, account).status_code == 200


def test_unreadable_ledgers_refuse_the_lookup(
    owner_client: Any, account: Any, monkeypatch: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("ledger offline")  # the database, the edge of this process

    monkeypatch.setattr("readiness.evidence._fetch", broken)
    response = _options(owner_client, account)
    assert response.status_code == 409, response.content
    assert [b["code"] for b in response.json()["decision"]["blockers"]] == ["readiness_unavailable"]
