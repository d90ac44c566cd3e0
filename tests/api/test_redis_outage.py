"""Redis outages: with ``REDIS_URL`` configured and Redis down, ``/ready`` is
a 503 naming ``redis``, API requests answer without a 500 or a per-request traceback, and a
publication published meanwhile is stored and delivered exactly once after Redis is back.

The in-process tests point the settings at a port nobody listens on (a Redis that is down) or
at a private ``redis-server``. The end-to-end test runs a real gunicorn, Celery worker and beat
against its own ``redis-server`` on a free port, stops it, and starts it again on that port.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import requests
from django.conf import settings as django_settings
from django.test import override_settings
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError as RedisResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework.test import APIClient

from config import health
from config.nudge import nudge, reset_broker_backoff
from config.outages import OutageLogFilter, reset_outage_log
from publishing.models import Destination, Publication
from tests.problem_asserts import assert_problem
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.publishing_support import make_account
from tests.worker_harness import (
    BIN,
    Broker,
    DeliveryStack,
    ManagedProcess,
    RedisServer,
    credential_keys,
    free_port,
    use_broker,
    wait_until,
)

READY = "/api/v1/ready"
DISCOVER = "/api/v1/publication-opportunities/discover"
HAS_REDIS_SERVER = shutil.which("redis-server") is not None


def redis_settings(url: str) -> override_settings:
    """This process's cache and readiness probe on ``url`` (as ``REDIS_URL`` would set them)."""
    return override_settings(
        REDIS_URL=url,
        HERALD_S3_BUCKET=None,
        CACHES={
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": "herald",
                "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
            }
        },
    )


@pytest.fixture
def down_redis_url() -> str:
    """A Redis URL on a port where nothing listens: connections are refused at once."""
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture(autouse=True)
def _fresh_outage_log() -> Iterator[None]:
    reset_outage_log()
    yield
    reset_outage_log()


# --- Readiness ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_readiness_is_503_naming_redis_when_redis_is_down(down_redis_url: str) -> None:
    started = time.monotonic()
    with redis_settings(down_redis_url):
        response = APIClient().get(READY)
    assert time.monotonic() - started < health.REDIS_TIMEOUT_SECONDS + 2
    body = assert_problem(response, 503, "dependency_unavailable")
    assert body["failing"] == ["redis"]
    assert "redis" in body["detail"]
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
@pytest.mark.skipif(not HAS_REDIS_SERVER, reason="needs redis-server on PATH")
def test_readiness_reports_redis_ok_when_it_answers(tmp_path: Path) -> None:
    server = RedisServer(tmp_path).start()
    try:
        with redis_settings(server.url):
            response = APIClient().get(READY)
    finally:
        server.stop()
    assert response.status_code == 200, response.content
    body = response.json()
    assert body == {"$schema": body["$schema"], "status": "ready", "database": "ok", "redis": "ok"}


# --- API requests ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_request_that_needs_redis_is_a_503_problem_logged_once(
    down_redis_url: str,
    session_client: APIClient,
    csrf_headers: Any,
    workspace: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Discovery's one-in-flight slot lives in Redis: without it the request cannot be admitted,
    so it is a 503 ``dependency_unavailable`` problem — not a 500 — and the outage is logged
    once per interval, without a traceback, however many requests meet it."""
    body = {"workspace_id": str(workspace.pk), "platforms": ["mastodon"], "limit": 1}
    with redis_settings(down_redis_url), caplog.at_level(logging.WARNING):
        headers = csrf_headers(session_client)
        responses = [
            session_client.post(DISCOVER, body, format="json", **headers) for _ in range(3)
        ]
    for response in responses:
        problem = assert_problem(response, 503, "dependency_unavailable")
        assert problem["failing"] == ["redis"]
        assert response["Retry-After"] == "5"
    reports = [r for r in caplog.records if r.name == "config.api.problems"]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert "redis unavailable" in reports[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.django_db
@override_settings(ROOT_URLCONF="tests.outage_urls", DEBUG=False)
def test_redis_outage_outside_drf_is_a_503_problem_too(
    down_redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain Django view under /api/ that needs Redis: ApiProblemMiddleware answers the same
    503 problem instead of its 500, without logging the traceback."""
    with redis_settings(down_redis_url), caplog.at_level(logging.WARNING):
        responses = [APIClient().get("/api/v1/test-plain-cache") for _ in range(2)]
    for response in responses:
        problem = assert_problem(response, 503, "dependency_unavailable")
        assert problem["failing"] == ["redis"]
        assert response["Retry-After"] == "5"
    assert len([r for r in caplog.records if r.name == "config.api.problems"]) == 1
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


