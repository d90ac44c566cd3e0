"""The API rate limit and the failed-authentication budget share one Redis round trip per
authenticated bearer request (``UserRateThrottle.admit``); behaviour is as before."""

from __future__ import annotations

from typing import Any

import pytest
import time_machine

from config.api import throttling


def test_count_with_reading_reads_then_counts() -> None:
    assert throttling.count_with_reading("authfail:test", 3, "throttle:test:d", 60)[0] == 0
    reading, window = throttling.count_with_reading("authfail:test", 3, "throttle:test:d", 60)
    assert reading == 0
    assert window is not None
    assert window[0] == 2
    assert 0 < window[1] <= 60
    for _ in range(3):  # three failures, counted as the authentication class counts them
        throttling.window_hit("authfail:test", 60)
    assert throttling.count_with_reading("authfail:test", 3, "throttle:test:d", 60) == (3, None)
    # A request stopped by the reading was not counted.
    assert throttling.window_hit("throttle:test:d", 60)[0] == 3


def _count_redis_sends(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    import redis.connection

    sent: list[bytes] = []
    original = redis.connection.Connection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", counting)
    return sent


@pytest.mark.skipif(
    throttling.redis_client(throttling.caches["default"]) is None, reason="needs REDIS_URL"
)
def test_an_authenticated_bearer_request_costs_one_redis_round_trip(
    owner_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert owner_client.get("/api/v1/me").status_code == 200  # warm: the script is loaded
    sent = _count_redis_sends(monkeypatch)
    assert owner_client.get("/api/v1/me").status_code == 200
    assert len(sent) == 1, sent  # the failure budget and the API rate together
    assert b"EVALSHA" in sent[0]


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
