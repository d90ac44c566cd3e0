#!/usr/bin/env python
"""API throughput benchmark: Herald endpoints next to a bare Django view, same server, same run.

    .venv/bin/python bench/api.py                    # or: make bench
    .venv/bin/python bench/api.py --seconds 10 --rounds 3 --concurrency 8

What it does (details in bench/README.md):

1. creates the PostgreSQL database ``herald_bench`` (dropped and re-created unless --reuse-db),
   migrates it and seeds one user with an organization, 20 workspaces and >= 200 access-audit
   events, plus a read-only API token;
2. starts gunicorn with the container's configuration (docker/gunicorn.conf.py) on 127.0.0.1 and
   a free port, with DJANGO_SETTINGS_MODULE=bench.settings (the real URLs plus /bench/bare);
3. for each target, per round: a warm-up, then a fixed-duration, fixed-concurrency closed loop of
   keep-alive HTTP/1.1 requests (threads, one connection each). Only 200 responses count; any
   other status or a connection error aborts the run;
4. prints a table, writes bench/results/latest.json and stops gunicorn.

Exit status 1 when the access-audit page (200 rows) is below --min-ratio (20 %) of the bare view,
or the workspace list below --min-workspaces-ratio (12 %).
Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/api.py` puts bench/ first on the path, not ROOT
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402  (after the path set-up above)
    backends_cpu_since,
    child_pids,
    connection_owners,
    database_backends_cpu,
    database_name,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    percentile,
    process_tree_context_switches,
    process_tree_cpu_seconds,
    tail,
    write_results,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
RESULTS = ROOT / "bench" / "results" / "latest.json"
GUNICORN_CONF = ROOT / "docker" / "gunicorn.conf.py"
BENCH_EMAIL = "bench@example.invalid"
AUDIT_LIMIT = 200


# --- Set-up --------------------------------------------------------------------------------


def bench_environment(args: argparse.Namespace, data_dir: str) -> dict[str, str]:
    """Environment of both this process (seeding) and gunicorn."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "AWS_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="bench.settings",
        HERALD_ENVIRONMENT="local",
        HERALD_DEBUG="false",
        HERALD_DATA_DIR=data_dir,
        HERALD_LOG_LEVEL="WARNING",
        # Throttling stays on (it is part of every API request) but must never answer 429.
        HERALD_API_RATE="1000000/min",
        SECRET_KEY="bench-only-" + secrets.token_urlsafe(32),
        # Set in every deployment (docker-compose.yml); without it the $schema URLs are derived
        # from the request's Host header (once per response).
        HERALD_PUBLIC_URL="http://127.0.0.1",
        DATABASE_URL=args.database_url,
        WEB_CONCURRENCY=str(args.workers),
        HERALD_WEB_THREADS=str(args.threads),
        # No worker recycling in the middle of a measurement.
        HERALD_WEB_MAX_REQUESTS="0",
        PYTHONPATH=str(ROOT),
    )
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    else:
        env.pop("REDIS_URL", None)
    return env


def migrate() -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", interactive=False, verbosity=0)
    return time.perf_counter() - started


def seed(*, workspaces: int, events: int) -> tuple[str, str, int]:
    """(primary workspace id, API token, workspaces the user belongs to)."""
    from django.db import connection
    from django.utils import timezone

    from workspaces.access import Actor
    from workspaces.models import AccessAuditEvent, User, Workspace
    from workspaces.services import api_token_create, organization_create, workspace_create

    user = User.objects.filter(email=BENCH_EMAIL).first()
    if user is None:
        user = User.objects.create_user(BENCH_EMAIL, secrets.token_urlsafe(24))
    actor = Actor(user=user)
    member_of = Workspace.objects.filter(memberships__user=user)
    if not member_of.exists():
        organization = organization_create(actor=actor, name="Bench Org")
        for number in range(workspaces):
            workspace_create(
                actor=actor, organization_id=organization.pk, name=f"Bench {number:02d}"
            )
    primary = member_of.order_by("name").first()
    assert primary is not None

    have = AccessAuditEvent.objects.filter(workspace_id=primary.pk).count()
    actions = list(AccessAuditEvent.Action.values)
    now = timezone.now()
    AccessAuditEvent.objects.bulk_create(
        AccessAuditEvent(
            workspace_id=primary.pk,
            action=actions[n % len(actions)],
            actor_user_id=str(user.pk),
            subject_email=f"member{n}@example.invalid",
            subject_user_id=str(n),
            invitation_id=f"inv-{n}" if n % 3 == 0 else "",
            previous_role="editor" if n % 2 else "",
            previous_status="active" if n % 2 else "",
            role="admin" if n % 2 else "viewer",
            status="active",
            # Varied microseconds, as real events have (one in ten ends in a zero, which
            # PostgreSQL drops from its text): the same for every run, whatever the clock says.
            created_at=now.replace(microsecond=0)
            - timedelta(seconds=n, microseconds=(n * 7919 + 1) % 1_000_000),
        )
        for n in range(have, events)
    )
    _, token = api_token_create(user=user, name="bench", permissions=["api:read"])
    # Planner statistics, as autovacuum keeps them on a live database. Without them PostgreSQL
    # plans the just-filled tables as if they were empty (and prepares those plans).
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return str(primary.pk), token, member_of.count()


