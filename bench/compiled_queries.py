#!/usr/bin/env python
"""Compiled hot queries (``config/queries.py``) measured alone: each use site as shipped against
the same code with its ``CompiledQuery`` replaced by the plain queryset it compiles.

    .venv/bin/python bench/compiled_queries.py                      # 15 batches of 200 per variant
    .venv/bin/python bench/compiled_queries.py --batches 3 --requests 20   # a smoke run

In one process on PostgreSQL + Redis: the requests go through Django's WSGI handler (the real
middleware, views and a bearer token, no HTTP server); the destination read calls the compiled
query directly, and ``delivery_send`` sends that destination to the Mastodon stand-in
(tests/providers/mastodon/standin.py, its own process on 127.0.0.1; the destination is queued
again before each call, outside the measurement). Per experiment (a target and the use site switched for it), batches of
``--requests`` calls alternate between the two variants, shipped first in odd batches and plain
first in even ones; the figure is this thread's CPU (``time.thread_time``) per call, which other
processes on a busy machine inflate far less than wall time. The plain variant is a switch of this
script only: the use site's module attribute is replaced, for the batch, by an object with the
same ``values``/``instances`` methods that builds and runs the plain queryset every call.

The database (``--database-url``) is migrated and seeded once (kept between runs): bench/api.py's
user, 20 workspaces, 250 access-audit events and a read-only token, plus a publication of two
destinations (the first is pointed at a Mastodon account on the stand-in of the run). Only databases named ``herald_bench*`` are created here; another
name must exist already. Writes bench/results/compiled_queries.json.
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/compiled_queries.py` puts bench/ first on the path
    sys.path.insert(0, str(ROOT))

from bench import _common as common  # noqa: E402  (after the path set-up above)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_queries"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
RESULTS = ROOT / "bench" / "results" / "compiled_queries.json"
SEND_EMAIL = "bench-send@example.invalid"


def configure(database_url: str, redis_url: str) -> None:
    common.configure_django(
        database_url,
        secret_key="bench-queries-only-" + secrets.token_urlsafe(32),
        redis_url=redis_url,
        HERALD_ALLOW_PRIVATE_PROVIDER_URLS="true",  # the stand-in listens on 127.0.0.1
        NO_PROXY="127.0.0.1,localhost",
    )


# --- Seeding ---------------------------------------------------------------------------------


def seed_delivery() -> tuple[str, str]:
    """(a destination id, its publication id): a publishing publication whose first destination
    is sending and the second published, on Mastodon accounts of an app (``select_related``)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from bench.scale import bulk_accounts, bulk_publications
    from providers import credentials
    from publishing.models import Destination, ProviderApp
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import organization_create, workspace_create

    found = Destination.objects.filter(
        publication__created_by__email=SEND_EMAIL, position=0
    ).first()
    if found is not None:
        return str(found.pk), str(found.publication_id)
    with transaction.atomic():
        owner = User.objects.create_user(SEND_EMAIL, secrets.token_urlsafe(24))
        actor = Actor(user=owner)
        organization = organization_create(actor=actor, name="Bench queries")
        workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Send")
        app = ProviderApp.objects.create(
            provider="mastodon",
            instance_url="https://m0.example",
            redirect_uri="http://127.0.0.1/api/v1/accounts/oauth/callback",
            credentials_encrypted=credentials.encrypt({"client_id": "c"}),
        )
        workspace_ids, now = [str(workspace.pk)], timezone.now()
        with connection.cursor() as cursor:
            sealed = credentials.encrypt({"access_token": "bench"})
            bulk_accounts(
                cursor,
                workspace_ids=workspace_ids,
                now=now,
                per_workspace=4,
                credentials=sealed,
                mastodon_app_ids=[str(app.pk)],
                tag="send",
            )
            bulk_publications(
                cursor,
                workspace_ids=workspace_ids,
                now=now,
                per_workspace=1,
                accounts_per_workspace=4,
                destinations=2,
                events=1,
                owner_id=owner.pk,
            )
        found = Destination.objects.get(publication__created_by=owner, position=0)
    return str(found.pk), str(found.publication_id)


