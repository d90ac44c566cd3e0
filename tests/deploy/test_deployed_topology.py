"""The deployed topology, end to end: what ``docker-compose.yml`` runs, started from
the installed wheel, behind a real nginx, used through the proxy as a person and a client would.

gunicorn (``docker/gunicorn.conf.py``), a Celery worker and beat, a fresh PostgreSQL database
migrated by the ``migrate`` service, a private ``redis-server`` and nginx on 127.0.0.1
(``tests/topology_support.py``). Each process runs its compose command with the environment
compose gives its container, read from ``docker-compose.yml`` and the ``Dockerfile`` (the worker's
``HERALD_DB_POOL_SIZE`` and ``HERALD_WORKER_CONCURRENCY`` included), the operator's ``.env`` being
that of one proxy on plain HTTP: ``HERALD_PUBLIC_URL`` = the proxy's origin, ``HERALD_HTTPS=false``,
``HERALD_NUM_PROXIES=1``, ``FORWARDED_ALLOW_IPS=127.0.0.1``.

Runs in the PostgreSQL + Redis run of the suite only (``.ci/run`` installs nginx before it).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.conf import settings

from tests.providers.discord_webhook.standin import WEBHOOK_ID, DiscordWebhookStandIn
from tests.providers.mastodon.standin import MastodonStandIn
from tests.providers.standin import Reply, Request
from tests.topology_support import (
    PostgresServer,
    Topology,
    client,
    deployed_topology,
    interpolate,
    load_compose,
    nginx_binary,
)

_ENGINE = settings.DATABASES["default"]["ENGINE"]
pytestmark = [
    pytest.mark.deployed,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        "postgresql" not in _ENGINE or not settings.REDIS_URL,
        reason="the deployed topology runs in the PostgreSQL + Redis run only "
        "(set DATABASE_URL=postgres://… and REDIS_URL)",
    ),
    pytest.mark.skipif(
        nginx_binary() is None,
        reason="nginx is not installed (apt-get install nginx; .ci/run does)",
    ),
]

TOKEN_RE = re.compile(r"hrld_[0-9a-f]{8}_[A-Za-z0-9_\-]{43}")
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
AUTH_FAILURES_PER_MINUTE = 5
# More sends held in flight at once than the worker's database pool has connections (below the
# worker's concurrency); HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT (4) spreads them over accounts.
SENDS_IN_FLIGHT = 12
ACCOUNTS = 3


@pytest.fixture(scope="module")
def topology(
    installed_herald_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Topology]:
    with deployed_topology(
        bin_dir=installed_herald_bin,
        work_dir=tmp_path_factory.mktemp("topology"),
        postgres=PostgresServer.from_django_settings(settings.DATABASES["default"]),
        extra_env={
            # A budget this test can spend in a few requests.
            "HERALD_AUTH_FAILURES_PER_MINUTE": str(AUTH_FAILURES_PER_MINUTE),
            # Sends held at a stand-in must not time out while the test looks at the worker.
            "HERALD_PROVIDER_TIMEOUT_SECONDS": "60",
        },
    ) as running:
        yield running


def ok(response: requests.Response, status: int = 200) -> Any:
    assert response.status_code == status, (
        response.request.method,
        response.url,
        response.status_code,
        response.text[:800],
    )
    return response.json() if response.content else None


def csrf_of(page: requests.Response) -> str:
    assert page.status_code == 200, (page.url, page.status_code)
    match = CSRF_RE.search(page.text)
    assert match, page.text[:500]
    return match.group(1)


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value and value.startswith("/static/"):
                self.urls.append(value)


def sign_in_and_create_token(topology: Topology, browser: requests.Session) -> str:
    """The person's part: sign in at /login/, create a token at /settings/developer/ (CSRF form
    posts carrying the Origin a browser sends), read the secret shown once."""
    origin = {"Origin": topology.url}
    login = f"{topology.url}/login/"
    signed_in = browser.post(
        login,
        data={
            "username": topology.admin_email,
            "password": topology.admin_password,
            "csrfmiddlewaretoken": csrf_of(browser.get(login, timeout=10)),
        },
        headers={**origin, "Referer": login},
        allow_redirects=False,
        timeout=10,
    )
    assert signed_in.status_code == 302, (signed_in.status_code, signed_in.text[:500])
    assert signed_in.headers["Location"] == "/settings/developer/"
    # Plain-HTTP trial (HERALD_HTTPS=false): the session cookie is not marked Secure, else a
    # browser would never send it back over http.
    session_cookie = next(c for c in browser.cookies if c.name == "sessionid")
    assert not session_cookie.secure

    page = f"{topology.url}/settings/developer/"
    created = browser.post(
        page,
        data={
            "action": "create",
            "name": "deployed topology",
            "can_write": "on",
            "workspace": "",
            "csrfmiddlewaretoken": csrf_of(browser.get(page, timeout=10)),
        },
        headers={**origin, "Referer": page},
        timeout=10,
    )
    assert created.status_code == 200, (created.status_code, created.text[:500])
    assert created.headers["Cache-Control"] == "no-store"
    shown = set(TOKEN_RE.findall(created.text))
    assert len(shown) == 1, "the new token's secret is shown exactly once on the page"
    token = shown.pop()
    assert token not in browser.get(page, timeout=10).text  # and never again
    return token


def connect_discord_webhook(
    bearer: requests.Session, api: str, workspace_id: str, webhook_url: str
) -> str:
    """Connect a Discord webhook account through the API; its id."""
    connected = ok(
        bearer.post(
            f"{api}/accounts/connect",
            json={
                "workspace_id": workspace_id,
                "provider": "discord_webhook",
                "fields": {"webhook_url": webhook_url},
            },
            timeout=30,
        ),
        201,
    )
    return str(connected["account"]["id"])


def publish_now(
    bearer: requests.Session, api: str, workspace_id: str, text: str, account_ids: list[str]
) -> str:
    """Create a publication to ``account_ids`` and publish it now; its id."""
    draft = ok(
        bearer.post(
            f"{api}/publications",
            json={
                "workspace_id": workspace_id,
                "text": text,
                "destinations": [{"account_id": account_id} for account_id in account_ids],
            },
            timeout=10,
        ),
        201,
    )
    ok(
        bearer.post(
            f"{api}/publications/{draft['id']}/publish-now",
            json={"expected_revision": draft["revision"]},
            timeout=10,
        ),
        202,
    )
    return str(draft["id"])


def connect_mastodon_through_the_proxy(
    topology: Topology, bearer: requests.Session, workspace_id: str
) -> None:
    """OAuth: the callback registered with the provider is on the public origin (nginx forwards
    ``Host: 127.0.0.1`` without the port), and the user's browser gets back through the proxy."""
    callback = f"{topology.url}/api/v1/accounts/oauth/callback"
    with MastodonStandIn() as mastodon:
        started = ok(
            bearer.post(
                f"{topology.url}/api/v1/accounts/connect",
                json={
                    "workspace_id": workspace_id,
                    "provider": "mastodon",
                    "instance_url": mastodon.url,
                },
                timeout=30,
            )
        )
        # Herald's start page on the public origin: the person confirms, and the browser gets
        # the nonce cookie the callback requires before it is sent to the provider.
        start = started["authorization_url"]
        assert start.startswith(f"{topology.url}/connections/authorize/")
        browser = client()
        confirmed = browser.post(
            start,
            data={"csrfmiddlewaretoken": csrf_of(browser.get(start, timeout=10))},
            headers={"Origin": topology.url, "Referer": start},
            allow_redirects=False,
            timeout=10,
        )
        assert confirmed.status_code == 303, (confirmed.status_code, confirmed.text[:500])
        provider_url = confirmed.headers["Location"]
        query = parse_qs(urlsplit(provider_url).query)
        assert query["redirect_uri"] == [callback]
        approved = browser.get(provider_url, allow_redirects=False, timeout=10)
        assert approved.status_code == 302
        back = approved.headers["Location"]
        assert back.startswith(f"{callback}?")
        account = ok(browser.get(back, timeout=30))
        assert account["provider"] == "mastodon"
        assert account["status"] == "active"


