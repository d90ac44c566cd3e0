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
def test_a_client_over_its_failure_budget_is_refused_even_with_a_valid_token(
    owner_client: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    monkeypatch.setattr(throttling.UserRateThrottle, "THROTTLE_RATES", {"user": "5/min"})
    good = owner_client._credentials["HTTP_AUTHORIZATION"]
    owner_client.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    assert [owner_client.get("/api/v1/me").status_code for _ in range(3)] == [401, 401, 429]
    owner_client.credentials(HTTP_AUTHORIZATION=good)
    refused = owner_client.get("/api/v1/me")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # Refused requests were not counted against the user's API rate: 5 still pass next minute.
    with time_machine.travel("2030-01-01 12:01:05+00:00", tick=False):
        assert [owner_client.get("/api/v1/me").status_code for _ in range(6)] == [200] * 5 + [429]
