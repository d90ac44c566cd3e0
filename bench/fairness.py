#!/usr/bin/env python
"""Fairness benchmark: one workspace's burst next to other workspaces' single posts.

    .venv/bin/python bench/fairness.py                 # 1,000 + 1 + 1 against a 300 ms stand-in
    .venv/bin/python bench/fairness.py --burst 500 --redis-url redis://127.0.0.1:6379/15

What it does (details in bench/README.md), on the production path (PostgreSQL, Redis broker,
Celery worker on the threads pool, beat), reusing bench/delivery.py's set-up:

1. creates the PostgreSQL database ``herald_bench_fairness`` (dropped and re-created), migrates
   it, flushes its own Redis database, starts the stand-in Mastodon answering after
   ``--delay-ms`` (300 ms), and seeds through the services: workspace A with ``--accounts``
   connected accounts and ``--burst`` one-destination drafts, workspaces B and C with one
   account and one draft each (all on the same stand-in host, as on one busy instance, unless
   ``--separate-host``);
2. starts ``--workers`` Celery workers and beat, delivers a warm-up publication;
3. schedules A's burst for one instant T, B's post for T + ``--b-offset`` (0.5 s: the same
   second, after the tick that took A's burst may have run) and C's for T + ``--c-offset``
   (5 s: in the middle of A's burst);
4. waits until everything has settled and reports, per workspace, the lag from the due time to
   the send's start (``claimed_at``) and to ``published_at``, A's deliveries/s, how many
   attempts there were, and the posts the stand-in accepted against the destinations (no
   duplicates, none lost);
5. prints a table, writes bench/results/fairness.json and stops every process it started.

Target: B's and C's posts published within ``--max-latency`` (3 s) of their due time. Exit
status 1 when it is missed, 2 when the run could not complete. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/fairness.py` puts bench/ first on the path
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402  (after the path set-up above)
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    seconds_after,
    write_results,
)
from bench.delivery import (  # noqa: E402
    Processes,
    bench_environment,
    control,
    dispatch_interval,
    flush_redis,
    start_standin,
    status_counts,
    summary,
    versions,
    wait_for_workers,
    wait_settled,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_fairness"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
RESULTS = ROOT / "bench" / "results" / "fairness.json"
BENCH_EMAIL = "bench-fairness@example.invalid"


def seed(args: argparse.Namespace, standins: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from providers import credentials
    from publishing.models import Account, ProviderApp
    from publishing.services.publications import publication_create
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import organization_create, workspace_create

    user = User.objects.create_user(BENCH_EMAIL, secrets.token_urlsafe(24))
    actor = Actor(user=user)
    organization = organization_create(actor=actor, name="Bench fairness")
    apps: dict[str, Any] = {}

    def account(workspace: Any, host: str, n: int) -> str:
        standin = standins[host]
        fixtures = standin["fixtures"]
        if host not in apps:  # one app per instance, registered with the stand-in like OAuth does
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
            apps[host] = ProviderApp.objects.create(
                provider="mastodon",
                instance_url=fixtures["instance_url"],
                credentials_encrypted=credentials.encrypt(
                    {
                        "client_id": registered["client_id"],
                        "client_secret": registered["client_secret"],
                    }
                ),
            )
        return str(
            Account.objects.create(
                workspace=workspace,
                provider="mastodon",
                external_id=f"bench-{workspace.pk}-{n}",
                username=f"{fixtures['username']}{n}",
                instance_url=fixtures["instance_url"],
                granted_scopes=["read", "write"],
                app=apps[host],
                connected_by=user,
                credentials_encrypted=credentials.encrypt(
                    {"access_token": fixtures["access_token"]}
                ),
            ).pk
        )

    def drafts(workspace: Any, accounts: list[str], count: int, label: str) -> list[str]:
        return [
            str(
                publication_create(
                    actor=actor,
                    workspace_id=workspace.pk,
                    text=f"Herald fairness benchmark, {label} post {n}.",
                    destinations=[{"account_id": accounts[n % len(accounts)]}],
                ).pk
            )
            for n in range(count)
        ]

    spaces = {
        name: workspace_create(actor=actor, organization_id=organization.pk, name=f"Bench {name}")
        for name in ("warmup", "A", "B", "C")
    }
    single_host = "other" if args.separate_host else "main"
    started = time.perf_counter()
    seeded = {
        "actor": actor,
        "workspaces": spaces,
        "drafts": {
            "warmup": drafts(
                spaces["warmup"], [account(spaces["warmup"], "main", 0)], 4, "warm-up"
            ),
            "A": drafts(
                spaces["A"],
                [account(spaces["A"], "main", n) for n in range(args.accounts)],
                args.burst,
                "A",
            ),
            "B": drafts(spaces["B"], [account(spaces["B"], single_host, 0)], 1, "B"),
            "C": drafts(spaces["C"], [account(spaces["C"], single_host, 0)], 1, "C"),
        },
    }
    print(
        f"seeded {args.burst} + 1 + 1 drafts in {time.perf_counter() - started:.1f} s", flush=True
    )
    return seeded


def schedule_all(args: argparse.Namespace, seeded: dict[str, Any]) -> datetime:
    """A's burst at T, B at T + b_offset, C at T + c_offset; T far enough ahead that scheduling
    finishes first (timed on a sample, which is then scheduled again)."""
    from config.errors import FieldValidationError
    from publishing.services.publications import publication_schedule

    actor, burst = seeded["actor"], seeded["drafts"]["A"]
    sample = burst[:50]
    started = time.perf_counter()
    for publication_id in sample:
        publication_schedule(
            actor=actor,
            publication_id=publication_id,
            scheduled_at=datetime.now(UTC) + timedelta(hours=1),
            expected_revision=None,
        )
    each = (time.perf_counter() - started) / len(sample)
    due = datetime.fromtimestamp(math.ceil(time.time() + len(burst) * each * 2.5 + 5), tz=UTC)
    plan = [(p, due) for p in burst] + [
        (seeded["drafts"]["B"][0], due + timedelta(seconds=args.b_offset)),
        (seeded["drafts"]["C"][0], due + timedelta(seconds=args.c_offset)),
    ]
    try:
        for publication_id, at in plan:
            publication_schedule(
                actor=actor, publication_id=publication_id, scheduled_at=at, expected_revision=None
            )
    except FieldValidationError as exc:  # the machine slowed down while scheduling
        raise RuntimeError(f"scheduling overran the due time ({exc}); run again") from exc
    remaining = due.timestamp() - time.time()
    print(
        f"scheduled: A x {len(burst)} at {due:%H:%M:%S}, B at +{args.b_offset:g} s, C at +{args.c_offset:g} s "
        f"({remaining:.1f} s from now)",
        flush=True,
    )
    if remaining < 0.5:
        raise RuntimeError("scheduling overran the due time")
    return due


def lags(workspace: Any) -> dict[str, Any]:
    from publishing.models import Destination

    rows = list(
        Destination.objects.filter(publication__workspace=workspace).values_list(
            "publication__scheduled_at", "claimed_at", "published_at", "attempts", "status"
        )
    )
    start = [seconds_after(due, claimed) for due, claimed, _, _, _ in rows if claimed]
    published = [seconds_after(due, at) for due, _, at, _, _ in rows if at]
    return {
        "destinations": len(rows),
        "start_lag_s": summary(start),
        "published_lag_s": summary(published),
        "attempts": sum(r[3] for r in rows),
        "statuses": dict(status_counts(workspace.pk)),
    }


def audit(standins: dict[str, dict[str, Any]], workspaces: list[Any]) -> dict[str, Any]:
    from publishing.models import Destination

    published = Destination.objects.filter(
        publication__workspace__in=workspaces, status="published"
    ).count()
    posts = [
        p for s in standins.values() for p in control(s["url"], "GET", "/__control/posts")["posts"]
    ]
    keys = [p.get("idempotency_key") for p in posts]
    return {
        "destinations_published": published,
        "posts_accepted": len(posts),
        "duplicate_keys": len(keys) - len(set(keys)),
    }


def run(
    args: argparse.Namespace, env: dict[str, str], processes: Processes, scratch_dir: Path
) -> dict[str, Any]:
    print(f"database {args.database_url} (fresh); broker {args.redis_url} (flushed)")
    ensure_database(args.database_url, fresh=True)
    flush_redis(args.redis_url)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", interactive=False, verbosity=0)
    meta_versions = versions()
    hosts = ["main", "other"] if args.separate_host else ["main"]
    standins: dict[str, dict[str, Any]] = {}
    for host in hosts:
        standins[host] = (
            start_standin(processes, env) if host == "main" else _second_standin(processes, env)
        )
        control(standins[host]["url"], "POST", "/__control/faults", {"delay_ms": args.delay_ms})
    print(
        f"stand-in Mastodon {', '.join(s['url'] for s in standins.values())} answering after {args.delay_ms} ms"
    )
    seeded = seed(args, standins)
    connections.close_all()

    names = [f"fair{n}" for n in range(1, args.workers + 1)]
    worker_env = {**env, "HERALD_DB_POOL_SIZE": str(args.db_pool), "HERALD_WORKER_POOL": "threads"}
    for name in names:
        processes.start(
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "bench.delivery:celery_app",
                "worker",
                "--pool",
                "threads",
                "--concurrency",
                str(args.concurrency),
                "--loglevel",
                args.log_level,
                "-n",
                f"{name}@%h",
            ],
            worker_env,
        )
    processes.start(
        "beat",
        [
            sys.executable,
            "-m",
            "celery",
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
    wait_for_workers(names, processes)
    from django.conf import settings

    from publishing.services.publications import publication_publish_now

    for publication_id in seeded["drafts"]["warmup"]:
        publication_publish_now(
            actor=seeded["actor"], publication_id=publication_id, expected_revision=None
        )
    counts, complete = wait_settled(
        seeded["workspaces"]["warmup"].pk,
        len(seeded["drafts"]["warmup"]),
        timeout=60,
        processes=processes,
        label="warm-up",
    )
    if not complete or counts["published"] != len(seeded["drafts"]["warmup"]):
        raise RuntimeError(f"warm-up did not publish: {dict(counts)}")

    due = schedule_all(args, seeded)
    spaces = seeded["workspaces"]
    for name, expected in (("B", 1), ("C", 1), ("A", args.burst)):
        wait_settled(
            spaces[name].pk,
            expected,
            timeout=args.timeout + due.timestamp() - time.time(),
            processes=processes,
            label=name,
        )
    report_lags = {name: lags(spaces[name]) for name in ("A", "B", "C")}
    a_published = report_lags["A"]["published_lag_s"]
    passed = (
        all(
            report_lags[name]["published_lag_s"].get("max", math.inf) <= args.max_latency
            for name in ("B", "C")
        )
        and report_lags["A"]["statuses"].get("published", 0) == args.burst
    )
    checks = audit(standins, [spaces[n] for n in ("warmup", "A", "B", "C")])
    passed = (
        passed
        and checks["duplicate_keys"] == 0
        and checks["posts_accepted"] == checks["destinations_published"]
    )
    return {
        "benchmark": "fairness",
        "revision": git_revision(),
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": meta_versions,
        "parameters": {
            "burst": args.burst,
            "accounts": args.accounts,
            "workers": args.workers,
            "pool": "threads",
            "concurrency": args.concurrency,
            "db_pool": args.db_pool,
            "delay_ms": args.delay_ms,
            "b_offset_s": args.b_offset,
            "c_offset_s": args.c_offset,
            "separate_host": args.separate_host,
            "dispatch_interval_s": dispatch_interval(),
            "max_in_flight_per_account": settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT,
            "max_in_flight_per_host": settings.HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST,
            "max_queued_per_workspace": settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE,
        },
        "due": due.isoformat(),
        "workspaces": report_lags,
        "a_deliveries_per_second": round(args.burst / a_published["max"], 1)
        if a_published.get("max")
        else None,
        "audit": checks,
        "target": {"max_latency_s": args.max_latency},
        "passed": passed,
    }


def _second_standin(processes: Processes, env: dict[str, str]) -> dict[str, Any]:
    """Another stand-in process (another host:port), for --separate-host."""
    first = processes.children.pop("standin")
    try:
        return start_standin(processes, env)
    finally:
        processes.children["standin-2"] = processes.children.pop("standin")
        processes.children["standin"] = first


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\nfairness: A x {report['parameters']['burst']} due at T, B at +{report['parameters']['b_offset_s']:g} s, "
        f"C at +{report['parameters']['c_offset_s']:g} s"
    )
    print(
        f"{'workspace':<10} {'n':>5} {'start p50':>10} {'start max':>10} {'pub p50':>9} {'pub p99':>9} "
        f"{'pub max':>9} {'attempts':>9}"
    )
    for name, row in report["workspaces"].items():
        s, p = row["start_lag_s"], row["published_lag_s"]
        print(
            f"{name:<10} {row['destinations']:>5} {s.get('p50', '-'):>10} {s.get('max', '-'):>10} "
            f"{p.get('p50', '-'):>9} {p.get('p99', '-'):>9} {p.get('max', '-'):>9} {row['attempts']:>9}"
        )
    print(f"A: {report['a_deliveries_per_second']} deliveries/s; audit {report['audit']}")
    print(
        f"target: B and C published within {report['target']['max_latency_s']:g} s: "
        f"{'PASS' if report['passed'] else 'FAIL'}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--burst", type=int, default=1000, help="A's destinations (one per publication)"
    )
    parser.add_argument("--accounts", type=int, default=5, help="A's connected accounts")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--concurrency", type=int, default=32, help="threads per worker (HERALD_WORKER_CONCURRENCY)"
    )
    parser.add_argument("--db-pool", type=int, default=8, help="HERALD_DB_POOL_SIZE of each worker")
    parser.add_argument("--delay-ms", type=int, default=300, help="stand-in response delay")
    parser.add_argument(
        "--b-offset", type=float, default=0.5, help="B's due time after A's, seconds"
    )
    parser.add_argument(
        "--c-offset", type=float, default=5.0, help="C's due time after A's, seconds"
    )
    parser.add_argument("--separate-host", action="store_true", help="B and C on a second stand-in")
    parser.add_argument(
        "--dispatch-interval", type=float, default=None, help="HERALD_DISPATCH_INTERVAL_SECONDS"
    )
    parser.add_argument(
        "--max-latency", type=float, default=3.0, help="target for B and C, seconds"
    )
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for the burst"
    )
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("HERALD_BENCH_FAIRNESS_DATABASE_URL", DEFAULT_DATABASE_URL),
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("HERALD_BENCH_FAIRNESS_REDIS_URL", DEFAULT_REDIS_URL),
        help="broker and cache; this Redis database is flushed at the start",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument("--keep-logs", type=Path, metavar="DIR")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_start = loadavg()
    with tempfile.TemporaryDirectory(prefix="herald-bench-fairness-") as scratch:
        scratch_dir = Path(scratch)
        env = bench_environment(args, str(scratch_dir / "data"), str(scratch_dir / "published.log"))
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
            if not args.keep_db:
                drop_database(args.database_url)
    report["machine"]["loadavg_1_5_15_start"] = load_start
    report["machine"]["loadavg_1_5_15_end"] = loadavg()
    print_report(report)
    write_results(report, args.output)
    print(
        f"results: {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}"
    )
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