# --- One nudge for every app -------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        BrokerOperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused."),
        ConnectionRefusedError(111, "Connection refused"),
        RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused."),
        RedisTimeoutError("Timeout reading from socket"),
    ],
    ids=["kombu", "socket", "redis-connection", "redis-timeout"],
)
def test_a_nudge_the_broker_cannot_take_is_logged_not_raised_then_skipped_for_a_while(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """publishing and reposts send their task messages through config.nudge: a broker outage,
    whichever library reports it, is one warning without a traceback, and the sends right after
    it do not try the broker again."""
    task = mock.Mock()
    task.name = "tests.example"
    task.delay.side_effect = error
    reset_broker_backoff()
    try:
        with caplog.at_level(logging.WARNING):
            nudge(task, "first")
            nudge(task, "second", countdown=5)
    finally:
        reset_broker_backoff()
    task.delay.assert_called_once_with("first")
    task.apply_async.assert_not_called()
    reports = [r for r in caplog.records if r.name == "config.nudge"]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert "broker unavailable (enqueue)" in reports[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_a_nudge_does_not_hide_a_redis_command_error() -> None:
    """Only outages are swallowed: a command error is a bug, and the caller sees it."""
    task = mock.Mock()
    task.name = "tests.example"
    task.delay.side_effect = RedisResponseError("WRONGTYPE Operation against a key")
    reset_broker_backoff()
    try:
        with pytest.raises(RedisResponseError):
            nudge(task, "first")
    finally:
        reset_broker_backoff()


# --- Publishing while the broker is down -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_publish_now_with_the_broker_down_is_accepted_stored_and_quick(
    down_redis_url: str, owner_client: APIClient, workspace: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The commit stands and the answer is the usual 202; the task messages that cannot be sent
    are logged once, and after the first failure the process stops paying Celery's publish
    retries (about 0.7 s a message) for every other destination of the request."""
    accounts = [make_account(workspace, "discord_webhook", external_id=str(n)) for n in range(6)]
    created = owner_client.post(
        "/api/v1/publications",
        {
            "workspace_id": str(workspace.pk),
            "text": "Broker down",
            "destinations": [{"account_id": str(a.pk)} for a in accounts],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    publication_id = created.json()["id"]
    with use_broker(Broker.redis(down_redis_url)), caplog.at_level(logging.WARNING):
        started = time.monotonic()
        response = owner_client.post(
            f"/api/v1/publications/{publication_id}/publish-now", {}, format="json"
        )
        elapsed = time.monotonic() - started
    assert response.status_code == 202, response.content
    assert elapsed < 3, f"publish-now took {elapsed:.1f} s with the broker down"
    assert Publication.objects.get(pk=publication_id).status == Publication.Status.PUBLISHING
    statuses = Destination.objects.filter(publication_id=publication_id).values_list(
        "status", flat=True
    )
    assert sorted(statuses) == [Destination.Status.QUEUED] * len(accounts)
    reports = [r for r in caplog.records if r.name == "config.nudge"]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert "broker unavailable (enqueue)" in reports[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


# --- Beat's logs while the broker is down -----------------------------------------------------


def test_beat_reports_an_outage_once_whether_it_meets_it_sending_or_connecting(
    caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    """Beat's filter (config/celery.py) on what celery beat logs during an outage: a tick it
    cannot send is an error with a traceback; while its first connection cannot be made (beat
    started during the outage, or before its first send) it logs one error per retry with the
    connection error as a message argument (celery/beat.py, ``_ensure_connected``). Both are
    one ``redis unavailable (celery.beat)`` warning per interval, without a traceback. Before,
    the retries passed as they were: one ERROR line each (2, 4, 6, ... s apart)."""
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # the broker is Redis
    logger = logging.getLogger("celery.beat")
    beat_filter = OutageLogFilter()
    logger.addFilter(beat_filter)
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:9. Connection refused.")
    try:
        with caplog.at_level(logging.INFO, logger="celery.beat"):
            for interval in (2.0, 4.0, 6.0):
                logger.error(
                    "beat: Connection error: %s. Trying again in %s seconds...", refused, interval
                )
            try:
                raise BrokerOperationalError(str(refused)) from refused
            except BrokerOperationalError:
                logger.exception("Message Error: Couldn't apply scheduled task")
            logger.info("Scheduler: Sending due task %s (%s)", "dispatch", "delivery_dispatch")
    finally:
        logger.removeFilter(beat_filter)
    records = [r for r in caplog.records if r.name == "celery.beat"]
    assert [(r.levelname, r.getMessage().split(":")[0]) for r in records] == [
        ("WARNING", "redis unavailable (celery.beat)"),
        ("INFO", "Scheduler"),
    ], [r.getMessage() for r in records]
    assert "Connection error" in records[0].getMessage()
    assert not [r for r in records if r.exc_info], "a traceback was logged"


# --- End to end: gunicorn, worker and beat through an outage -----------------------------------


def _start_web(stack: DeliveryStack, tmp_path: Path) -> tuple[ManagedProcess, str]:
    port = free_port()
    argv = [
        str(BIN / "gunicorn"),
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "2",
        "--graceful-timeout",
        "2",
    ]
    web = ManagedProcess("web", argv, stack.env(), tmp_path / "web.log").start()
    stack.processes.append(web)  # stopped with the stack, whatever happens
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return requests.get(f"{base}/api/v1/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    stack.wait_until(lambda: answers() or not web.alive, timeout=45, what="gunicorn to answer")
    assert web.alive, f"gunicorn exited during start-up\n{stack.logs()}"
    return web, base


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    not django_settings.REDIS_URL, reason="the PostgreSQL + Redis run stops and restarts Redis"
)
def test_redis_outage_end_to_end(
    worker_database_url: str, tmp_path: Path, user: Any, workspace: Any, make_token: Any
) -> None:
    redis = RedisServer(tmp_path)
    broker = Broker.redis(redis.url)
    stack = DeliveryStack(
        database_url=worker_database_url,
        broker=broker,
        data_dir=tmp_path,
        settings_env=credential_keys(),
    )
    discord = DiscordWebhookStandIn()
    try:  # every process is stopped, whatever fails and wherever
        discord.start()
        redis.start()
        with use_broker(broker):
            _outage_scenario(stack, redis, discord, tmp_path, user, workspace, make_token)
    finally:
        stack.stop()
        redis.stop()
        discord.stop()


def _outage_scenario(
    stack: DeliveryStack,
    redis: RedisServer,
    discord: DiscordWebhookStandIn,
    tmp_path: Path,
    user: Any,
    workspace: Any,
    make_token: Any,
) -> None:
    beat = stack.start_beat()
    stack.start_worker()
    web, base = _start_web(stack, tmp_path)
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {make_token(user)}"

    def call(method: str, path: str, **kwargs: Any) -> requests.Response:
        return api.request(method, f"{base}/api/v1{path}", timeout=15, **kwargs)

    # Redis up: ready, and an account connected through the API.
    ready = requests.get(f"{base}{READY}", timeout=10)
    assert ready.status_code == 200, ready.text
    assert ready.json()["redis"] == "ok"
    connected = call(
        "POST",
        "/accounts/connect",
        json={
            "workspace_id": str(workspace.pk),
            "provider": "discord_webhook",
            "fields": {"webhook_url": discord.webhook_url()},
        },
    )
    assert connected.status_code == 201, connected.text
    account_id = connected.json()["account"]["id"]
    # Beat is ticking before the outage (under load it may still be starting after gunicorn
    # answers; beat started during an outage is the unit test above).
    stack.wait_until(
        lambda: "Sending due task" in beat.log() or not beat.alive,
        timeout=60,
        what="beat's first tick",
    )
    assert beat.alive, beat.log()[-4000:]

    # Redis down.
    redis.stop()
    started = time.monotonic()
    ready = requests.get(f"{base}{READY}", timeout=10)
    assert time.monotonic() - started < health.REDIS_TIMEOUT_SECONDS + 3
    assert ready.status_code == 503, ready.text
    assert ready.headers["Content-Type"].startswith("application/problem+json")
    assert ready.json()["code"] == "dependency_unavailable"
    assert "redis" in ready.json()["failing"]
    assert "database" not in ready.json()["failing"]

    me = call("GET", "/me")
    assert me.status_code != 500, me.text
    assert me.status_code == 200, me.text  # the rate counters fail open

    created = call(
        "POST",
        "/publications",
        json={
            "workspace_id": str(workspace.pk),
            "text": "Sent while Redis was down",
            "destinations": [{"account_id": account_id}],
        },
    )
    assert created.status_code != 500, created.text
    assert created.status_code == 201, created.text
    publication_id = created.json()["id"]
    published = call("POST", f"/publications/{publication_id}/publish-now", json={})
    assert published.status_code != 500, published.text
    assert published.status_code == 202, published.text
    stored = Publication.objects.get(pk=publication_id)
    assert stored.status == Publication.Status.PUBLISHING
    assert {d.status for d in Destination.objects.filter(publication=stored)} == {
        Destination.Status.QUEUED
    }
    assert discord.posts_accepted == 0
    time.sleep(2)  # beat meets the outage on a few dispatcher ticks
    assert "Traceback" not in web.log(), web.log()[-4000:]
    assert "Traceback" not in beat.log(), beat.log()[-4000:]
    assert "redis unavailable (celery.beat)" in beat.log(), beat.log()[-4000:]

    # Redis back on the same port, empty (no persistence): the sweeper re-enqueues the work.
    redis.start()
    row = stack.wait_until(
        lambda: Destination.objects.filter(
            publication_id=publication_id, status=Destination.Status.PUBLISHED
        ).first(),
        timeout=120,
        what="the destination to be published after Redis came back",
    )
    assert row.external_id
    time.sleep(3)  # a few more dispatcher ticks: nothing is sent twice
    assert discord.posts_accepted == 1, discord.posts
    assert Publication.objects.get(pk=publication_id).status == Publication.Status.PUBLISHED
    wait_until(
        lambda: requests.get(f"{base}{READY}", timeout=10).status_code == 200,
        timeout=15,
        what="/ready to answer 200 again",
    )
    assert web.alive