def query_counts(targets: list[Target], token: str) -> dict[str, int]:
    """SQL statements per request, measured in-process through the full middleware stack."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(headers={"authorization": f"Bearer {token}"})
    counts = {}
    for target in targets:
        client.get(target.path)  # first call may warm caches
        with CaptureQueriesContext(connection) as queries:
            response = client.get(target.path)
        assert response.status_code == 200, (target.name, response.status_code)
        counts[target.name] = len(queries)
    return counts


def profile(targets: list[Target], token: str, requests: int) -> None:
    """cProfile of in-process requests (no HTTP server, no client): where the time goes."""
    import cProfile
    import pstats

    from django.test import Client

    client = Client(headers={"authorization": f"Bearer {token}"})
    for target in targets:
        for _ in range(20):
            client.get(target.path)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(requests):
            client.get(target.path)
        profiler.disable()
        per_request = (time.perf_counter() - started) / requests * 1000
        print(
            f"\n=== profile {target.name}: {requests} requests, {per_request:.2f} ms each (profiled)"
        )
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(15)


# --- gunicorn ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def gunicorn(
    env: dict[str, str], port: int, log_dir: Path, config: Path = GUNICORN_CONF
) -> Iterator[subprocess.Popen[bytes]]:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        str(config),
        "--bind",
        f"127.0.0.1:{port}",
        "--access-logfile",
        str(log_dir / "access.log"),
        "--error-logfile",
        str(log_dir / "error.log"),
        "--log-level",
        "warning",
        "config.wsgi:application",
    ]
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit(
                    f"gunicorn exited with {process.returncode}:\n{tail(log_dir / 'error.log')}"
                )
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _ = fetch(port, "/api/v1/health", {})
                if status == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"gunicorn did not answer within 60 s:\n{tail(log_dir / 'error.log')}"
                )
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


# The container's configuration plus two hooks: every request a worker thread handles (HTTP
# parsing, Django, writing the response and the access log) runs under that thread's cProfile,
# and each worker writes its threads' profiles when it exits. Bench-only (--server-profile).
PROFILING_CONF = """\
import cProfile, os, threading, time
exec(compile(open({conf!r}).read(), {conf!r}, "exec"))
_CLOCK = time.thread_time if {cpu!r} else time.perf_counter
_configured_post_worker_init = globals().get("post_worker_init")


def post_worker_init(worker):
    if _configured_post_worker_init is not None:
        _configured_post_worker_init(worker)
    profiles, handle = {{}}, worker.handle

    def profiled(*args, **kwargs):
        profile = profiles.get(threading.get_ident())
        if profile is None:
            profile = profiles[threading.get_ident()] = cProfile.Profile(_CLOCK)
        profile.enable()
        try:
            return handle(*args, **kwargs)
        finally:
            profile.disable()

    worker.handle = profiled
    worker.herald_profiles = profiles


def worker_exit(server, worker):
    for ident, profile in getattr(worker, "herald_profiles", {{}}).items():
        profile.dump_stats(os.path.join({directory!r}, f"worker-{{worker.pid}}-{{ident}}.prof"))
