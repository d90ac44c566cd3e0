#!/usr/bin/env python
"""Burst benchmark: 1,000 publications due in the same second, one destination each,
delivered by the shipped worker and beat commands to a provider stand-in answering in 300 ms.

    .venv/bin/python bench/burst.py                   # 1 worker, the settings' pool and concurrency
    .venv/bin/python bench/burst.py --workers 2       # two worker commands, as two hosts run them
    .venv/bin/python bench/burst.py --concurrency 8 --workers 1   # the latency-bound case

On the production path (PostgreSQL, Redis broker), like bench/delivery.py (whose set-up it
reuses): a fresh database ``herald_bench_burst``, its own Redis database (flushed), the
stand-in Mastodon (``python -m tests.providers.mastodon.standin``, a ``ThreadingHTTPServer``) answering
every request after ``--delay-ms``; ``--destinations`` publications with one destination each
(spread over ``--accounts`` accounts), seeded as drafts through the services. Then:

1. ``--workers`` times ``celery -A config worker --loglevel INFO -n burstN@%h`` (the command of
   docker-compose.yml: pool and concurrency from config/settings.py, ``HERALD_WORKER_CONCURRENCY``
   and ``HERALD_DB_POOL_SIZE`` from ``--concurrency``/``--db-pool``) and ``celery -A config beat``;
2. a warm-up publication, then every burst publication scheduled with ``publication_schedule``
   for instants spread over one second a few seconds ahead;
3. once all have settled: per destination, due -> published; deliveries/s from the due second to
   the last ``published_at``; worker and PostgreSQL CPU per delivery; each worker's RSS (and,
   with ``--web``, a gunicorn worker's RSS after serving API requests); sends per worker (its
   log's ``delivery_send`` tasks received); PostgreSQL connections of the database at the peak;
4. the audit of bench/delivery.py: every post the stand-in accepted against the database
   (0 duplicates, 0 losses).

``--embedded``: the same burst under ``make run`` instead (SQLite, the filesystem broker, the
limits store in SQLite): ``scripts/run.py`` itself, with its own data folder (a temporary one)
and a free port, starts gunicorn, its ``HERALD_WORKER_PROCESSES`` worker commands and beat as
shipped; the benchmark seeds and schedules through the services on the same SQLite database.
No PostgreSQL or Redis is used; worker CPU is that of the worker processes make run started.

Writes bench/results/burst.json (``--output``). Exit status 1 when a target is missed
(``--max-lag``: every destination published within 20 s of its due time; ``--max-rss-mb``),
2 when the run could not complete. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402
    backends_cpu_since,
    child_pids,
    database_backends_cpu,
    database_name,
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    process_tree_cpu_seconds,
    seconds_after,
    write_results,
)
from bench.delivery import (  # noqa: E402
    SETTLED,
    Processes,
    bench_environment,
    control,
    flush_redis,
    status_counts,
    summary,
    versions,
    wait_for_workers,
    wait_settled,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_burst"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
RESULTS = ROOT / "bench" / "results" / "burst.json"
RECEIVED = re.compile(r"Task publishing\.delivery_send\[[0-9a-f-]+\] received")


def rss_mb(pid: int) -> float:
    """Resident set size of one process, MB (VmRSS)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def tree_rss_mb(pid: int) -> float:
    """The largest RSS of a process and its direct children (a prefork worker's pool)."""
    return max(rss_mb(each) for each in [pid, *child_pids(pid)])