def test_publish_through_the_reverse_proxy(topology: Topology) -> None:
    with topology.diagnostics():
        _publish_through_the_reverse_proxy(topology)


def _publish_through_the_reverse_proxy(topology: Topology) -> None:
    api = f"{topology.url}/api/v1"
    token = sign_in_and_create_token(topology, client())
    bearer = client()
    bearer.headers["Authorization"] = f"Bearer {token}"

    workspaces = ok(bearer.get(f"{api}/workspaces", timeout=10))["items"]
    assert [w["name"] for w in workspaces] == ["My workspace"]
    workspace_id = workspaces[0]["id"]

    with DiscordWebhookStandIn() as discord:
        account_id = connect_discord_webhook(bearer, api, workspace_id, discord.webhook_url())
        publication_id = publish_now(bearer, api, workspace_id, "Hello through nginx", [account_id])

        def published() -> Any:
            body = ok(bearer.get(f"{api}/publications/{publication_id}", timeout=10))
            return body if body["destinations"][0]["status"] == "published" else None

        result = topology.wait_until(published, timeout=60, what="the destination to publish")
        assert result["status"] == "published"
        assert result["destinations"][0]["external_id"]
        time.sleep(0.5)  # a duplicate delivery would arrive about now
        assert discord.posts_accepted == 1
        posts = discord.messages.values()
        assert [m["content"] for m in posts] == ["Hello through nginx"]

    connect_mastodon_through_the_proxy(topology, bearer, workspace_id)

    # The app's absolute URLs are the public origin (the proxy's), not the upstream address
    # gunicorn listens on nor the port-less Host nginx forwards.
    assert result["$schema"].startswith(f"{topology.url}/api/v1/schemas/")
    missing = bearer.get(f"{api}/publications/pub_doesnotexist", timeout=10)
    assert missing.status_code == 404
    problem = missing.json()
    assert problem["type"].startswith(f"{topology.url}/docs/problems/")
    assert client().get(problem["type"], timeout=10).status_code == 200