"""


def profiling_config(scratch: Path, directory: Path, *, cpu: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = scratch / "gunicorn-profiling.conf.py"
    path.write_text(
        PROFILING_CONF.format(conf=str(GUNICORN_CONF), cpu=cpu, directory=str(directory))
    )
    return path


def print_server_profile(directory: Path) -> None:
    import pstats

    files = sorted(str(path) for path in directory.glob("worker-*.prof"))
    if not files:
        print(f"no server profiles in {directory}")
        return
    stats = pstats.Stats(*files, stream=sys.stdout)
    print(f"\n=== server profile: {len(files)} worker threads, all targets ({directory})")
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)


# --- Load generator ------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    path: str
    headers: dict[str, str]
    check: Callable[[Any], str | None]  # validates a decoded body; returns a problem or None


@dataclass
class Measurement:
    requests: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    database_cpu: float = 0.0
    switches: tuple[int, int] = (0, 0)  # gunicorn's (voluntary, involuntary) context switches
    split: list[int] = field(default_factory=list)  # connections held by each gunicorn worker

    @property
    def rps(self) -> float:
        return self.requests / self.elapsed if self.elapsed else 0.0


def fetch(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class LoadError(RuntimeError):
    pass


def open_connections(
    port: int, count: int, server_pid: int, *, balance: bool
) -> tuple[list[http.client.HTTPConnection], list[int]]:
    """``count`` open keep-alive connections, and how many of them each gunicorn worker holds
    (most first).

    gunicorn serves a keep-alive connection from the worker that accepted it until it closes.
    Connections opened together mostly go to one worker: its poller wakes first and accepts
    one after the other (with 8 connections and 2 workers, 8:0 and 7:1 were the most common
    splits, 4:4 about one time in fifteen). One worker, one GIL, then serves nearly all the
    load while the other idles, and the requests/s of the phase depend on the draw. With
    ``balance`` the connections are opened one at a time and a connection is kept only while
    the worker that accepted it holds fewer than its share (the others are closed again), so
    every target of every round is measured with the same even split, as a server with many
    clients arriving at different times sees it. The split is recorded either way."""
    workers = max(len(child_pids(server_pid)), 1)
    share = -(-count // workers) if balance else count
    kept: list[http.client.HTTPConnection] = []
    held: Counter[int] = Counter()
    attempts = 0
    while len(kept) < count:
        attempts += 1
        if attempts > 50 * count:
            for connection in kept:
                connection.close()
            raise LoadError(f"{count} connections did not spread evenly over {workers} workers")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.connect()
        client_port = connection.sock.getsockname()[1]
        deadline = time.monotonic() + 5
        while (owner := connection_owners(server_pid, port).get(client_port)) is None:
            if time.monotonic() > deadline:
                raise LoadError("no gunicorn worker accepted a connection within 5 s")
            time.sleep(0.001)
        if held[owner] < share:
            kept.append(connection)
            held[owner] += 1
        else:
            connection.close()
    return kept, sorted(held.values(), reverse=True) + [0] * (workers - len(held))


def load(
    port: int,
    target: Target,
    *,
    seconds: float,
    concurrency: int,
    server_pid: int,
    database: str = "",
    balance: bool = True,
) -> Measurement:
    """Closed loop: `concurrency` threads, each on its own keep-alive connection (spread evenly
    over the gunicorn workers with `balance`, see ``open_connections``)."""
    stop = threading.Event()
    failures: list[str] = []
    per_thread: list[list[float]] = [[] for _ in range(concurrency)]
    start_barrier = threading.Barrier(concurrency + 1)
    headers = {**target.headers, "Connection": "keep-alive"}
    connections, split = open_connections(port, concurrency, server_pid, balance=balance)

    def run(slot: int) -> None:
        latencies = per_thread[slot]
        conn = connections[slot]
        start_barrier.wait()
        try:
            while not stop.is_set():
                sent = time.perf_counter()
                conn.request("GET", target.path, headers=headers)
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    failures.append(f"HTTP {response.status}: {body[:300]!r}")
                    stop.set()
                    return
                if stop.is_set():  # finished after the measured window: not counted
                    return
                latencies.append(time.perf_counter() - sent)
        except (OSError, http.client.HTTPException) as exc:
            if not stop.is_set():
                failures.append(f"{type(exc).__name__}: {exc}")
                stop.set()
        finally:
            conn.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    cpu_before = process_tree_cpu_seconds(server_pid)
    switches_before = process_tree_context_switches(server_pid)
    database_before = database_backends_cpu(database) if database else {}
    client_before = time.process_time()
    start_barrier.wait()
    started = time.perf_counter()
    stop.wait(seconds)
    stop.set()
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_before
    server_cpu = process_tree_cpu_seconds(server_pid) - cpu_before
    switches_after = process_tree_context_switches(server_pid)
    switches = (switches_after[0] - switches_before[0], switches_after[1] - switches_before[1])
    database_cpu = backends_cpu_since(database, database_before) if database else 0.0
    for thread in threads:
        thread.join(timeout=35)
    if failures:
        raise LoadError(f"{target.name}: {failures[0]}")
    latencies = [value for chunk in per_thread for value in chunk]
    return Measurement(
        len(latencies), elapsed, latencies, server_cpu, client_cpu, database_cpu, switches, split
    )


# --- Report --------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    from importlib.metadata import version

    from django.db import connection

    found = {
        name: version(name) for name in ("Django", "djangorestframework", "gunicorn", "psycopg")
    }
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        found["postgresql"] = cursor.fetchone()[0]
    return found


# --- Main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="measured seconds per target and round"
    )
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="warm-up seconds per target and round"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds over all targets; the median counts"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="client threads (connections)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker (1 = sync)")
    parser.add_argument(
        "--database-url", default=os.environ.get("HERALD_BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("HERALD_BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        help="cache for throttling, as in production; '' for the in-process cache",
    )
    parser.add_argument("--reuse-db", action="store_true", help="keep herald_bench and its data")
    parser.add_argument("--workspaces", type=int, default=20)
    parser.add_argument("--events", type=int, default=250, help="access-audit events (>= 200)")
    parser.add_argument(
        "--extended",
        action="store_true",
        help="also load /api/v1/health (DRF, no auth, no DB) and the audit page with limit=1",
    )
    parser.add_argument(
        "--min-ratio", type=float, default=0.15, help="audit page (200 rows) / bare view floor"
    )
    parser.add_argument(
        "--min-workspaces-ratio",
        type=float,
        default=0.12,
        help="workspace list (20) / bare view floor",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also cProfile N in-process requests per API target and print the top",
    )
    parser.add_argument(
        "--only",
        type=lambda text: [name for name in text.split(",") if name],
        help="comma-separated targets to run besides bare and access_audit_200, "
        "which always run (e.g. access_audit_1; '-' for only those two)",
    )
    parser.add_argument(
        "--no-balance",
        dest="balance",
        action="store_false",
        help="keep whatever split of the connections over the gunicorn workers the "
        "kernel gives (by default they are opened again until it is even)",
    )
    parser.add_argument(
        "--server-profile",
        type=Path,
        metavar="DIR",
        help="cProfile every request inside the gunicorn worker threads, write the "
        "profiles to DIR and print them (the figures of such a run are slowed down)",
    )
    parser.add_argument(
        "--server-profile-clock",
        choices=("wall", "cpu"),
        default="cpu",
        help="cpu: thread CPU time (where the CPU goes); wall: also time spent blocked "
        "on sockets and on the GIL",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.events < AUDIT_LIMIT:
        parser.error(f"--events must be at least {AUDIT_LIMIT}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="herald-bench-") as scratch:
        scratch_dir = Path(scratch)
        env = bench_environment(args, str(scratch_dir / "data"))
        (scratch_dir / "data" / "static").mkdir(parents=True)  # STATIC_ROOT; nothing collected
        os.environ.clear()
        os.environ.update(env)

        print(f"database {args.database_url} ({'reused' if args.reuse_db else 'fresh'})")
        ensure_database(args.database_url, fresh=not args.reuse_db)
        import django

        django.setup()
        migrate_seconds = migrate()
        workspace_id, token, workspace_count = seed(workspaces=args.workspaces, events=args.events)
        print(
            f"migrated in {migrate_seconds:.1f} s; seeded {workspace_count} workspaces, "
            f">= {args.events} audit events"
        )

        auth = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        audit = f"/api/v1/workspaces/{workspace_id}/access-audit"
        targets = [
            Target(
                "bare",
                "/bench/bare",
                {"Accept": "application/json"},
                lambda body: None if body == {"status": "ok"} else f"unexpected {body!r}",
            ),
            Target(
                "workspaces",
                "/api/v1/workspaces",
                auth,
                lambda body: (
                    None
                    if len(body.get("items", [])) == workspace_count
                    else f"{len(body.get('items', []))} items, expected {workspace_count}"
                ),
            ),
            Target(
                "access_audit_200",
                f"{audit}?limit={AUDIT_LIMIT}",
                auth,
                lambda body: (
                    None
                    if isinstance(body, list) and len(body) == AUDIT_LIMIT
                    else f"{len(body)} rows, expected {AUDIT_LIMIT}"
                ),
            ),
        ]
        if args.extended:  # decomposition: DRF without auth/DB, and the audit page's fixed cost
            targets[1:1] = [
                Target(
                    "health",
                    "/api/v1/health",
                    {"Accept": "application/json"},
                    lambda body: None if body.get("status") == "ok" else f"unexpected {body!r}",
                ),
            ]
            targets.insert(
                -1,
                Target(
                    "access_audit_1",
                    f"{audit}?limit=1",
                    auth,
                    lambda body: None if len(body) == 1 else f"{len(body)} rows",
                ),
            )
        if args.only:  # bare (every ratio is to it) and the checked audit page always run
            unknown = set(args.only) - {t.name for t in targets} - {"-"}
            if unknown:
                raise SystemExit(f"--only: unknown target(s) {', '.join(sorted(unknown))}")
            keep = {"bare", "access_audit_200", *args.only}
            targets = [t for t in targets if t.name in keep]
        api_targets = [t for t in targets if t.headers is auth]
        queries = query_counts(api_targets, token)
        if args.profile:
            profile(api_targets, token, args.profile)
        from django.db import connections

        meta = {"versions": versions()}
        connections.close_all()

        load_start = loadavg()
        port = free_port()
        rounds: dict[str, list[Measurement]] = {t.name: [] for t in targets}
        config = GUNICORN_CONF
        if args.server_profile:
            for stale in args.server_profile.glob("worker-*.prof"):
                stale.unlink()
            config = profiling_config(
                scratch_dir, args.server_profile, cpu=args.server_profile_clock == "cpu"
            )
        with gunicorn(env, port, scratch_dir, config) as server:
            for target in targets:
                status, body = fetch(port, target.path, target.headers)
                problem = f"HTTP {status}" if status != 200 else target.check(json.loads(body))
                if problem:
                    raise SystemExit(f"{target.name}: {problem}: {body[:300]!r}")
            print(
                f"gunicorn pid {server.pid} on 127.0.0.1:{port}: {args.workers} workers x "
                f"{args.threads} threads; client: {args.concurrency} connections, "
                f"{args.warmup:g} s warm-up + {args.seconds:g} s per target, {args.rounds} round(s)"
            )
            try:
                for number in range(1, args.rounds + 1):
                    for target in targets:
                        load(
                            port,
                            target,
                            seconds=args.warmup,
                            concurrency=args.concurrency,
                            server_pid=server.pid,
                            balance=args.balance,
                        )
                        result = load(
                            port,
                            target,
                            seconds=args.seconds,
                            concurrency=args.concurrency,
                            server_pid=server.pid,
                            database=database_name(args.database_url),
                            balance=args.balance,
                        )
                        rounds[target.name].append(result)
                        print(
                            f"  round {number} {target.name:<18} {result.rps:8.1f} req/s "
                            f"(connections per worker {':'.join(map(str, result.split))})"
                        )
            except LoadError as exc:
                print(f"ABORTED: {exc}\n{tail(scratch_dir / 'error.log')}", file=sys.stderr)
                return 2
        load_end = loadavg()
        if args.server_profile:
            print_server_profile(args.server_profile)

    bare_rps = statistics.median(m.rps for m in rounds["bare"])
    bare_cpu = sum(m.server_cpu for m in rounds["bare"]) / max(
        sum(m.requests for m in rounds["bare"]), 1
    )
    report: dict[str, Any] = {}
    for target in targets:
        measurements = rounds[target.name]
        latencies = [v for m in measurements for v in m.latencies]
        requests = sum(m.requests for m in measurements)
        rps = statistics.median(m.rps for m in measurements)
        report[target.name] = {
            "path": target.path.replace(workspace_id, "{id}"),
            "requests": requests,
            "rps": round(rps, 1),
            "rps_per_round": [round(m.rps, 1) for m in measurements],
            "connections_per_worker_per_round": [m.split for m in measurements],
            "server_cpu_ms_per_request_per_round": [
                round(m.server_cpu / max(m.requests, 1) * 1000, 3) for m in measurements
            ],
            "ratio_to_bare": round(rps / bare_rps, 3),
            "latency_ms": {
                "p50": round(percentile(latencies, 0.50) * 1000, 2),
                "p90": round(percentile(latencies, 0.90) * 1000, 2),
                "p99": round(percentile(latencies, 0.99) * 1000, 2),
            },
            "server_cpu_ms_per_request": round(
                sum(m.server_cpu for m in measurements) / max(requests, 1) * 1000, 3
            ),
            # Same comparison by server CPU per request: less sensitive to other load on the box.
            "cpu_ratio_to_bare": round(
                bare_cpu / (sum(m.server_cpu for m in measurements) / max(requests, 1)), 3
            )
            if requests and bare_cpu
            else None,
            "client_cpu_ms_per_request": round(
                sum(m.client_cpu for m in measurements) / max(requests, 1) * 1000, 3
            ),
            # The PostgreSQL backends serving herald_bench: the same two cores pay for them.
            "postgres_cpu_ms_per_request": round(
                sum(m.database_cpu for m in measurements) / max(requests, 1) * 1000, 3
            ),
            "sql_queries_per_request": queries.get(target.name, 0),
            # Per request, in all gunicorn threads: blocking on a socket or on the GIL
            # (voluntary) and preemption by another runnable task (involuntary).
            "server_context_switches_per_request": {
                kind: round(sum(m.switches[index] for m in measurements) / max(requests, 1), 1)
                for index, kind in enumerate(("voluntary", "involuntary"))
            },
        }

    audit_ratio = report["access_audit_200"]["ratio_to_bare"]
    workspaces_ratio = report.get("workspaces", {}).get("ratio_to_bare")
    passed = audit_ratio >= args.min_ratio and (
        workspaces_ratio is None or workspaces_ratio >= args.min_workspaces_ratio
    )
    print()
    print(
        f"{'target':<18} {'req/s':>9} {'ratio':>7} {'p50 ms':>8} {'p99 ms':>8} {'srv CPU ms/req':>15} "
        f"{'CPU ratio':>9} {'PG ms/req':>9} {'SQL':>4} {'ctx sw/req':>11}"
    )
    for name, row in report.items():
        print(
            f"{name:<18} {row['rps']:>9.1f} {row['ratio_to_bare']:>7.3f} {row['latency_ms']['p50']:>8.2f} "
            f"{row['latency_ms']['p99']:>8.2f} {row['server_cpu_ms_per_request']:>15.3f} "
            f"{row['cpu_ratio_to_bare'] or 0:>9.3f} {row['postgres_cpu_ms_per_request']:>9.3f} "
            f"{row['sql_queries_per_request']:>4} "
            f"{row['server_context_switches_per_request']['voluntary']:>5.1f}+"
            f"{row['server_context_switches_per_request']['involuntary']:<5.1f}"
        )
    print(f"load average at start / end: {load_start} / {load_end}")
    verdict = "PASS" if passed else "FAIL"
    print(
        f"\n{verdict}: access-audit page (200 rows) at {audit_ratio:.1%} of the bare view "
        f"(floor {args.min_ratio:.0%})"
        + (
            ""
            if workspaces_ratio is None
            else f"; workspace list at {workspaces_ratio:.1%} "
            f"(floor {args.min_workspaces_ratio:.0%})"
        )
    )

    write_results(
        {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(
                [Path(sys.executable).name, "bench/api.py", *(argv or sys.argv[1:])]
            ),
            "git_revision": git_revision(),
            "machine": {
                **machine(),
                "loadavg_1_5_15_start": load_start,
                "loadavg_1_5_15_end": load_end,
            },
            **meta,
            "server": {
                "gunicorn_config": "docker/gunicorn.conf.py",
                "workers": args.workers,
                "threads": args.threads,
                "worker_class": "gthread" if args.threads > 1 else "sync",
                "connections_balanced": args.balance,
                "profiled": bool(args.server_profile),
                "database": "PostgreSQL " + meta["versions"]["postgresql"],
                "cache": "Redis" if args.redis_url else "in-process",
            },
            "client": {
                "kind": "python threads, http.client keep-alive, closed loop",
                "concurrency": args.concurrency,
                "warmup_seconds": args.warmup,
                "seconds": args.seconds,
                "rounds": args.rounds,
            },
            "targets": report,
            "check": {
                "target": "access_audit_200",
                "min_ratio": args.min_ratio,
                "ratio": audit_ratio,
                "workspaces_min_ratio": args.min_workspaces_ratio,
                "workspaces_ratio": workspaces_ratio,
                "passed": passed,
            },
        },
        args.output,
    )
    print(
        f"results: {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}"
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
