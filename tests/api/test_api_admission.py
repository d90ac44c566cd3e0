"""The API rate limit and the failed-authentication budget of bearer requests."""

from __future__ import annotations

from typing import Any

import pytest
import time_machine

from config.api import throttling


def test_bearer_requests_count_once_against_the_api_rate(
    owner_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(throttling.UserRateThrottle, "THROTTLE_RATES", {"user": "3/min"})
    assert [owner_client.get("/api/v1/me").status_code for _ in range(4)] == [200, 200, 200, 429]


@time_machine.travel("2030-01-01 12:00:05+00:00", tick=False)
def test_a_valid_token_authenticates_while_its_address_is_refused_bad_tokens(
    owner_client: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: once the address had spent its budget of bad tokens, a valid token from it got
    429 too. A token's secret cannot be guessed: only bad tokens are throttled."""
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    monkeypatch.setattr(throttling.UserRateThrottle, "THROTTLE_RATES", {"user": "5/min"})
    good = owner_client._credentials["HTTP_AUTHORIZATION"]
    owner_client.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    assert [owner_client.get("/api/v1/me").status_code for _ in range(3)] == [401, 401, 429]
    refused = owner_client.get("/api/v1/me")
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    owner_client.credentials(HTTP_AUTHORIZATION=good)
    # The user's own API rate still applies: the bad tokens were not counted against it.
    assert [owner_client.get("/api/v1/me").status_code for _ in range(6)] == [200] * 5 + [429]
