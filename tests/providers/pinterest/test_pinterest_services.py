"""Pinterest through Herald's services and API: connect through the lifecycle, the boards and
sections as the account's destination options, and disconnect (Pinterest has no revoke
endpoint: the tokens are forgotten and nothing is called)."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from publishing.models import Account
from publishing.services.accounts import account_disconnect
from tests.providers.pinterest.standin import PinterestStandIn
from tests.publishing_support import connect_with_services
from workspaces.access import Actor

API = "/api/v1"


def test_connect_options_and_disconnect(
    server: PinterestStandIn, owner_client: APIClient, user: Any, workspace: Any
) -> None:
    actor = Actor(user=user)
    account = connect_with_services(actor, workspace, "pinterest")
    assert account.provider == "pinterest"
    assert account.token_expires_at is not None
    answer = owner_client.get(f"{API}/accounts/{account.pk}/destination-options")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    text = str(body)
    assert "Recipes" in text
    assert "Recipes / Desserts" in text
    requests_before = server.requests
    account_disconnect(actor=actor, account_id=account.pk)
    assert server.requests == requests_before  # no revoke endpoint: nothing to call
    row = Account.objects.get(pk=account.pk)
    assert row.status != Account.Status.ACTIVE
