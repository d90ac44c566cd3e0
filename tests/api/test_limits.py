"""Every limit's client address and store, and the failure budgets.

* One client address (``config.limits.client_ip``): ``HERALD_NUM_PROXIES`` trusted proxies, and
  ``X-Forwarded-For`` ignored (and logged once) when it is unset; an IPv6 client is its /64.
* The failure budgets (``workspaces.authentication``): bad bearer tokens per client address, a
  valid token always authenticates; passwords per (address, account), per account with
  back-off, per address for unknown accounts, shared by ``/login/``, ``/admin/login/`` and the
  password confirming a workspace deletion. Nobody's failures refuse somebody else's credential.
* The SQLite limits store without Redis; with Redis configured but down the counters fail open.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import time_machine
from django.conf import settings as django_settings
from django.test import Client, override_settings
from rest_framework.test import APIClient

from config import limits
from config.api import throttling
from config.outages import reset_outage_log
from tests.problem_asserts import assert_problem
from tests.worker_harness import free_port
from workspaces.access import Actor
from workspaces.models import User, Workspace
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"
# Anonymous, behind the default throttle (the API rate, per client address when anonymous).
ANONYMOUS = "/api/v1/accounts/oauth/callback?error=access_denied&state=x"
PASSWORD = "correct horse battery"  # the make_user default
UNKNOWN_TOKEN = "Bearer hrld_00000000_" + "A" * 43
FROZEN = "2030-01-01 12:00:05+00:00"  # the budget is per clock minute: stay inside one


def proxies(count: int | None) -> override_settings:
    return override_settings(
        REST_FRAMEWORK={**django_settings.REST_FRAMEWORK, "NUM_PROXIES": count}
    )


class Meta:
    def __init__(self, remote: str, forwarded: str | None = None) -> None:
        self.META = {"REMOTE_ADDR": remote}
        if forwarded is not None:
            self.META["HTTP_X_FORWARDED_FOR"] = forwarded


# --- One client address ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "forwarded", "expected"),
    [
        (None, "6.6.6.6", "10.0.0.9"),  # unset: the header is ignored entirely
        (0, "6.6.6.6", "10.0.0.9"),
        (1, None, "10.0.0.9"),  # no header: REMOTE_ADDR
        (1, "6.6.6.6, 1.2.3.4", "1.2.3.4"),  # one proxy: the address it appended
        (2, "6.6.6.6, 1.2.3.4, 10.0.0.2", "1.2.3.4"),  # the N-th from the right
        (3, "1.2.3.4, 10.0.0.2", "1.2.3.4"),  # fewer than N: the leftmost
        (1, " , ", "10.0.0.9"),
    ],
)
def test_client_ip(count: int | None, forwarded: str | None, expected: str) -> None:
    with proxies(count):
        assert limits.client_ip(Meta("10.0.0.9", forwarded)) == expected


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("192.0.2.7", "192.0.2.7"),
        ("unknown", "unknown"),
    ],
)
def test_an_ipv6_client_is_counted_as_its_64(remote: str, expected: str) -> None:
    assert limits.client_ip(Meta(remote)) == expected
    with proxies(1):
        assert limits.client_ip(Meta("10.0.0.1", remote)) == expected


@time_machine.travel(FROZEN, tick=False)
def test_rotating_ipv6_addresses_inside_a_64_spends_one_budget(settings: Any) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    codes = [
        APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN, REMOTE_ADDR=f"2001:db8:7:7::{n + 1:x}")
        .get(ME)
        .status_code
        for n in range(5)
    ]
    assert codes == [401, 401, 401, 429, 429]
    other = APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN, REMOTE_ADDR="2001:db8:7:8::1")
    assert other.get(ME).status_code == 401


def test_x_forwarded_for_without_trusted_proxies_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits._unset_proxies_warned.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="config.limits"):
            limits.client_ip(Meta("10.0.0.9"))  # no header: nothing to say
            assert not caplog.records
            for n in range(3):
                assert limits.client_ip(Meta("10.0.0.9", f"198.51.100.{n}")) == "10.0.0.9"
            with proxies(1):
                limits.client_ip(Meta("10.0.0.9", "198.51.100.1"))
        reports = [r.getMessage() for r in caplog.records if r.name == "config.limits"]
        assert len(reports) == 1, reports
        assert "HERALD_NUM_PROXIES" in reports[0]
        assert "10.0.0.9" in reports[0]
    finally:
        limits._unset_proxies_warned.clear()


@time_machine.travel(FROZEN, tick=False)
def test_behind_a_proxy_one_clients_bad_tokens_do_not_lock_out_the_others(
    owner_client: APIClient, settings: Any
) -> None:
    """Every request comes from the proxy's address; the budget belongs to the client it names."""
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    attacker = APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN, **proxy)
    with proxies(1):
        codes = [attacker.get(ME, HTTP_X_FORWARDED_FOR="203.0.113.7").status_code for _ in range(4)]
        assert codes == [401, 401, 401, 429]
        # The attacker cannot escape by naming another address left of the proxy's own entry.
        escape = attacker.get(ME, HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.7")
        assert escape.status_code == 429
        other = owner_client.get(ME, HTTP_X_FORWARDED_FOR="198.51.100.20", **proxy)
        assert other.status_code == 200, other.content


@time_machine.travel(FROZEN, tick=False)
def test_the_anonymous_rate_cannot_be_dodged_by_rotating_x_forwarded_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(throttling.UserRateThrottle, "THROTTLE_RATES", {"user": "3/min"})
    client = APIClient(REMOTE_ADDR="192.0.2.50")
    codes = [
        client.get(ANONYMOUS, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code for n in range(5)
    ]
    assert 429 not in codes[:3]
    assert codes[3:] == [429, 429]
    # Another client (another REMOTE_ADDR) has its own window.
    assert APIClient(REMOTE_ADDR="192.0.2.51").get(ANONYMOUS).status_code != 429
    # Behind one proxy, rotating the client-written part changes nothing either.
    with proxies(1):
        behind = APIClient(REMOTE_ADDR="10.0.0.1")
        rotated = [
            behind.get(ANONYMOUS, HTTP_X_FORWARDED_FOR=f"198.51.100.{n}, 192.0.2.60").status_code
            for n in range(4)
        ]
    assert rotated[3] == 429
    assert 429 not in rotated[:3]


# --- Nobody's failures refuse somebody else's credential -----------------------------------


@pytest.fixture
def admin_user(make_user: Callable[..., User]) -> User:
    return make_user("root@example.com", is_staff=True, is_superuser=True)


def admin_login(client: Client, email: str, password: str) -> Any:
    return client.post(
        "/admin/login/", {"username": email, "password": password, "next": "/admin/"}
    )


def login(client: Client, email: str, password: str = PASSWORD) -> Any:
    return client.post("/login/", {"username": email, "password": password})


@time_machine.travel(FROZEN, tick=False)
def test_the_admin_sign_in_spends_the_budget_and_then_refuses_the_right_password(
    admin_user: User, settings: Any
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    client = Client()
    for _ in range(3):
        response = admin_login(client, admin_user.email, "guess")
        assert response.status_code == 200
        assert "_auth_user_id" not in client.session
    response = admin_login(client, admin_user.email, PASSWORD)
    assert "_auth_user_id" not in client.session, "signed in with the budget spent"
    assert "Too many failed sign-ins" in response.content.decode()
    # Wrong passwords spend nothing of the bearer tokens' budget...
    assert APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN).get(ME).status_code == 401
    # ...and the next minute the right password works again.
    with time_machine.travel("2030-01-01 12:01:05+00:00", tick=False):
        response = admin_login(client, admin_user.email, PASSWORD)
        assert response.status_code == 302
        assert client.session["_auth_user_id"] == str(admin_user.pk)


@time_machine.travel(FROZEN, tick=False)
def test_bad_tokens_lock_out_neither_valid_tokens_nor_passwords_of_that_address(
    owner_client: APIClient, user: User, settings: Any
) -> None:
    """Before: 30 junk tokens from one address (behind a proxy without ``HERALD_NUM_PROXIES``,
    the whole instance) refused every valid token and password from it for the minute."""
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    bad = APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN)
    assert [bad.get(ME).status_code for _ in range(4)] == [401, 401, 429, 429]
    assert owner_client.get(ME).status_code == 200
    client = Client()
    assert login(client, user.email).status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)