def seed() -> dict[str, str]:
    from django.core.management import call_command
    from django.db import connection

    from bench.api import seed as seed_api

    call_command("migrate", interactive=False, verbosity=0)
    workspace_id, token, _ = seed_api(workspaces=20, events=250)
    destination_id, publication_id = seed_delivery()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "workspace_id": workspace_id,
        "token": token,
        "destination_id": destination_id,
        "publication_id": publication_id,
    }


# --- The plain variant -----------------------------------------------------------------------


class PlainQuery:
    """A ``CompiledQuery`` stand-in: ``build(*shape, **values)`` is the plain queryset."""

    def __init__(self, build: Callable[..., Any]) -> None:
        self.build = build

    def values(self, *, shape: tuple[Any, ...] = (), **values: Any) -> list[Any]:
        return list(self.build(*shape, **values))

    def instances(self, *, shape: tuple[Any, ...] = (), **values: Any) -> list[Any]:
        return list(self.build(*shape, **values))


def _plain_token(*, token_id: Any) -> Any:
    from workspaces.models import ApiToken

    return ApiToken.objects.select_related("user").filter(pk=token_id)[:1]


def _plain_audit(limit: int, columns: Any, *, workspace_id: Any, user_id: Any) -> Any:
    from django.db.models import Exists

    from workspaces.models import AccessAuditEvent, WorkspaceMembership
    from workspaces.selectors import roles_at_least

    admin = WorkspaceMembership.objects.filter(
        workspace_id=workspace_id,
        user_id=user_id,
        status=WorkspaceMembership.Status.ACTIVE,
        role__in=roles_at_least(WorkspaceMembership.Role.ADMIN),
    )
    events = AccessAuditEvent.objects.filter(Exists(admin), workspace_id=workspace_id).order_by(
        "-created_at", "-id"
    )
    return (events if columns is None else events.values_list(*columns))[:limit]


def _plain_workspaces(limit: int, scoped: bool, after: bool, **values: Any) -> Any:
    from config.api.pagination import keyset_after, keyset_ordered
    from workspaces.selectors import _accessible_workspaces

    token_workspace_id = values["token_workspace_id"] if scoped else None
    queryset = keyset_ordered(_accessible_workspaces(values["user_id"], token_workspace_id))
    if after:
        queryset = keyset_after(queryset, values["moment"], values["last_pk"])
    return queryset[: limit + 1]


def _plain_destination(*, destination_id: Any) -> Any:
    from publishing.models import Destination

    return Destination.objects.select_related("publication", "account", "account__app").filter(
        pk=destination_id
    )


# Use site -> (module, attribute, plain builder) of each CompiledQuery it holds.
SITES: dict[str, list[tuple[str, str, Callable[..., Any]]]] = {
    "token": [("workspaces.authentication", "TOKEN_WITH_USER", _plain_token)],
    "audit_page": [("workspaces.selectors", "ADMIN_AUDIT_PAGE", _plain_audit)],
    "workspace_page": [("workspaces.selectors", "WORKSPACE_PAGE", _plain_workspaces)],
    "destination": [
        ("publishing.services.delivery.send", "DESTINATION_FOR_SEND", _plain_destination)
    ],
}


@contextmanager
def plain(sites: tuple[str, ...]) -> Iterator[None]:
    """The use sites' compiled queries replaced by their plain querysets, for the block."""
    import importlib

    kept: list[tuple[Any, str, Any]] = []
    for site in sites:
        for module_name, attribute, build in SITES[site]:
            module = importlib.import_module(module_name)
            kept.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, PlainQuery(build))
    try:
        yield
    finally:
        for module, attribute, original in kept:
            setattr(module, attribute, original)


# --- Targets ---------------------------------------------------------------------------------


def wsgi_get(path: str, token: str) -> Callable[[], None]:
    """One GET through Django's WSGI handler (the served path, without the HTTP server)."""
    from django.core.handlers.wsgi import WSGIHandler

    handler = WSGIHandler()
    route, _, query = path.partition("?")
    status: list[str] = []

    def start_response(value: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        status.append(value)
        return lambda data: None

    def call() -> None:
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": route,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.url_scheme": "http",
        }
        response = handler(environ, start_response)
        b"".join(response)
        response.close()  # request_finished, as a server does
        if not status.pop().startswith("200"):
            raise SystemExit(f"{path}: {status}")

    return call