def test_docs_and_their_static_files_load_through_the_proxy(topology: Topology) -> None:
    with topology.diagnostics():
        _docs_and_their_static_files_load_through_the_proxy(topology)


def _docs_and_their_static_files_load_through_the_proxy(topology: Topology) -> None:
    browser = client()
    page = browser.get(f"{topology.url}/docs/", timeout=10)
    assert page.status_code == 200
    assets = _Assets()
    assets.feed(page.text)
    assert any(u.endswith(".js") for u in assets.urls), assets.urls
    assert any(u.endswith(".css") for u in assets.urls), assets.urls
    for url in assets.urls:
        response = browser.get(f"{topology.url}{url}", timeout=10)
        assert response.status_code == 200, (url, response.status_code)
        assert len(response.content) > 0, url
    schema = browser.get(f"{topology.url}/docs/openapi.json", timeout=30)
    assert schema.status_code == 200
    assert schema.json()["openapi"].startswith("3.")


def _wait_for_a_fresh_minute() -> None:
    """The failure budget counts per clock minute: start well inside one."""
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)


def test_the_client_address_is_the_one_the_proxy_saw(topology: Topology) -> None:
    """``HERALD_NUM_PROXIES=1``: the failed-authentication budget belongs to the address nginx
    appended to X-Forwarded-For. What a client writes into X-Forwarded-For does not spread its
    failures over made-up addresses, and another client (another loopback address, as the
    proxy sees it) keeps its own budget."""
    with topology.diagnostics():
        _the_client_address_is_the_one_the_proxy_saw(topology)


def _the_client_address_is_the_one_the_proxy_saw(topology: Topology) -> None:
    _wait_for_a_fresh_minute()
    url = f"{topology.url}/api/v1/workspaces"
    bad = {"Authorization": "Bearer hrld_00000000_" + "x" * 43}
    first = client("127.0.0.2")
    statuses = [
        first.get(
            url, headers={**bad, "X-Forwarded-For": f"198.51.100.{n}"}, timeout=10
        ).status_code
        for n in range(AUTH_FAILURES_PER_MINUTE + 1)
    ]
    assert statuses == [401] * AUTH_FAILURES_PER_MINUTE + [429]
    assert first.get(url, headers=bad, timeout=10).status_code == 429

    other = client("127.0.0.3")
    assert other.get(url, headers=bad, timeout=10).status_code == 401


def test_scheme_headers_from_the_client_do_not_reach_gunicorn(topology: Topology) -> None:
    """gunicorn trusts every secure-scheme header from the proxy's address
    (``FORWARDED_ALLOW_IPS``); nginx overwrites ``X-Forwarded-Proto`` and removes the other two,
    so a client's own cannot contradict it (gunicorn answers 400 to contradictory ones)."""
    with topology.diagnostics():
        forged = {
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Ssl": "on",
            "X-Forwarded-Protocol": "ssl",
        }
        response = client().get(f"{topology.url}/api/v1/health", headers=forged, timeout=10)
        assert response.status_code == 200, response.text[:300]


# --- the compose environment, as the processes really have it ------------------------------------

# The topology's process for each compose service it runs.
PROCESS_OF_SERVICE = {"web": "gunicorn", "worker": "worker", "beat": "beat"}


def _compose_default(compose: dict[str, Any], service: str, name: str) -> str:
    """The default written in ``service``'s ``NAME: ${NAME:-default}`` (the test's .env sets
    neither of the variables read this way)."""
    raw = str(compose["services"][service]["environment"][name])
    match = re.fullmatch(r"\$\{" + name + r":-([^}]*)\}", raw)
    assert match, f"{service}.{name} is no longer ${{{name}:-default}}: {raw!r}"
    return match.group(1)