def connections_of(database: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [database])
        return int(cursor.fetchone()[0]) - 1  # not this one


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_standins(processes: Processes, env: dict[str, str], count: int) -> list[dict[str, Any]]:
    """``count`` stand-in Mastodon instances, each its own process and port: distinct provider
    hosts for the per-host cap (HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST), as a burst of real
    accounts spreads over several instances."""
    standins = []
    for k in range(count):
        process = processes.start(
            f"standin{k}",
            [sys.executable, "-m", "tests.providers.mastodon.standin", "--port", "0"],
            env,
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        try:
            standins.append(json.loads(line))
        except ValueError as exc:
            raise RuntimeError(
                f"stand-in {k} did not start:\n{processes.tail(f'standin{k}')}"
            ) from exc
    return standins


def seed(args: argparse.Namespace, standins: list[dict[str, Any]]) -> dict[str, Any]:
    import secrets

    from providers import credentials
    from publishing.models import Account, ProviderApp
    from publishing.services.publications import publication_create
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import api_token_create, organization_create, workspace_create

    user = User.objects.create_user("bench-burst@example.invalid", secrets.token_urlsafe(24))
    actor = Actor(user=user)
    organization = organization_create(actor=actor, name="Bench burst")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Bench burst")
    apps = []
    for standin in standins:  # one app per instance, registered as the OAuth flow does
        registered = control(
            standin["url"],
            "POST",
            "/api/v1/apps",
            {
                "client_name": "Herald bench",
                "redirect_uris": "http://127.0.0.1/callback",
                "scopes": "read write",
            },
        )
        apps.append(
            ProviderApp.objects.create(
                provider="mastodon",
                instance_url=standin["fixtures"]["instance_url"],
                credentials_encrypted=credentials.encrypt(
                    {
                        "client_id": registered["client_id"],
                        "client_secret": registered["client_secret"],
                    }
                ),
            )
        )
    accounts = []
    for n in range(args.accounts):  # spread over the instances; each shares its instance's user
        fixtures, app = standins[n % len(standins)]["fixtures"], apps[n % len(standins)]
        accounts.append(
            str(
                Account.objects.create(
                    workspace=workspace,
                    provider="mastodon",
                    external_id=f"burst-{n}",
                    username=f"{fixtures['username']}{n}",
                    instance_url=fixtures["instance_url"],
                    granted_scopes=["read", "write"],
                    app=app,
                    connected_by=user,
                    credentials_encrypted=credentials.encrypt(
                        {"access_token": fixtures["access_token"]}
                    ),
                ).pk
            )
        )
    started = time.perf_counter()
    drafts = [
        str(
            publication_create(
                actor=actor,
                workspace_id=workspace.pk,
                text=f"Herald burst benchmark, post {n}: due with 999 others in the same second.",
                destinations=[{"account_id": accounts[n % len(accounts)]}],
            ).pk
        )
        for n in range(args.destinations + 1)  # the first one warms the workers up
    ]
    print(f"seeded {len(drafts)} publications in {time.perf_counter() - started:.1f} s", flush=True)
    _, token = api_token_create(user=user, name="bench", permissions=["api:read"])
    return {"actor": actor, "workspace": workspace, "drafts": drafts, "token": token}


def web_rss(
    processes: Processes, env: dict[str, str], token: str, workspace_id: Any
) -> dict[str, Any]:
    """A gunicorn worker (as make run starts it) after serving a few hundred API requests."""
    import requests

    port = free_port()
    web = processes.start(
        "web",
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
            "--no-control-socket",
        ],
        env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(requests.RequestException):
            if requests.get(base + "/api/v1/health", timeout=2).status_code == 200:
                break
        if time.monotonic() > deadline or web.poll() is not None:
            raise RuntimeError(f"gunicorn did not answer:\n{processes.tail('web')}")
        time.sleep(0.3)
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Accept": "application/json"})
    statuses: dict[str, int] = {}
    for n in range(300):
        for path in (
            "/api/v1/workspaces",
            f"/api/v1/publications?workspace_id={workspace_id}&limit=100",
        ):
            response = session.get(base + path, timeout=30)
            statuses[f"{path.split('?')[0].rsplit('/', 1)[-1]} {response.status_code}"] = n + 1
    workers = child_pids(web.pid)
    return {
        "gunicorn_worker_rss_mb": max((rss_mb(pid) for pid in workers), default=0.0),
        "requests": 600,
        "statuses": statuses,
    }


def start_workers(
    args: argparse.Namespace, env: dict[str, str], processes: Processes, scratch_dir: Path
) -> tuple[list[str], dict[str, int]]:
    """The worker commands of docker-compose.yml (one per --workers) and beat."""
    worker_env = {**env, "HERALD_DB_POOL_SIZE": str(args.db_pool)}
    names = [f"burst{n}" for n in range(1, args.workers + 1)]
    workers = {
        name: processes.start(
            name,
            [
                str(Path(sys.executable).parent / "celery"),
                "-A",
                "config",
                "worker",
                "--loglevel",
                args.log_level,
                "-n",
                f"{name}@%h",
            ],
            worker_env,
        ).pid
        for name in names
    }
    processes.start(
        "beat",
        [
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            args.log_level,
            "--schedule",
            str(scratch_dir / "celerybeat-schedule"),
        ],
        env,
    )
    return names, workers


def start_make_run(
    processes: Processes, env: dict[str, str]
) -> tuple[list[str], dict[str, int], int]:
    """``scripts/run.py`` (what ``make run`` runs) on env's data folder and port: its worker
    processes (by their ``-n`` name) and its gunicorn master, once /api/v1/health answers."""
    import requests

    make_run = processes.start("makerun", [sys.executable, "scripts/run.py"], env)
    base = f"http://127.0.0.1:{env['HERALD_PORT']}"
    deadline = time.monotonic() + 180
    while True:
        with contextlib.suppress(requests.RequestException):
            if requests.get(base + "/api/v1/health", timeout=2).status_code == 200:
                break
        if time.monotonic() > deadline or make_run.poll() is not None:
            raise RuntimeError(f"make run did not answer:\n{processes.tail('makerun')}")
        time.sleep(0.5)
    workers: dict[str, int] = {}
    web_master = 0
    for pid in child_pids(make_run.pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            if "worker" in argv and "-n" in argv:
                workers[argv[argv.index("-n") + 1].split("@")[0]] = pid
            elif any(part.endswith("gunicorn") for part in argv):
                web_master = pid
    return sorted(workers), workers, web_master


def web_rss_of(base: str, master: int, token: str, workspace_id: Any) -> dict[str, Any]:
    """make run's gunicorn workers after serving 600 API requests (as :func:`web_rss`)."""
    import requests

    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Accept": "application/json"})
    statuses: dict[str, int] = {}
    for n in range(300):
        for path in (
            "/api/v1/workspaces",
            f"/api/v1/publications?workspace_id={workspace_id}&limit=100",
        ):
            response = session.get(base + path, timeout=30)
            statuses[f"{path.split('?')[0].rsplit('/', 1)[-1]} {response.status_code}"] = n + 1
    return {
        "gunicorn_worker_rss_mb": max((rss_mb(pid) for pid in child_pids(master)), default=0.0),
        "requests": 600,
        "statuses": statuses,
    }


def audit_all(standins: list[dict[str, Any]], workspace_id: Any) -> dict[str, Any]:
    """Every post the stand-ins accepted against every destination: one post per idempotency
    key, the destination's external id that post's, nothing published without a post."""
    from collections import Counter

    from publishing.models import Destination

    posts = [
        post
        for standin in standins
        for post in control(standin["url"], "GET", "/__control/posts")["posts"]
    ]
    replays = sum(
        int(
            control(s["url"], "GET", "/__control/stats")
            .get("counters", {})
            .get("idempotent_replays", 0)
        )
        for s in standins
    )
    per_key = Counter(str(p.get("idempotency_key")) for p in posts)
    ids = {str(p.get("idempotency_key")): str(p["id"]) for p in posts}
    rows = list(
        Destination.objects.filter(publication__workspace_id=workspace_id).values_list(
            "idempotency_key", "status", "external_id"
        )
    )
    published = [(key, external) for key, status, external in rows if status == "published"]
    return {
        "destinations": len(rows),
        "posts_accepted_herald": len(posts),
        "duplicates": sum(n - 1 for n in per_key.values() if n > 1),
        "losses": sum(1 for _, status, _ in rows if status in SETTLED and status != "published")
        + sum(1 for key, _ in published if key not in ids),
        "unsettled": sum(1 for _, status, _ in rows if status not in SETTLED),
        "external_id_mismatch": sum(
            1 for key, external in published if key in ids and ids[key] != external
        ),
        "posts_without_destination": len(set(per_key) - {key for key, _, _ in rows}),
        "idempotent_replays": replays,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--destinations", type=int, default=1000, help="publications due in one second (1 each)"
    )
    parser.add_argument(
        "--accounts",
        type=int,
        default=40,
        help="connected accounts the destinations are spread over",
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=4,
        help="stand-in instances (provider hosts) the accounts are on",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="worker commands (2: HERALD_WORKER_PROCESSES of make run and compose)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="HERALD_WORKER_CONCURRENCY of each worker (default: the settings' default)",
    )
    parser.add_argument(
        "--pool",
        choices=("threads", "prefork"),
        default=None,
        help="HERALD_WORKER_POOL (default: the settings' default, threads)",
    )
    parser.add_argument(
        "--db-pool", type=int, default=8, help="HERALD_DB_POOL_SIZE of each worker (0: none)"
    )
    parser.add_argument("--delay-ms", type=int, default=300, help="stand-in response delay")
    parser.add_argument(
        "--lead", type=float, default=5.0, help="minimum seconds between scheduling and due time"
    )
    parser.add_argument(
        "--web",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also start gunicorn and record a web worker's RSS",
    )
    parser.add_argument(
        "--max-lag", type=float, default=20.0, help="seconds from due to published, every one"
    )
    parser.add_argument("--max-rss-mb", type=float, default=250.0)
    parser.add_argument("--phase-timeout", type=float, default=300.0)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--dispatch-interval", type=float, default=None)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("HERALD_BENCH_BURST_DATABASE_URL", DEFAULT_DATABASE_URL),
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("HERALD_BENCH_BURST_REDIS_URL", DEFAULT_REDIS_URL),
        help="broker and cache; this Redis database is flushed at the start",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument(
        "--keep-logs", type=Path, metavar="DIR", help="copy the process logs to DIR"
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="under make run (scripts/run.py): SQLite and the filesystem broker, its own data "
        "folder and port; --workers is HERALD_WORKER_PROCESSES",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_start = loadavg()
    with tempfile.TemporaryDirectory(prefix="herald-bench-burst-") as scratch:
        scratch_dir = Path(scratch)
        env = bench_environment(args, str(scratch_dir / "data"), "")
        env.pop("HERALD_BENCH_PUBLISH_LOG", None)
        if args.concurrency is not None:
            env["HERALD_WORKER_CONCURRENCY"] = str(args.concurrency)
        if args.pool is not None:
            env["HERALD_WORKER_POOL"] = args.pool
        if args.embedded:  # make run's embedded default: no DATABASE_URL, no REDIS_URL
            env.pop("DATABASE_URL", None)
            env.pop("REDIS_URL", None)
            env.update(
                HERALD_HOST="127.0.0.1",
                HERALD_PORT=str(free_port()),
                HERALD_WORKER_PROCESSES=str(args.workers),
            )
        (scratch_dir / "data" / "static").mkdir(parents=True)
        os.environ.clear()
        os.environ.update(env)
        processes = Processes(scratch_dir)
        try:
            report = run(args, env, processes, scratch_dir)
        except (RuntimeError, OSError) as exc:
            print(f"ABORTED: {exc}", file=sys.stderr)
            for name in processes.children:
                print(f"--- {name} log (tail)\n{processes.tail(name)}", file=sys.stderr)
            return 2
        finally:
            processes.stop()
            if args.keep_logs:
                shutil.copytree(
                    scratch_dir,
                    args.keep_logs,
                    dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("data"),
                )
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            if not args.keep_db and not args.embedded:
                drop_database(args.database_url)
    report["machine"]["loadavg_1_5_15_start"] = load_start
    report["machine"]["loadavg_1_5_15_end"] = loadavg()
    print_report(report)
    write_results(report, args.output)
    return 0 if report["passed"] else 1


def run(
    args: argparse.Namespace, env: dict[str, str], processes: Processes, scratch_dir: Path
) -> dict[str, Any]:
    if not args.embedded:
        ensure_database(args.database_url, fresh=True)
        flush_redis(args.redis_url)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections
    from django.db.models import Max

    from publishing.models import Destination
    from publishing.services.publications import publication_publish_now, publication_schedule

    call_command("migrate", interactive=False, verbosity=0)
    meta_versions = versions() if not args.embedded else {"sqlite": sqlite3.sqlite_version}
    standins = start_standins(processes, env, args.hosts)
    for standin in standins:
        control(standin["url"], "POST", "/__control/faults", {"delay_ms": args.delay_ms})
    seeded = seed(args, standins)
    connections.close_all()
    if args.embedded:
        names, workers, web_master = start_make_run(processes, env)
    else:
        names, workers = start_workers(args, env, processes, scratch_dir)
        web_master = 0
        wait_for_workers(names, processes)
    warm, *drafts = seeded["drafts"]
    publication_publish_now(actor=seeded["actor"], publication_id=warm, expected_revision=None)
    workspace = seeded["workspace"]
    counts, complete = wait_settled(
        workspace.pk, 1, timeout=120, processes=processes, label="warm-up"
    )
    if counts["published"] != 1:
        raise RuntimeError(f"warm-up did not publish: {dict(counts)}")

    started = time.perf_counter()
    for publication_id in drafts[
        :50
    ]:  # time scheduling (an hour ahead; scheduling again replaces it)
        publication_schedule(
            actor=seeded["actor"],
            publication_id=publication_id,
            scheduled_at=datetime.now(UTC) + timedelta(hours=1),
            expected_revision=None,
        )
    each = (time.perf_counter() - started) / 50
    due_second = datetime.fromtimestamp(
        math.ceil(time.time() + max(args.lead, len(drafts) * each * 2.5 + 5)), tz=UTC
    )
    spread = timedelta(seconds=1) / len(drafts)
    for n, publication_id in enumerate(drafts):
        publication_schedule(
            actor=seeded["actor"],
            publication_id=publication_id,
            scheduled_at=due_second + spread * n,
            expected_revision=None,
        )
    remaining = due_second.timestamp() - time.time()
    print(
        f"{len(drafts)} publications due in [{due_second:%H:%M:%S}, +1 s), {remaining:.1f} s from now; "
        f"{args.workers} worker(s), stand-in delay {args.delay_ms} ms",
        flush=True,
    )
    if remaining < 0.5:
        raise RuntimeError("scheduling overran the due second; raise --lead")
    database = "" if args.embedded else database_name(args.database_url)
    time.sleep(max(0.0, remaining - 0.3))
    cpu_before = {name: process_tree_cpu_seconds(pid) for name, pid in workers.items()}
    database_before = database_backends_cpu(database) if database else {}
    peak_connections = [0]
    stop = threading.Event()

    def sample_connections() -> None:
        while not stop.wait(0.5):
            with contextlib.suppress(Exception):
                peak_connections[0] = max(peak_connections[0], connections_of(database))
        connections.close_all()

    sampler = threading.Thread(target=sample_connections, daemon=True)
    if database:
        sampler.start()
    counts, complete = wait_settled(
        workspace.pk,
        len(drafts) + 1,
        timeout=args.phase_timeout,
        processes=processes,
        label="burst",
    )
    stop.set()
    if database:
        sampler.join(timeout=5)
    worker_cpu = {
        name: process_tree_cpu_seconds(pid) - cpu_before[name] for name, pid in workers.items()
    }
    database_cpu = backends_cpu_since(database, database_before) if database else 0.0
    worker_rss = {name: tree_rss_mb(pid) for name, pid in workers.items()}
    rows = list(
        Destination.objects.filter(
            publication__workspace=workspace, publication__scheduled_at__isnull=False
        ).values_list("publication__scheduled_at", "published_at")
    )
    lags = [seconds_after(due, published) for due, published in rows if published is not None]
    last = Destination.objects.filter(publication__workspace=workspace).aggregate(
        last=Max("published_at")
    )["last"]
    published = len(lags)
    span = (last - due_second).total_seconds() if last else math.inf
    if args.embedded:  # make run's processes share its output
        received = {
            "all": len(RECEIVED.findall((scratch_dir / "makerun.log").read_text(errors="replace")))
        }
    else:
        received = {
            name: len(RECEIVED.findall((scratch_dir / f"{name}.log").read_text(errors="replace")))
            for name in names
        }
    if not args.web:
        web = None
    elif args.embedded:
        base = f"http://127.0.0.1:{env['HERALD_PORT']}"
        web = web_rss_of(base, web_master, seeded["token"], workspace.pk)
    else:
        web = web_rss(processes, env, seeded["token"], workspace.pk)
    checked = audit_all(standins, workspace.pk)
    total_cpu = sum(worker_cpu.values())
    max_lag = max(lags, default=math.inf)
    rss_values = [*worker_rss.values(), *([web["gunicorn_worker_rss_mb"]] if web else [])]
    checks = {
        "every_published_within": {
            "value": round(max_lag, 2),
            "target": f"<= {args.max_lag} s",
            "passed": published == len(drafts) and max_lag <= args.max_lag,
        },
        "duplicates": {
            "value": checked["duplicates"],
            "target": "0",
            "passed": checked["duplicates"] == 0,
        },
        "losses": {
            "value": checked["losses"] + checked["unsettled"],
            "target": "0",
            "passed": not (
                checked["losses"] or checked["unsettled"] or checked["external_id_mismatch"]
            ),
        },
        "rss": {
            "value": max(rss_values),
            "target": f"< {args.max_rss_mb} MB",
            "passed": max(rss_values) < args.max_rss_mb,
        },
    }
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "bench/burst.py", *(sys.argv[1:])]),
        "git_revision": git_revision(),
        "machine": machine(),
        "versions": meta_versions,
        "setup": {
            "mode": "make run (SQLite, filesystem broker)"
            if args.embedded
            else "PostgreSQL + Redis",
            "workers": args.workers,
            "pool": settings.CELERY_WORKER_POOL,
            "concurrency_per_worker": settings.CELERY_WORKER_CONCURRENCY,
            "db_pool_size": 0 if args.embedded else args.db_pool,
            "standin_delay_ms": args.delay_ms,
            "provider_hosts": args.hosts,
            "accounts": args.accounts,
            "dispatch_interval_s": settings.HERALD_DISPATCH_INTERVAL_SECONDS,
        },
        "burst": {
            "publications": len(drafts),
            "due_second": due_second.isoformat(),
            "complete": complete,
            "statuses": dict(status_counts(workspace.pk)),
            "published": published,
            "published_lag_s": summary(lags),
            "seconds_due_to_last": round(span, 2),
            "deliveries_per_second": round(published / span, 1) if span else None,
            "worker_cpu_ms_per_delivery": round(total_cpu / max(published, 1) * 1000, 2),
            "postgres_cpu_ms_per_delivery": round(database_cpu / max(published, 1) * 1000, 2),
            "sends_received_per_worker": received,
            "worker_cpu_s": {name: round(v, 2) for name, v in worker_cpu.items()},
            "peak_postgres_connections": peak_connections[0],
        },
        "rss_mb": {"workers": worker_rss, "web": web},
        "audit": checked,
        "checks": checks,
        "passed": all(c["passed"] for c in checks.values()),
    }


def print_report(report: dict[str, Any]) -> None:
    setup, burst = report["setup"], report["burst"]
    print()
    print(
        f"{burst['publications']} publications due in one second; {setup['workers']} worker(s) x "
        f"{setup['pool']} {setup['concurrency_per_worker']} (DB pool {setup['db_pool_size']}); stand-in "
        f"{setup['standin_delay_ms']} ms"
    )
    lag = burst["published_lag_s"]
    print(
        f"due -> published: p50 {lag.get('p50')} s, p99 {lag.get('p99')} s, max {lag.get('max')} s; "
        f"{burst['deliveries_per_second']} deliveries/s (due second -> last published {burst['seconds_due_to_last']} s)"
    )
    print(
        f"CPU per delivery: workers {burst['worker_cpu_ms_per_delivery']} ms, PostgreSQL "
        f"{burst['postgres_cpu_ms_per_delivery']} ms; sends per worker {burst['sends_received_per_worker']}; "
        f"peak PostgreSQL connections {burst['peak_postgres_connections']}"
    )
    web = report["rss_mb"]["web"]
    print(
        f"RSS after the burst: workers {report['rss_mb']['workers']} MB"
        + (f", web worker {web['gunicorn_worker_rss_mb']} MB" if web else "")
    )
    audit_ = report["audit"]
    print(
        f"stand-in accepted {audit_['posts_accepted_herald']} posts for {audit_['destinations']} destinations"
    )
    print(
        f"load average at start / end: {report['machine']['loadavg_1_5_15_start']} / "
        f"{report['machine']['loadavg_1_5_15_end']}"
    )
    for name, check in report["checks"].items():
        print(
            f"{'PASS' if check['passed'] else 'FAIL'}  {name:<24} {check['value']!s:>8}  (target {check['target']})"
        )
    print(f"\n{'PASS' if report['passed'] else 'FAIL'}")


if __name__ == "__main__":
    sys.exit(main())