def destination_read(destination_id: str) -> Callable[[], None]:
    from publishing.services.delivery import send

    def call() -> None:
        assert send.DESTINATION_FOR_SEND.instances(destination_id=destination_id)

    return call


def mastodon_standin() -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """The Mastodon stand-in (tests/providers/mastodon/standin.py) in its own process, on
    127.0.0.1; its first line says where and with which token."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.providers.mastodon.standin", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None
    ready: dict[str, Any] = json.loads(process.stdout.readline())
    return process, ready


def reset_for_send(destination_id: str, publication_id: str) -> Callable[[], None]:
    """The destination queued again and its publication publishing (not measured)."""
    from publishing.models import Destination, Publication

    def prepare() -> None:
        Destination.objects.filter(pk=destination_id).update(
            status="queued", next_attempt_at=None, claim_expires_at=None
        )
        Publication.objects.filter(pk=publication_id).update(status="publishing")

    return prepare


def send_experiments(ids: dict[str, str], standin: dict[str, Any]) -> list[Experiment]:
    """``delivery_send`` of the seeded destination to the stand-in: the claim, the compiled read,
    readiness, the provider call, the outcome transaction and ``aggregate`` (writes included)."""
    from providers import credentials, get_adapter
    from publishing.models import Account, Destination, ProviderApp
    from publishing.services.delivery import delivery_send

    fixtures = standin["fixtures"]
    destination = Destination.objects.select_related("account").get(pk=ids["destination_id"])
    app, _ = ProviderApp.objects.get_or_create(
        provider="mastodon",
        instance_url=fixtures["instance_url"],
        redirect_uri="",
        defaults={"credentials_encrypted": credentials.encrypt({"client_id": "c"})},
    )
    account, _ = Account.objects.update_or_create(
        workspace_id=destination.account.workspace_id,
        provider="mastodon",
        external_id="bench-send",
        defaults={
            "username": fixtures["username"],
            "instance_url": fixtures["instance_url"],
            "granted_scopes": ["read", "write"],
            "app": app,
            "credentials_encrypted": credentials.encrypt(
                {"access_token": fixtures["access_token"]}
            ),
        },
    )
    profile = get_adapter("mastodon").capabilities.profiles[0].key
    Destination.objects.filter(pk=destination.pk).update(account=account, profile=profile)
    prepare = reset_for_send(ids["destination_id"], ids["publication_id"])
    send = Experiment(
        "send to the local stand-in / destination",
        ("destination",),
        lambda: delivery_send(destination_id=ids["destination_id"]),
        prepare,
    )
    return [send]


@dataclass(frozen=True)
class Experiment:
    name: str
    sites: tuple[str, ...]  # switched to plain in the plain variant
    call: Callable[[], None]
    prepare: Callable[[], None] | None = None  # before each call, not measured


def experiments(ids: dict[str, str]) -> list[Experiment]:
    token = ids["token"]
    audit = f"/api/v1/workspaces/{ids['workspace_id']}/access-audit?limit="
    return [
        Experiment("audit_200 / audit page", ("audit_page",), wsgi_get(audit + "200", token)),
        Experiment("audit_200 / token", ("token",), wsgi_get(audit + "200", token)),
        Experiment("audit_200 / both", ("audit_page", "token"), wsgi_get(audit + "200", token)),
        Experiment("audit_1 / token", ("token",), wsgi_get(audit + "1", token)),
        Experiment("audit_1 / audit page", ("audit_page",), wsgi_get(audit + "1", token)),
        Experiment("audit_1 / both", ("audit_page", "token"), wsgi_get(audit + "1", token)),
        Experiment(
            "workspaces_20 / workspace page",
            ("workspace_page",),
            wsgi_get("/api/v1/workspaces?limit=20", token),
        ),
        Experiment(
            "workspaces_20 / both",
            ("workspace_page", "token"),
            wsgi_get("/api/v1/workspaces?limit=20", token),
        ),
        Experiment(
            "destination read (DESTINATION_FOR_SEND)",
            ("destination",),
            destination_read(ids["destination_id"]),
        ),
    ]


# --- Measuring -------------------------------------------------------------------------------


def batch_ms(experiment: Experiment, requests: int) -> float:
    """This thread's CPU per call, in ms, over ``requests`` calls (``prepare`` not counted)."""
    if experiment.prepare is None:
        started = time.thread_time()
        for _ in range(requests):
            experiment.call()
        return (time.thread_time() - started) / requests * 1000
    spent = 0.0
    for _ in range(requests):
        experiment.prepare()
        started = time.thread_time()
        experiment.call()
        spent += time.thread_time() - started
    return spent / requests * 1000