def test_each_process_has_the_environment_of_its_compose_service(topology: Topology) -> None:
    """What each process started with (``/proc/<pid>/environ``), against docker-compose.yml read
    here: every variable its service's ``environment`` names, at compose's value where no service
    of the test stands in; the worker's database pool and concurrency at the file's defaults, and
    the pool for the worker only."""
    with topology.diagnostics():
        compose = load_compose()
        dotenv = topology.dotenv()
        replaced = set(topology.overrides())
        for service, name in PROCESS_OF_SERVICE.items():
            running = topology.process(name).environ()
            declared = compose["services"][service]["environment"]
            assert not set(declared) - set(running), (service, sorted(set(declared) - set(running)))
            for variable in set(declared) - replaced:
                expected = interpolate(str(declared[variable]), dotenv)
                assert running[variable] == expected, (service, variable)
            for variable, value in topology.overrides().items():
                assert running[variable] == value, (service, variable)
            if service != "worker":
                # Compose gives it to the worker only (the test's .env, passed to every app
                # container, does not set it).
                assert "HERALD_DB_POOL_SIZE" not in running, service

        worker = topology.process("worker")
        running = worker.environ()
        pool = _compose_default(compose, "worker", "HERALD_DB_POOL_SIZE")
        concurrency = _compose_default(compose, "worker", "HERALD_WORKER_CONCURRENCY")
        assert (running["HERALD_DB_POOL_SIZE"], running["HERALD_WORKER_CONCURRENCY"]) == (
            pool,
            concurrency,
        )
        # The worker's start-up banner: the settings read it (Celery's threads pool).
        assert re.search(rf"concurrency: {concurrency} \(thread", worker.log()), worker.log()


class _HeldWebhooks(DiscordWebhookStandIn):
    """Discord webhooks (``hooks`` of them) that hold every message post until ``release`` is
    set: sends in flight at the provider for as long as the test needs."""

    def __init__(self, hooks: int) -> None:
        super().__init__()
        first = self.webhooks[WEBHOOK_ID]
        for n in range(1, hooks):
            self.webhooks[str(int(WEBHOOK_ID) + n)] = {**first, "token": f"{first['token']}{n}"}
        self.release = threading.Event()
        self.held = 0

    def execute(self, request: Request, webhook_id: str, token: str) -> Reply:
        with self.lock:
            self.held += 1
        self.release.wait(timeout=120)
        return super().execute(request, webhook_id, token)

    def in_flight(self) -> int:
        with self.lock:
            return self.held


def test_the_worker_shares_its_database_pool_between_sends(topology: Topology) -> None:
    """docker-compose.yml's worker (``HERALD_DB_POOL_SIZE`` connections for
    ``HERALD_WORKER_CONCURRENCY`` threads): with more sends waiting for the provider at once than
    the pool has connections, the worker holds no more PostgreSQL connections than the pool's
    size (each send gives its connection back before the call: config/db/__init__.py); without
    the pool, each waiting thread would keep one. Counted from the worker's own sockets, while
    the stand-in holds every send."""
    with topology.diagnostics():
        _the_worker_shares_its_database_pool_between_sends(topology)


def _the_worker_shares_its_database_pool_between_sends(topology: Topology) -> None:
    worker = topology.process("worker")
    running = worker.environ()
    pool, concurrency = (
        int(running["HERALD_DB_POOL_SIZE"]),
        int(running["HERALD_WORKER_CONCURRENCY"]),
    )
    assert pool < SENDS_IN_FLIGHT < concurrency, "choose SENDS_IN_FLIGHT between the two"
    api = f"{topology.url}/api/v1"
    bearer = client()
    bearer.headers["Authorization"] = f"Bearer {sign_in_and_create_token(topology, client())}"
    workspace_id = ok(bearer.get(f"{api}/workspaces", timeout=10))["items"][0]["id"]

    with _HeldWebhooks(ACCOUNTS) as provider:
        try:
            accounts = [
                connect_discord_webhook(bearer, api, workspace_id, provider.webhook_url(hook))
                for hook in provider.webhooks
            ]
            publications = [
                publish_now(bearer, api, workspace_id, f"Held send {n}", accounts)
                for n in range(SENDS_IN_FLIGHT // ACCOUNTS)
            ]

            topology.wait_until(
                lambda: provider.in_flight() >= SENDS_IN_FLIGHT,
                timeout=60,
                what=f"{SENDS_IN_FLIGHT} sends waiting at the provider",
            )
            connections = worker.connections_to(topology.postgres.port)
            assert provider.in_flight() == SENDS_IN_FLIGHT
            assert 1 <= connections <= pool, (connections, pool, SENDS_IN_FLIGHT)
        finally:
            provider.release.set()

        def published() -> bool:
            return all(
                ok(bearer.get(f"{api}/publications/{pid}", timeout=10))["status"] == "published"
                for pid in publications
            )

        topology.wait_until(published, timeout=60, what="the held sends to publish")
        assert provider.posts_accepted == SENDS_IN_FLIGHT