@time_machine.travel(FROZEN, tick=False)
def test_wrong_passwords_for_one_account_do_not_lock_out_another_at_that_address(
    user: User, make_user: Callable[..., User], settings: Any
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    neighbour = make_user("neighbour@example.com")
    for _ in range(3):
        assert login(Client(), neighbour.email, "guess").status_code == 200
    refused = login(Client(), neighbour.email)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "Too many failed sign-ins" in refused.content.decode()
    assert login(Client(), user.email).status_code == 302  # same address, another account


@time_machine.travel(FROZEN, tick=False)
def test_guessing_one_account_from_many_addresses_backs_off(
    user: User, make_user: Callable[..., User], settings: Any
) -> None:
    """Four addresses with 30 guesses each a minute used to get 120 checked guesses. Now the
    account allows HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF failures, then each one makes every
    address wait twice as long as the previous, the right password included."""
    assert settings.HERALD_AUTH_FAILURES_PER_MINUTE == 30
    free = settings.HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF
    assert free == 10
    answers = [
        login(Client(REMOTE_ADDR=f"198.51.100.{n}"), user.email, f"guess{n}-{i}").status_code
        for i in range(30)
        for n in range(1, 5)
    ]
    assert answers.count(200) == free + 1  # the time is frozen: the first wait never ends
    assert answers.count(429) == 120 - free - 1
    # Another address, the right password: the account waits (1 s after the 11th failure).
    refused = login(Client(REMOTE_ADDR="203.0.113.9"), user.email)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    # Other accounts, and bearer tokens, from the guessing addresses are untouched.
    other = make_user("other@example.com")
    assert login(Client(REMOTE_ADDR="198.51.100.1"), other.email).status_code == 302
    with time_machine.travel("2030-01-01 12:00:06+00:00", tick=False):
        assert login(Client(REMOTE_ADDR="203.0.113.9"), user.email).status_code == 302
        # The 12th failure makes the account wait 2 s, the 13th 4 s.
        assert login(Client(REMOTE_ADDR="198.51.100.1"), user.email, "guess").status_code == 200
        assert login(Client(REMOTE_ADDR="203.0.113.9"), user.email)["Retry-After"] == "2"
    with time_machine.travel("2030-01-01 12:00:08+00:00", tick=False):
        assert login(Client(REMOTE_ADDR="198.51.100.2"), user.email, "guess").status_code == 200
        assert login(Client(REMOTE_ADDR="203.0.113.9"), user.email)["Retry-After"] == "4"


def test_the_back_off_is_capped(user: User, settings: Any) -> None:
    settings.HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF = 0
    settings.HERALD_ACCOUNT_BACKOFF_MAX_SECONDS = 5
    with time_machine.travel(FROZEN, tick=False) as clock:
        waits = []
        for _ in range(5):
            assert login(Client(), user.email, "guess").status_code == 200
            waits.append(int(login(Client(), user.email)["Retry-After"]))
            clock.shift(waits[-1])
    assert waits == [1, 2, 4, 5, 5]


@time_machine.travel(FROZEN, tick=False)
def test_failures_against_unknown_accounts_are_limited_per_address_and_tell_nothing(
    user: User, settings: Any
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    client = Client()
    assert [login(client, f"nobody{n}@example.com").status_code for n in range(3)] == [200] * 3
    assert login(client, "nobody9@example.com").status_code == 429
    # With or without an account, a wrong password is now the same 429...
    wrong = login(client, user.email, "guess")
    assert wrong.status_code == 429
    assert "Too many failed sign-ins" in wrong.content.decode()
    # ...but the right password still signs in, and another address has its own budget.
    assert login(Client(REMOTE_ADDR="192.0.2.99"), "nobody10@example.com").status_code == 200
    assert login(client, user.email).status_code == 302


@time_machine.travel(FROZEN, tick=False)
def test_an_unknown_account_backs_off_like_a_known_one(user: User, settings: Any) -> None:
    """The account budgets follow the e-mail typed, so they tell nothing about which e-mails
    have an account."""
    settings.HERALD_ACCOUNT_FAILURES_BEFORE_BACKOFF = 2
    answers = {}
    for email in (user.email, "nobody@example.com"):
        answers[email] = [
            login(Client(REMOTE_ADDR=f"198.51.100.{n}"), email.upper(), "guess").status_code
            for n in range(5)
        ]
    assert answers[user.email] == answers["nobody@example.com"] == [200, 200, 200, 429, 429]


# --- Workspace deletion: the password first -------------------------------------------------


@pytest.fixture
def doomed(user: User, organization: Any, workspace: Any) -> Any:
    return workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Doomed")


def delete(client: APIClient, csrf: dict[str, str], ws: Any, **body: Any) -> Any:
    return client.delete(f"/api/v1/workspaces/{ws.pk}", body, format="json", **csrf)


def test_a_wrong_password_is_refused_even_with_a_recent_session(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
) -> None:
    client = make_session_client(user, authenticated_seconds_ago=10)
    response = delete(
        client, csrf_headers(client), doomed, confirm_name="Doomed", current_password="nope"
    )
    body = assert_problem(response, 403, "recent_authentication_required")
    assert body["detail"] == "The current password is wrong."
    assert Workspace.objects.filter(pk=doomed.pk).exists()


@time_machine.travel(FROZEN, tick=False)
def test_deletion_passwords_are_checked_first_and_spend_the_budget(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    doomed: Any,
    settings: Any,
) -> None:
    """Before: with an old session a wrong ``confirm_name`` answered 403 for a wrong password and
    422 for the right one, without limit. Now a wrong password is the same 403 whatever else
    the body says, each one counts, and once the budget is spent the right one is a 429."""
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 3
    client = make_session_client(user, authenticated_seconds_ago=3600)
    csrf = csrf_headers(client)
    wrong = [
        delete(client, csrf, doomed, confirm_name="Doomed", current_password="guess1"),
        delete(client, csrf, doomed, confirm_name="not it", current_password="guess2"),
        delete(client, csrf, doomed, confirm_name="not it", current_password="guess3", extra=1),
    ]
    bodies = [assert_problem(r, 403, "recent_authentication_required") for r in wrong]
    assert len({(b["detail"], b["title"]) for b in bodies}) == 1
    refused = delete(client, csrf, doomed, confirm_name="not it", current_password=PASSWORD)
    assert_problem(refused, 429, "rate_limited")
    refused = delete(client, csrf, doomed, confirm_name="Doomed", current_password=PASSWORD)
    assert_problem(refused, 429, "rate_limited")
    assert Workspace.objects.filter(pk=doomed.pk).exists()
    with time_machine.travel("2030-01-01 12:01:05+00:00", tick=False):
        response = delete(client, csrf, doomed, confirm_name="Doomed", current_password=PASSWORD)
        assert response.status_code == 204
    assert not Workspace.objects.filter(pk=doomed.pk).exists()


def test_a_wrong_password_is_refused_before_the_role_or_the_workspace(
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    make_user: Callable[..., User],
    doomed: Any,
) -> None:
    stranger = make_user("stranger@example.com")
    client = make_session_client(stranger)
    csrf = csrf_headers(client)
    for ws in (doomed, Workspace(pk="00000000-0000-4000-8000-00000000000f")):
        response = delete(client, csrf, ws, confirm_name="Doomed", current_password="nope")
        assert_problem(response, 403, "recent_authentication_required")


# --- The SQLite store -----------------------------------------------------------------------


@pytest.mark.skipif(
    throttling.redis_client(throttling.caches["default"]) is not None, reason="Redis is the store"
)
def test_the_sqlite_store_is_a_private_wal_file() -> None:
    assert limits.window_hit("test:file", 60)[0] == 1
    path = limits.limits_path()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as other:  # another process would see the same count
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT count FROM counters WHERE key = 'test:file'").fetchone() == (
            1,
        )
    assert limits.acquire_slot("test:slot", "a", 30)
    assert not limits.acquire_slot("test:slot", "b", 30)
    limits.release_slot("test:slot", "b")  # not the holder: nothing happens
    assert not limits.acquire_slot("test:slot", "b", 30)
    limits.release_slot("test:slot", "a")
    assert limits.acquire_slot("test:slot", "b", 30)


# --- Redis down: the counters fail open -----------------------------------------------------


@pytest.fixture
def down_redis() -> Iterator[None]:
    """``REDIS_URL`` configured, nothing listening on its port."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    reset_outage_log()
    with override_settings(
        REDIS_URL=url,
        CACHES={
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": "herald",
                "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
            }
        },
    ):
        yield
    reset_outage_log()


def test_with_redis_down_the_counters_fail_open_and_log_once(
    down_redis: None, owner_client: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        answers = [owner_client.get(ME).status_code for _ in range(5)]
        bad = APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN).get(ME)
        anonymous = APIClient().get(ANONYMOUS)
    assert answers == [200] * 5
    assert_problem(bad, 401, "not_authenticated")
    assert anonymous.status_code not in (429, 500, 503)
    reports = [r for r in caplog.records if r.name == "config.limits"]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert "redis unavailable" in reports[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.skipif(
    throttling.redis_client(throttling.caches["default"]) is not None, reason="Redis is the store"
)
def test_an_unusable_sqlite_store_fails_open_and_logs_once(
    owner_client: APIClient, caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    reset_outage_log()
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # a file where the store's folder should be
    with (
        override_settings(HERALD_LIMITS_DB=blocked / "limits.sqlite3"),
        caplog.at_level(logging.WARNING),
    ):
        answers = [owner_client.get(ME).status_code for _ in range(3)]
        bad = APIClient(HTTP_AUTHORIZATION=UNKNOWN_TOKEN).get(ME)
    reset_outage_log()
    assert answers == [200] * 3
    assert_problem(bad, 401, "not_authenticated")
    reports = [r for r in caplog.records if r.name == "config.limits"]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert "limits store unavailable" in reports[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