def query_count(experiment: Experiment) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(2):  # the first call compiles, or writes the token's last use
        if experiment.prepare is not None:
            experiment.prepare()
        with CaptureQueriesContext(connection) as captured:
            experiment.call()
    return len(captured)


def summary(values: list[float]) -> dict[str, Any]:
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return {
        "median_ms": round(statistics.median(values), 4),
        "q1_ms": round(quartiles[0], 4),
        "q3_ms": round(quartiles[2], 4),
        "min_ms": round(min(values), 4),
        "max_ms": round(max(values), 4),
        "batches_ms": [round(value, 4) for value in values],
    }


def run(experiment: Experiment, args: argparse.Namespace) -> dict[str, Any]:
    """Alternating batches of the shipped and plain variants of one experiment."""
    samples: dict[str, list[float]] = {"shipped": [], "plain": []}
    with plain(experiment.sites):
        queries_plain = query_count(experiment)
    queries_shipped = query_count(experiment)
    load_before = common.loadavg()
    for number in range(args.batches):
        for variant in ("shipped", "plain") if number % 2 == 0 else ("plain", "shipped"):
            sites = experiment.sites if variant == "plain" else ()
            with plain(sites):
                batch_ms(experiment, args.warmup)
                samples[variant].append(batch_ms(experiment, args.requests))
    shipped, plain_ = (statistics.median(samples[v]) for v in ("shipped", "plain"))
    return {
        "experiment": experiment.name,
        "sites": list(experiment.sites),
        "shipped": summary(samples["shipped"]),
        "plain": summary(samples["plain"]),
        # Positive: the compiled query saves that share of the plain variant's CPU.
        "saving": round(1 - shipped / plain_, 4),
        "queries": {"shipped": queries_shipped, "plain": queries_plain},
        "load": {"before": load_before, "after": common.loadavg()},
    }


def print_row(result: dict[str, Any]) -> None:
    shipped, plain_ = result["shipped"], result["plain"]
    print(
        f"{result['experiment']:<62} shipped {shipped['median_ms']:.3f} ms "
        f"[{shipped['q1_ms']:.3f}-{shipped['q3_ms']:.3f}]  plain {plain_['median_ms']:.3f} ms "
        f"[{plain_['q1_ms']:.3f}-{plain_['q3_ms']:.3f}]  saving {result['saving']:+.1%}  "
        f"SQL {result['queries']['shipped']}/{result['queries']['plain']}  "
        f"load {result['load']['before'][0]:.2f}->{result['load']['after'][0]:.2f}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--batches", type=int, default=15, help="per variant, alternating")
    parser.add_argument("--requests", type=int, default=200, help="calls per batch")
    parser.add_argument("--warmup", type=int, default=10, help="calls before each batch")
    parser.add_argument("--only", help="experiments whose name contains this text")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    if urlsplit(args.database_url).path.lstrip("/").startswith("herald_bench"):
        common.ensure_database(args.database_url, fresh=False)
    configure(args.database_url, args.redis_url)
    ids = seed()
    process, standin = mastodon_standin()
    try:
        chosen = [
            e
            for e in [*experiments(ids), *send_experiments(ids, standin)]
            if not args.only or args.only in e.name
        ]
        started = common.loadavg()
        results = []
        for experiment in chosen:
            results.append(run(experiment, args))
            print_row(results[-1])
    finally:
        process.terminate()
        process.wait(timeout=10)
    payload = {
        "benchmark": "compiled_queries",
        "revision": common.git_revision(),
        "machine": common.machine(),
        "parameters": {k: v for k, v in vars(args).items() if k != "output"} | {"output": None},
        "load": {"start": started, "end": common.loadavg()},
        "results": results,
    }
    common.write_results(payload, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
