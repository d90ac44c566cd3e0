#!/usr/bin/env python
"""Scale benchmark: the cost of the hot reads stays flat as the data grows.

    .venv/bin/python bench/scale.py                  # or: make bench-scale
    .venv/bin/python bench/scale.py --rounds 5 --reuse-db

What it does (details in bench/README.md, "Scale benchmark"):

1. seeds two PostgreSQL databases the same way, in SQL (``INSERT … SELECT`` over
   ``generate_series``, rows shaped as the models make them): ``herald_bench_scale`` with
   1,000 workspaces of 1,000 publications (2 destinations and 2 events each), 1,000 access-audit
   events and 10 accounts each (1,000,000 publications and audit events, 10,000 accounts), and
   ``herald_bench_scale_small`` with only the measured workspace (1,000 publications and
   1,000 audit events). Both also hold a workspace with 300 accounts for the readiness
   projection. The measured workspaces have the same content in both databases;
2. measures, in a child process per database (rounds alternate between the two), the server
   CPU of each request: the Django process's CPU plus the CPU of its PostgreSQL backend, both
   from ``/proc/<pid>/schedstat`` (nanoseconds), per request through Django's WSGI handler
   (``django.test.Client``: middleware, authentication, throttling, view, JSON);
3. prints the per-request CPU medians side by side and their ratio, writes
   ``bench/results/scale.json`` and drops both databases (unless ``--reuse-db``).

Exit status 1 when a request costs more than ``--max-ratio`` (1.25) times as much on the large
database as on the small one.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/scale.py` puts bench/ first on the path, not ROOT
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402  (after the path set-up above)
    configure_django,
    database_name,
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    write_results,
)

LARGE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_scale"
SMALL_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_scale_small"
RESULTS = ROOT / "bench" / "results" / "scale.json"
OWNER_EMAIL = "bench-scale@example.invalid"
READINESS_ACCOUNTS = 300
DEEP_PAGE_LIMIT = 10
DEEP_PAGE_CURSORS = 50


# --- Bulk seeding in SQL (also used by tests/publishing/test_query_plans.py) ---------------------------


def _provider_rows() -> list[tuple[int, str, str, str, bool, str]]:
    """(n, provider, account kind, granted scopes as JSON, federated, first output profile)."""
    from providers import PROVIDERS, get_adapter

    rows = []
    for n, provider in enumerate(PROVIDERS):
        caps = get_adapter(provider).capabilities
        rows.append(
            (
                n,
                provider,
                caps.account_kind,
                json.dumps(list(caps.required_scopes)),
                bool(caps.federated),
                caps.profiles[0].key,
            )
        )
    return rows


def bulk_filler_workspaces(
    cursor: Any, *, organization_id: Any, count: int, now: datetime, tag: str
) -> list[str]:
    """``count`` workspaces of ``organization_id`` (no members); their ids."""
    cursor.execute(
        """
        INSERT INTO workspaces_workspace (id, organization_id, name, timezone, plan_id, created_at, updated_at)
        SELECT md5(%(tag)s || 'w' || i)::uuid, %(org)s, 'Filler ' || %(tag)s || ' ' || i, 'UTC', 'self_hosted',
               %(now)s - i * interval '1 second', %(now)s - i * interval '1 second'
        FROM generate_series(1, %(count)s) AS i
        RETURNING id
        """,
        {"tag": tag, "org": organization_id, "count": count, "now": now},
    )
    return [str(row[0]) for row in cursor.fetchall()]


def bulk_accounts(
    cursor: Any,
    *,
    workspace_ids: list[str],
    per_workspace: int,
    credentials: str,
    mastodon_app_ids: list[str],
    now: datetime,
    tag: str,
) -> None:
    """``per_workspace`` active accounts in each workspace, over every provider in turn (the
    Mastodon ones on the given apps' instances), as ``account_connect`` stores them. Account
    ``k`` of workspace ``w`` has the id ``md5(w || 'a' || k)``."""
    providers = _provider_rows()
    cursor.execute(
        f"""
        WITH p(n, provider, kind, scopes, federated, profile) AS (VALUES {_values(providers)})
        INSERT INTO publishing_account (id, workspace_id, provider, external_id, username, display_name,
            avatar_url, profile_url, instance_url, account_kind, granted_scopes, credentials_encrypted, app_id,
            status, status_reason, token_expires_at, connected_by_id, created_at, updated_at)
        SELECT md5(w.id::text || 'a' || k)::uuid, w.id, p.provider,
               %(tag)s || '-' || md5(w.id::text || 'a' || k), 'user' || k, 'User ' || k, '', '',
               CASE WHEN p.federated THEN 'https://m' || (k %% 7) || '.example' ELSE '' END,
               p.kind, p.scopes, %(credentials)s,
               CASE WHEN p.federated THEN (%(apps)s::uuid[])[k %% cardinality(%(apps)s::uuid[]) + 1] END,
               'active', '', NULL, NULL, %(now)s - k * interval '1 minute', %(now)s - k * interval '1 minute'
        FROM unnest(%(workspaces)s::uuid[]) AS w(id)
        CROSS JOIN generate_series(0, %(per)s - 1) AS k
        JOIN p ON p.n = k %% %(providers)s
        """,  # noqa: S608  (the VALUES placeholders are ours, not input)
        {
            **_named(providers),
            "apps": mastodon_app_ids,
            "tag": tag,
            "credentials": credentials,
            "now": now,
            "workspaces": workspace_ids,
            "per": per_workspace,
            "providers": len(providers),
        },
    )


def _values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join(
        "("
        + ", ".join(f"%(p{i}_{j})s" + ("::jsonb" if j == 3 else "") for j in range(len(row)))
        + ")"
        for i, row in enumerate(rows)
    )


def _named(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    return {f"p{i}_{j}": value for i, row in enumerate(rows) for j, value in enumerate(row)}


# Publication ``i`` of a workspace has status STATUSES[i % 20]: mostly published, 10 % scheduled
# (in the future: an idle dispatcher has nothing due), some drafts, failures and cancellations.
STATUSES = ["published"] * 14 + [
    "scheduled",
    "scheduled",
    "draft",
    "failed",
    "partially_published",
    "canceled",
]
_PUBLICATION = """
    SELECT w.id AS workspace_id, i, md5(w.id::text || 'p' || i)::uuid AS id,
           (%(statuses)s::text[])[i %% 20 + 1] AS status,
           %(now)s - i * interval '1 minute' AS created_at
    FROM unnest(%(workspaces)s::uuid[]) AS w(id)
    CROSS JOIN generate_series(1, %(per)s) AS i
"""


def bulk_publications(
    cursor: Any,
    *,
    workspace_ids: list[str],
    per_workspace: int,
    accounts_per_workspace: int,
    destinations: int,
    events: int,
    owner_id: Any,
    now: datetime,
) -> None:
    """``per_workspace`` publications in each workspace, newest first one minute apart, each with
    ``destinations`` destinations on the workspace's accounts (from ``bulk_accounts``, at least
    ``destinations`` of them) and ``events`` events, in the states the services leave them in."""
    assert accounts_per_workspace >= destinations
    providers = _provider_rows()
    params = {
        **_named(providers),
        "statuses": STATUSES,
        "now": now,
        "workspaces": workspace_ids,
        "per": per_workspace,
        "owner": owner_id,
        "accounts": accounts_per_workspace,
        "destinations": destinations,
        "events": events,
        "providers": len(providers),
    }
    cursor.execute(
        f"""
        INSERT INTO publishing_publication (id, workspace_id, created_by_id, status, text, media_ids, revision,
            scheduled_at, execution_intent, created_at, updated_at)
        SELECT pub.id, pub.workspace_id, %(owner)s, pub.status, 'Bench post number ' || pub.i, '[]'::jsonb, 1,
               CASE WHEN pub.status = 'scheduled' THEN %(now)s + (pub.i %% 1000 + 1) * interval '1 hour' END,
               'normal', pub.created_at, pub.created_at
        FROM ({_PUBLICATION}) AS pub
        """,  # noqa: S608  (fixed text)
        params,
    )
    cursor.execute(
        f"""
        WITH p(n, provider, kind, scopes, federated, profile) AS (VALUES {_values(providers)})
        INSERT INTO publishing_destination (id, publication_id, account_id, position, profile, text, media_ids,
            options, status, idempotency_key, attempts, due_at, next_attempt_at, claimed_at, claim_expires_at,
            deadline_at, write_started_at, first_attempt_at, external_id, external_url, error_kind, error_message,
            action, readiness, published_at, updated_at)
        SELECT md5(pub.id::text || 'd' || j)::uuid, pub.id,
               md5(pub.workspace_id::text || 'a' || ((pub.i + j) %% %(accounts)s))::uuid, j, p.profile,
               NULL, NULL, '{{}}'::jsonb, d.status, md5(pub.id::text || 'd' || j),
               CASE WHEN d.status IN ('published', 'failed') THEN 1 ELSE 0 END,
               CASE WHEN d.status = 'scheduled' THEN %(now)s + (pub.i %% 1000 + 1) * interval '1 hour'
                    WHEN d.status IN ('draft', 'canceled') THEN NULL ELSE pub.created_at END,
               NULL, NULL, NULL,
               CASE WHEN d.status = 'scheduled' THEN %(now)s + (pub.i %% 1000 + 25) * interval '1 hour'
                    WHEN d.status IN ('draft', 'canceled') THEN NULL ELSE pub.created_at + interval '1 day' END,
               CASE WHEN d.status IN ('published', 'failed') THEN pub.created_at END,
               CASE WHEN d.status IN ('published', 'failed') THEN pub.created_at END,
               CASE WHEN d.status = 'published' THEN 'ext-' || left(md5(pub.id::text || j), 16) ELSE '' END,
               '', CASE WHEN d.status = 'failed' THEN 'permanent' ELSE '' END,
               CASE WHEN d.status = 'failed' THEN 'The provider refused this post.' ELSE '' END,
               CASE WHEN d.status = 'failed' THEN 'edit' ELSE '' END, NULL,
               CASE WHEN d.status = 'published' THEN pub.created_at + interval '2 seconds' END,
               pub.created_at + interval '2 seconds'
        FROM ({_PUBLICATION}) AS pub
        CROSS JOIN generate_series(0, %(destinations)s - 1) AS j
        CROSS JOIN LATERAL (SELECT CASE
            WHEN pub.status = 'partially_published' THEN CASE WHEN j = 0 THEN 'published' ELSE 'failed' END
            ELSE pub.status END AS status) AS d
        JOIN p ON p.n = ((pub.i + j) %% %(accounts)s) %% %(providers)s
        """,  # noqa: S608  (fixed text)
        params,
    )
    cursor.execute(
        f"""
        INSERT INTO publishing_publicationevent (publication_id, destination_id, kind, status, detail, data,
            created_at)
        SELECT pub.id, NULL,
               CASE WHEN e = 0 THEN 'publication.created'
                    WHEN pub.status = 'draft' THEN 'publication.replaced'
                    ELSE 'publication.' || pub.status END,
               CASE WHEN e = 0 THEN 'draft' ELSE pub.status END, '', '{{}}'::jsonb,
               pub.created_at + e * interval '1 second'
        FROM ({_PUBLICATION}) AS pub
        CROSS JOIN generate_series(0, %(events)s - 1) AS e
        ORDER BY pub.created_at, pub.id, e
        """,  # noqa: S608  (fixed text)
        params,
    )


def bulk_access_audit(
    cursor: Any, *, workspace_ids: list[str], per_workspace: int, actor_user_id: Any, now: datetime
) -> None:
    """``per_workspace`` access-audit events in each workspace, one second apart, with varied
    microseconds (as bench/api.py seeds them)."""
    from workspaces.models import AccessAuditEvent

    cursor.execute(
        """
        INSERT INTO workspaces_accessauditevent (id, workspace_id, action, actor_user_id, invitation_id,
            previous_role, previous_status, role, status, subject_email, subject_user_id, created_at)
        SELECT md5(w.id::text || 'e' || n)::uuid, w.id,
               (%(actions)s::text[])[n %% cardinality(%(actions)s::text[]) + 1], %(actor)s,
               CASE WHEN n %% 3 = 0 THEN 'inv-' || n ELSE '' END,
               CASE WHEN n %% 2 = 1 THEN 'editor' ELSE '' END, CASE WHEN n %% 2 = 1 THEN 'active' ELSE '' END,
               CASE WHEN n %% 2 = 1 THEN 'admin' ELSE 'viewer' END, 'active',
               'member' || n || '@example.invalid', n::text,
               date_trunc('second', %(now)s::timestamptz) - n * interval '1 second'
                   - ((n * 7919 + 1) %% 1000000) * interval '1 microsecond'
        FROM unnest(%(workspaces)s::uuid[]) AS w(id)
        CROSS JOIN generate_series(1, %(per)s) AS n
        """,
        {
            "actions": list(AccessAuditEvent.Action.values),
            "actor": str(actor_user_id),
            "now": now,
            "workspaces": workspace_ids,
            "per": per_workspace,
        },
    )


# --- Seeding a benchmark database ------------------------------------------------------------

MEASURED = "Measured"
READINESS = "Readiness"
# Bench-only keys (the data are throw-away and the databases local): fixed so that a database kept
# with --reuse-db can be measured again by a new process.
BENCH_CREDENTIALS_KEY = "aGVyYWxkLWJlbmNoLXNjYWxlLW9ubHktMzJieXRlcyE="
BENCH_SECRET_KEY = "bench-scale-only-not-a-secret-0123456789abcdefghij"  # noqa: S105


def configure(database_url: str) -> None:
    # No Redis: the in-process cache; no broker message in an idle tick.
    configure_django(
        database_url, secret_key=BENCH_SECRET_KEY, HERALD_CREDENTIALS_KEY=BENCH_CREDENTIALS_KEY
    )


def seed(args: argparse.Namespace) -> dict[str, Any]:
    """Migrate and seed the database named by --seed (see the module docstring)."""
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from providers import credentials
    from publishing.models import ProviderApp
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import organization_create, workspace_create

    timings: dict[str, float] = {}

    def step(name: str, function: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        result = function()
        timings[name] = round(time.perf_counter() - started, 1)
        print(f"  {name}: {timings[name]} s", flush=True)
        return result

    step("migrate", lambda: call_command("migrate", interactive=False, verbosity=0))
    now = timezone.now()
    owner = User.objects.create_user(OWNER_EMAIL, secrets.token_urlsafe(24))
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Bench scale")
    measured = workspace_create(actor=actor, organization_id=organization.pk, name=MEASURED)
    readiness = workspace_create(actor=actor, organization_id=organization.pk, name=READINESS)
    sealed = credentials.encrypt({"access_token": secrets.token_urlsafe(24)})
    apps = [
        str(
            ProviderApp.objects.create(
                provider="mastodon",
                instance_url=f"https://m{index}.example",
                redirect_uri="http://127.0.0.1/api/v1/accounts/oauth/callback",
                credentials_encrypted=credentials.encrypt({"client_id": "c"}),
            ).pk
        )
        for index in range(7)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        fillers = step(
            "workspaces",
            lambda: bulk_filler_workspaces(
                cursor, organization_id=organization.pk, count=args.workspaces - 1, now=now, tag="f"
            ),
        )
        with_data = [str(measured.pk), *fillers]
        step(
            "accounts",
            lambda: bulk_accounts(
                cursor,
                workspace_ids=with_data,
                per_workspace=args.accounts_per_workspace,
                credentials=sealed,
                mastodon_app_ids=apps,
                now=now,
                tag="bench",
            ),
        )
        step(
            "readiness accounts",
            lambda: bulk_accounts(
                cursor,
                workspace_ids=[str(readiness.pk)],
                per_workspace=READINESS_ACCOUNTS,
                credentials=sealed,
                mastodon_app_ids=apps,
                now=now,
                tag="ready",
            ),
        )
        step(
            "publications, destinations, events",
            lambda: bulk_publications(
                cursor,
                workspace_ids=with_data,
                per_workspace=args.publications_per_workspace,
                accounts_per_workspace=args.accounts_per_workspace,
                destinations=2,
                events=2,
                owner_id=owner.pk,
                now=now,
            ),
        )
        step(
            "access audit",
            lambda: bulk_access_audit(
                cursor,
                workspace_ids=with_data,
                per_workspace=args.audit_per_workspace,
                actor_user_id=owner.pk,
                now=now,
            ),
        )
    with connection.cursor() as cursor:
        step("analyze", lambda: cursor.execute("VACUUM ANALYZE"))
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
    counts = table_counts()
    print(f"  {counts}, {size / 1024 / 1024:.0f} MiB", flush=True)
    return {"seconds": timings, "rows": counts, "database_mib": round(size / 1024 / 1024)}


def table_counts() -> dict[str, int]:
    from publishing.models import Account, Destination, Publication, PublicationEvent
    from workspaces.models import AccessAuditEvent, Workspace

    return {
        model.__name__: model.objects.count()
        for model in (
            Workspace,
            Publication,
            Destination,
            PublicationEvent,
            AccessAuditEvent,
            Account,
        )
    }


# --- Measuring -------------------------------------------------------------------------------


def _schedstat_ns(path: str) -> int:
    """Nanoseconds a thread or process has run on a CPU (``/proc/…/schedstat``, first field)."""
    with open(path, encoding="ascii") as handle:
        return int(handle.read().split()[0])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Per-request server CPU of each target on the database named by --measure: this thread's
    CPU plus that of this connection's PostgreSQL backend, around each request."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from publishing.services.delivery import delivery_dispatch
    from workspaces.models import User, Workspace
    from workspaces.services import api_token_create

    owner = User.objects.get(email=OWNER_EMAIL)
    measured = Workspace.objects.get(name=MEASURED)
    ready = Workspace.objects.get(name=READINESS)
    _, token = api_token_create(
        user=owner, name=f"bench scale {time.time_ns()}", permissions=["api:read"]
    )
    client = Client(headers={"authorization": f"Bearer {token}"})

    def get(path: str) -> Callable[[], None]:
        def call() -> None:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code, response.content[:300])

        return call

    publications = f"/api/v1/publications?workspace_id={measured.pk}"
    cursor = None
    for _ in range(DEEP_PAGE_CURSORS):
        page = client.get(
            publications + f"&limit={DEEP_PAGE_LIMIT}" + (f"&cursor={cursor}" if cursor else "")
        )
        cursor = page.json()["next_cursor"]
        assert cursor, "not enough publications for the deep page"
    targets: dict[str, Callable[[], Any]] = {
        "publications_first_page": get(publications),
        "publications_scheduled": get(publications + "&status=scheduled"),
        "publications_page_50_deep": get(
            publications + f"&limit={DEEP_PAGE_LIMIT}&cursor={cursor}"
        ),
        "access_audit": get(f"/api/v1/workspaces/{measured.pk}/access-audit"),
        "accounts": get(f"/api/v1/accounts?workspace_id={measured.pk}"),
        "provider_readiness_300": get(f"/api/v1/provider-readiness?workspace_id={ready.pk}"),
        "dispatcher_idle_tick": lambda: delivery_dispatch(),
    }
    thread = f"/proc/self/task/{threading.get_native_id()}/schedstat"
    samples: dict[str, list[float]] = {name: [] for name in targets}
    database: dict[str, list[float]] = {name: [] for name in targets}
    queries: dict[str, int] = {}
    for name, target in targets.items():
        for _ in range(args.warmup):
            target()
        with CaptureQueriesContext(connection) as captured:
            target()
        queries[name] = len(captured)
    for _ in range(args.samples):
        for name, target in targets.items():
            connection.ensure_connection()
            backend = f"/proc/{connection.connection.info.backend_pid}/schedstat"
            app_before, db_before = _schedstat_ns(thread), _schedstat_ns(backend)
            target()
            app_after, db_after = _schedstat_ns(thread), _schedstat_ns(backend)
            samples[name].append((app_after - app_before + db_after - db_before) / 1e6)
            database[name].append((db_after - db_before) / 1e6)
    return {"cpu_ms": samples, "db_cpu_ms": database, "queries": queries}


# --- Driver ----------------------------------------------------------------------------------


def child(mode: str, url: str, args: argparse.Namespace, output: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        f"--{mode}",
        url,
        "--child-output",
        str(output),
        "--samples",
        str(args.samples),
        "--warmup",
        str(args.warmup),
        "--workspaces",
        str(args.workspaces if url == args.large_url else 1),
        "--publications-per-workspace",
        str(args.publications_per_workspace),
        "--accounts-per-workspace",
        str(args.accounts_per_workspace),
        "--audit-per-workspace",
        str(args.audit_per_workspace),
    ]
    subprocess.run(command, check=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(output.read_text())
    return result


def seeded(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            return bool(
                conn.execute(
                    "SELECT 1 FROM workspaces_user WHERE email = %s", [OWNER_EMAIL]
                ).fetchone()
            )
    except psycopg.Error:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--large-url", default=LARGE_URL)
    parser.add_argument("--small-url", default=SMALL_URL)
    parser.add_argument(
        "--workspaces", type=int, default=1000, help="in the large database (the small has 1)"
    )
    parser.add_argument("--publications-per-workspace", type=int, default=1000)
    parser.add_argument("--accounts-per-workspace", type=int, default=10)
    parser.add_argument("--audit-per-workspace", type=int, default=1000)
    parser.add_argument(
        "--rounds", type=int, default=3, help="measuring processes per database, alternating"
    )
    parser.add_argument("--samples", type=int, default=30, help="requests per target per round")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--max-ratio", type=float, default=1.25)
    parser.add_argument(
        "--reuse-db", action="store_true", help="keep the databases (and reuse seeded ones)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--seed", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--measure", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--child-output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.seed or args.measure:
        configure(args.seed or args.measure)
        result = seed(args) if args.seed else measure(args)
        args.child_output.write_text(json.dumps(result))
        return 0

    for url in (args.large_url, args.small_url):
        database_name(url)  # refuses names outside herald_bench*
    started = time.perf_counter()
    seeding: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder) / "child.json"
        for label, url in (("large", args.large_url), ("small", args.small_url)):
            if args.reuse_db and seeded(url):
                print(f"{label}: reusing {url.rsplit('/', 1)[1]}", flush=True)
                continue
            print(f"{label}: seeding {url.rsplit('/', 1)[1]}", flush=True)
            ensure_database(url, fresh=True)
            seeding[label] = child("seed", url, args, scratch)
        load_before = loadavg()
        cpu: dict[str, dict[str, list[float]]] = {"large": {}, "small": {}}
        db_cpu: dict[str, dict[str, list[float]]] = {"large": {}, "small": {}}
        queries: dict[str, dict[str, int]] = {}
        for number in range(args.rounds):
            order = [("large", args.large_url), ("small", args.small_url)]
            for label, url in order if number % 2 == 0 else order[::-1]:
                print(f"round {number + 1}: measuring {label}", flush=True)
                result = child("measure", url, args, scratch)
                for name, values in result["cpu_ms"].items():
                    cpu[label].setdefault(name, []).extend(values)
                    db_cpu[label].setdefault(name, []).extend(result["db_cpu_ms"][name])
                queries[label] = result["queries"]
    rows: list[dict[str, Any]] = []
    for name in cpu["large"]:
        large, small = statistics.median(cpu["large"][name]), statistics.median(cpu["small"][name])
        rows.append(
            {
                "target": name,
                "large_cpu_ms": round(large, 3),
                "small_cpu_ms": round(small, 3),
                "ratio": round(large / small, 3) if small else None,
                "large_db_cpu_ms": round(statistics.median(db_cpu["large"][name]), 3),
                "small_db_cpu_ms": round(statistics.median(db_cpu["small"][name]), 3),
                "queries_large": queries["large"][name],
                "queries_small": queries["small"][name],
            }
        )
    failed = [
        row["target"] for row in rows if row["ratio"] is None or row["ratio"] > args.max_ratio
    ]
    print(
        f"\n{'target':28} {'large ms':>9} {'small ms':>9} {'ratio':>6} {'db large':>9} {'db small':>9} {'SQL':>4}"
    )
    for row in rows:
        print(
            f"{row['target']:28} {row['large_cpu_ms']:>9.2f} {row['small_cpu_ms']:>9.2f} {row['ratio']:>6.2f} "
            f"{row['large_db_cpu_ms']:>9.2f} {row['small_db_cpu_ms']:>9.2f} {row['queries_large']:>4}"
        )
    document = {
        "benchmark": "scale",
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "revision": git_revision(),
        "machine": machine(),
        "load_average_before": load_before,
        "load_average_after": loadavg(),
        "settings": {
            key: getattr(args, key)
            for key in (
                "workspaces",
                "publications_per_workspace",
                "accounts_per_workspace",
                "audit_per_workspace",
                "rounds",
                "samples",
                "warmup",
                "max_ratio",
            )
        },
        "seeding": seeding,
        "results": rows,
        "samples_ms": cpu,
        "pass": not failed,
        "seconds": round(time.perf_counter() - started),
    }
    write_results(document, args.output)
    print(f"written to {args.output}")
    if not args.reuse_db:
        for url in (args.large_url, args.small_url):
            drop_database(url)
    if failed:
        print(f"FAIL: above {args.max_ratio}x on the large database: {', '.join(failed)}")
        return 1
    print(f"PASS: every request within {args.max_ratio}x of the small database")
    return 0


if __name__ == "__main__":
    sys.exit(main())
