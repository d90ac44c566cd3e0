#!/usr/bin/env python
"""Delivery benchmark: Celery workers delivering to a stand-in Mastodon, next to a plain thread pool.

    .venv/bin/python bench/delivery.py               # or: make bench-delivery
    .venv/bin/python bench/delivery.py --concurrency 4 --lag-publications 0

What it does (details in bench/README.md), on the production path (PostgreSQL, Redis broker):

1. creates the PostgreSQL database ``herald_bench_delivery`` (dropped and re-created), migrates
   it, flushes its own Redis database, starts the stand-in Mastodon
   (``python -m tests.providers.mastodon.standin``) answering every request after ``--delay-ms`` (300 ms),
   and seeds through the services: a user, an organization, workspaces, ``--accounts`` connected
   Mastodon accounts with a registered app, and every publication as a draft;
2. starts ``--workers`` Celery worker processes (``--pool``, ``--concurrency`` each) and Celery
   beat (dispatch every ``--dispatch-interval`` seconds);
3. throughput: a plain ``ThreadPoolExecutor`` with the same total concurrency sends
   ``--destinations`` status posts straight to the stand-in (same body and headers as the
   adapter, one ``requests.Session`` per thread); then ``publication_publish_now`` for every
   throughput publication (``--destinations`` destinations in all) while the workers do not
   consume, and the workers deliver them once they resume (with ``--baseline-runs 2`` the
   thread pool runs again afterwards). Deliveries/s run from the moment the workers resume to
   the last ``published_at``; the ratio divides it by the (faster) thread-pool rate;
4. dispatch lag: ``--lag-publications`` publications (one destination each) scheduled with
   ``publication_schedule`` for instants spread over one second a few seconds ahead. Beat's
   dispatcher moves them to the queue; the lag of a destination is the moment its message
   reached the broker (recorded by a probe in the worker) minus its due time. Also reported: the
   lag until a worker started the send (``claimed_at``), which includes waiting for a free worker;
5. duplicates and losses: every post the stand-in accepted against every destination in the
   database (published, external id matches, one post per idempotency key);
6. prints a table, writes bench/results/delivery.json and stops every process it started.

Exit status 1 when a target is missed, 2 when the run could not complete. Traffic goes to
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/delivery.py` puts bench/ first on the path, not ROOT
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402  (after the path set-up above)
    backends_cpu_since,
    database_backends_cpu,
    database_name,
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    percentile,
    process_tree_cpu_seconds,
    seconds_after,
    write_results,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_delivery"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
RESULTS = ROOT / "bench" / "results" / "delivery.json"
BENCH_EMAIL = "bench-delivery@example.invalid"
PROBE_ENV = "HERALD_BENCH_PUBLISH_LOG"
SEND_TASK = "publishing.delivery_send"


# --- Worker-side probe ---------------------------------------------------------------------
# The workers run ``celery -A bench.delivery:celery_app``: the production Celery app, plus a
# receiver that appends one line per delivery_send message published to the broker (time,
# destination id). The dispatcher runs inside the workers, so this is when beat-dispatched work
# actually reached the broker. Without PROBE_ENV set, nothing is recorded.


def _probe_publish(sender: Any = None, body: Any = None, **_: Any) -> None:
    fd = _probe_fd()
    if fd is None or sender != SEND_TASK:
        return
    try:
        destination_id = body[0][0]
    except (TypeError, IndexError, KeyError):
        return
    os.write(fd, f"{time.time():.6f} {destination_id}\n".encode())  # O_APPEND: atomic per line


_probe_state: dict[str, int | None] = {}


def _probe_fd() -> int | None:
    if "fd" not in _probe_state:
        path = os.environ.get(PROBE_ENV)
        _probe_state["fd"] = (
            os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if path else None
        )
    return _probe_state["fd"]


def _celery_app() -> Any:
    from celery.signals import after_task_publish

    from config.celery import app

    after_task_publish.connect(_probe_publish, weak=False)
    return app


celery_app = _celery_app()


# --- Set-up --------------------------------------------------------------------------------


def bench_environment(args: argparse.Namespace, data_dir: str, probe_log: str) -> dict[str, str]:
    """Environment of this process (seeding, publishing) and of every worker and beat."""
    from cryptography.fernet import Fernet

    proxies = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HERALD_", "AWS_", "CELERY_")) and k.lower() not in proxies
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        HERALD_ENVIRONMENT="local",
        HERALD_DEBUG="false",
        HERALD_DATA_DIR=data_dir,
        HERALD_LOG_LEVEL=args.log_level,
        SECRET_KEY="bench-only-" + secrets.token_urlsafe(32),
        HERALD_PUBLIC_URL="http://127.0.0.1",
        # One key for every process: the workers decrypt what this process encrypted.
        HERALD_CREDENTIALS_KEY=Fernet.generate_key().decode(),
        # The stand-in listens on 127.0.0.1, which the URL guard refuses otherwise.
        HERALD_ALLOW_PRIVATE_PROVIDER_URLS="true",
        DATABASE_URL=args.database_url,
        REDIS_URL=args.redis_url,
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(ROOT),
        **{PROBE_ENV: probe_log},
    )
    if args.dispatch_interval is not None:  # else the default of config/settings.py, as deployed
        env["HERALD_DISPATCH_INTERVAL_SECONDS"] = f"{args.dispatch_interval:g}"
    return env


def flush_redis(redis_url: str) -> None:
    import redis

    db = int(urlsplit(redis_url).path.lstrip("/") or 0)
    if db == 0:
        raise SystemExit(
            "refusing to flush Redis database 0: pass --redis-url with a dedicated database"
        )
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=3, socket_timeout=5)
    client.flushdb()
    client.close()


# --- Processes -----------------------------------------------------------------------------


class Processes:
    """Every child process runs in its own session (process group); stop() ends them all."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self, name: str, command: list[str], env: dict[str, str], *, stdout: Any = None
    ) -> subprocess.Popen[bytes]:
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115  (closed with the child)
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=stdout if stdout is not None else log,
            stderr=log,
        )
        log.close()  # the child holds its own descriptor
        self.children[name] = process
        return process

    def check(self) -> None:
        for name, process in self.children.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.tail(name)}")

    def tail(self, name: str, lines: int = 25) -> str:
        path = self.log_dir / f"{name}.log"
        try:
            return "\n".join(
                path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to each process group (Celery's warm shutdown), SIGKILL after 20 s."""
        for process in self.children.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            # Whatever is left of the group (a stuck leader, orphaned pool children): SIGKILL.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)


def start_standin(processes: Processes, env: dict[str, str]) -> dict[str, Any]:
    process = processes.start(
        "standin",
        [sys.executable, "-m", "tests.providers.mastodon.standin", "--port", "0"],
        env,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    ready: dict[str, Any] = {}

    def read_first_line() -> None:
        line = process.stdout.readline() if process.stdout else b""
        with contextlib.suppress(ValueError):
            ready.update(json.loads(line))

    reader = threading.Thread(target=read_first_line, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if not ready:
        raise RuntimeError(f"the stand-in did not start:\n{processes.tail('standin')}")
    return ready


def control(base_url: str, method: str, path: str, body: Any = None) -> Any:
    import requests

    response = requests.request(method, base_url + path, json=body, timeout=30)
    response.raise_for_status()
    return response.json()


def wait_for_workers(names: list[str], processes: Processes, timeout: float = 90) -> None:
    """Until every worker answers a broadcast ping (it consumes from the broker)."""
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        processes.check()
        for reply in celery_app.control.ping(timeout=1.0) or []:
            seen.update(reply)
        if all(any(s.startswith(name + "@") for s in seen) for name in names):
            return
    raise RuntimeError(f"workers not ready after {timeout:g} s (seen: {sorted(seen)})")


# --- Seeding (through the services) --------------------------------------------------------


@dataclass
class Seeded:
    actor: Any
    workspaces: dict[str, Any]
    access_token: str
    drafts: dict[str, list[str]] = field(default_factory=dict)  # phase -> publication ids
    create_seconds_each: float = 0.0


def seed(args: argparse.Namespace, standin: dict[str, Any]) -> Seeded:
    from providers import credentials
    from publishing.models import Account, ProviderApp
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import organization_create, workspace_create

    fixtures = standin["fixtures"]
    user = User.objects.create_user(BENCH_EMAIL, secrets.token_urlsafe(24))
    actor = Actor(user=user)
    organization = organization_create(actor=actor, name="Bench delivery")
    # The lag publications are spread over as many workspaces as the dispatcher's per-workspace
    # cap (HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE) needs to let them all go in one tick: in one
    # workspace the cap holds all but the first 64 back on purpose (fairness), and the lag then
    # measures the delivery rate, not how soon the dispatcher moves due work to the queue.
    phases = ["warmup", "throughput"] + [f"lag{n}" for n in range(lag_workspaces(args))]
    workspaces = {
        phase: workspace_create(actor=actor, organization_id=organization.pk, name=f"Bench {phase}")
        for phase in phases
    }
    # One app per instance, registered with the stand-in like the OAuth flow does.
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
    app = ProviderApp.objects.create(
        provider="mastodon",
        instance_url=fixtures["instance_url"],
        credentials_encrypted=credentials.encrypt(
            {"client_id": registered["client_id"], "client_secret": registered["client_secret"]}
        ),
    )
    # Connected accounts as the OAuth callback stores them (the stand-in has one user, so they
    # share its token; each is a distinct Herald account).
    account_ids: dict[str, list[str]] = {}
    for phase, workspace in workspaces.items():
        account_ids[phase] = [
            str(
                Account.objects.create(
                    workspace=workspace,
                    provider="mastodon",
                    external_id=f"bench-{n}",
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
            for n in range(args.accounts)
        ]
    seeded = Seeded(actor=actor, workspaces=workspaces, access_token=fixtures["access_token"])
    per_publication = args.accounts
    publications = math.ceil(args.destinations / per_publication)
    started = time.perf_counter()
    seeded.drafts["warmup"] = create_drafts(
        seeded,
        workspaces["warmup"],
        account_ids["warmup"],
        count=max(1, args.warmup // per_publication),
        per_publication=per_publication,
        label="warm-up",
    )
    seeded.drafts["throughput"] = create_drafts(
        seeded,
        workspaces["throughput"],
        account_ids["throughput"],
        count=publications,
        per_publication=per_publication,
        label="throughput",
    )
    throughput_seconds = time.perf_counter() - started
    started = time.perf_counter()
    if args.lag_publications:
        seeded.drafts["lag"] = []
        lag_phases = [phase for phase in phases if phase.startswith("lag")]
        for k, phase in enumerate(lag_phases):
            seeded.drafts["lag"] += create_drafts(
                seeded,
                workspaces[phase],
                account_ids[phase],
                count=len(range(k, args.lag_publications, len(lag_phases))),
                per_publication=1,
                label="lag",
            )
        seeded.create_seconds_each = (time.perf_counter() - started) / args.lag_publications
    print(
        f"seeded {len(seeded.drafts['throughput'])} throughput publications x {per_publication} accounts "
        f"in {throughput_seconds:.1f} s; {args.lag_publications} lag publications x 1 account "
        f"({seeded.create_seconds_each * 1000:.1f} ms each)"
    )
    return seeded


def lag_workspaces(args: argparse.Namespace) -> int:
    """Workspaces for the lag phase: each with fewer due publications than the dispatcher's
    per-workspace cap (one when the cap is off or there is no lag phase)."""
    from django.conf import settings

    cap = settings.HERALD_DISPATCH_MAX_QUEUED_PER_WORKSPACE
    publications: int = args.lag_publications
    if cap <= 1 or not publications:
        return 1
    return math.ceil(publications / (cap - 1))


def lag_workspace_ids(seeded: Seeded) -> list[Any]:
    return [w.pk for phase, w in seeded.workspaces.items() if phase.startswith("lag")]


def create_drafts(
    seeded: Seeded,
    workspace: Any,
    accounts: list[str],
    *,
    count: int,
    per_publication: int,
    label: str,
) -> list[str]:
    from publishing.services.publications import publication_create

    ids = []
    for n in range(count):
        chosen = [accounts[(n + k) % len(accounts)] for k in range(per_publication)]
        publication = publication_create(
            actor=seeded.actor,
            workspace_id=workspace.pk,
            text=f"Herald delivery benchmark, {label} post {n}: written once, delivered everywhere.",
            destinations=[{"account_id": account_id} for account_id in chosen],
        )
        ids.append(str(publication.pk))
    return ids


# --- Measurements --------------------------------------------------------------------------


def status_counts(workspace_id: Any) -> Counter[str]:
    """Destinations by status in a workspace (or a list of workspaces)."""
    from django.db.models import Count

    from publishing.models import Destination

    ids = workspace_id if isinstance(workspace_id, list) else [workspace_id]
    rows = (
        Destination.objects.filter(publication__workspace_id__in=ids)
        .values_list("status")
        .annotate(n=Count("pk"))
    )
    return Counter(dict(rows))


SETTLED = ("published", "failed", "blocked", "canceled")


def wait_settled(
    workspace_id: Any, expected: int, *, timeout: float, processes: Processes, label: str
) -> tuple[Counter[str], bool]:
    deadline = time.monotonic() + timeout
    last_print = 0.0
    while True:
        counts = status_counts(workspace_id)
        settled = sum(counts[s] for s in SETTLED)
        if settled >= expected:
            return counts, True
        now = time.monotonic()
        if now > deadline:
            return counts, False
        if now - last_print > 5:
            print(
                f"  {label}: {counts['published']}/{expected} published {dict(counts)}", flush=True
            )
            last_print = now
        processes.check()
        time.sleep(0.2)


def thread_pool_baseline(
    base_url: str, token: str, *, requests_total: int, concurrency: int, text: str
) -> dict[str, Any]:
    """The same POST /api/v1/statuses the adapter sends, from a plain thread pool."""
    import requests

    from providers.http import DEFAULT_CONNECT_TIMEOUT, USER_AGENT

    local = threading.local()
    failures: list[str] = []
    latencies: list[float] = []
    keys = [f"baseline-{uuid.uuid4().hex}" for _ in range(requests_total)]

    def send(key: str) -> None:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
            session.headers["User-Agent"] = USER_AGENT
        sent = time.perf_counter()
        response = session.post(
            base_url + "/api/v1/statuses",
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
            json={"status": text, "visibility": "public"},
            timeout=(DEFAULT_CONNECT_TIMEOUT, 10.0),
            allow_redirects=False,
        )
        body = response.json()
        if response.status_code != 200 or not body.get("id"):
            failures.append(f"HTTP {response.status_code}")
        latencies.append(time.perf_counter() - sent)

    cpu_before = time.process_time()
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in concurrent.futures.as_completed([pool.submit(send, key) for key in keys]):
            future.result()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    return {
        "requests": requests_total,
        "failures": len(failures),
        "seconds": round(elapsed, 3),
        "rps": round(requests_total / elapsed, 1),
        "latency_ms": {
            "p50": ms(percentile(latencies, 0.5)),
            "p99": ms(percentile(latencies, 0.99)),
        },
        "client_cpu_ms_per_request": round(cpu / requests_total * 1000, 3),
    }


def consumers(*, cancel: bool, queue: str, workers: int) -> None:
    """Every worker stops (or resumes) consuming ``queue``; waits for each to confirm."""
    control_ = celery_app.control
    call = control_.cancel_consumer if cancel else control_.add_consumer
    replies = call(queue, reply=True, timeout=5.0) or []
    if len(replies) < workers:
        raise RuntimeError(
            f"{'cancel' if cancel else 'add'}_consumer: {len(replies)} of {workers} workers replied"
        )


def throughput_phase(
    args: argparse.Namespace, seeded: Seeded, processes: Processes, worker_pids: list[int]
) -> dict[str, Any]:
    from django.db.models import Max, Min

    from publishing.models import Destination
    from publishing.services.publications import publication_publish_now

    workspace = seeded.workspaces["throughput"]
    expected = Destination.objects.filter(publication__workspace=workspace).count()
    # The workers stop consuming while this process publishes (each publish-now commits, then
    # its destinations' messages go to the broker), so the measurement is the workers' delivery
    # rate, not the rate of one client calling publish-now.
    queue = celery_app.conf.task_default_queue
    consumers(cancel=True, queue=queue, workers=len(worker_pids))
    started = time.perf_counter()
    for publication_id in seeded.drafts["throughput"]:
        publication_publish_now(
            actor=seeded.actor, publication_id=publication_id, expected_revision=None
        )
    enqueue_seconds = time.perf_counter() - started
    cpu_before = sum(process_tree_cpu_seconds(pid) for pid in worker_pids)
    database = database_name(args.database_url)
    database_before = database_backends_cpu(database)
    started_wall = time.time()
    consumers(cancel=False, queue=queue, workers=len(worker_pids))
    counts, complete = wait_settled(
        workspace.pk, expected, timeout=args.phase_timeout, processes=processes, label="throughput"
    )
    worker_cpu = sum(process_tree_cpu_seconds(pid) for pid in worker_pids) - cpu_before
    database_cpu = backends_cpu_since(database, database_before)
    span = Destination.objects.filter(
        publication__workspace=workspace, status="published"
    ).aggregate(last=Max("published_at"), first_claim=Min("claimed_at"))
    published = counts["published"]
    last = span["last"].timestamp() if span["last"] else time.time()
    seconds = max(last - started_wall, 1e-6)
    return {
        "destinations": expected,
        "publications": len(seeded.drafts["throughput"]),
        "complete": complete,
        "statuses": dict(counts),
        "published": published,
        "publish_now_seconds": round(enqueue_seconds, 3),
        "publish_now_per_second": round(len(seeded.drafts["throughput"]) / enqueue_seconds, 1),
        "seconds": round(seconds, 3),
        "deliveries_per_second": round(published / seconds, 1),
        "worker_cpu_ms_per_delivery": round(worker_cpu / max(published, 1) * 1000, 3),
        # Backends of this database (the polling of this process included, a few ms per second).
        "postgres_cpu_ms_per_delivery": round(database_cpu / max(published, 1) * 1000, 3),
    }


def lag_phase(
    args: argparse.Namespace, seeded: Seeded, processes: Processes, probe_log: Path
) -> dict[str, Any]:
    from config.errors import FieldValidationError
    from publishing.models import Destination
    from publishing.services.publications import publication_schedule

    drafts = seeded.drafts["lag"]
    # The due second must be far enough ahead that every publication is scheduled before the
    # first is due: time scheduling a sample (for an hour ahead; scheduling again replaces it).
    sample = drafts[:100]
    started = time.perf_counter()
    for publication_id in sample:
        publication_schedule(
            actor=seeded.actor,
            publication_id=publication_id,
            scheduled_at=datetime.now(UTC) + timedelta(hours=1),
            expected_revision=None,
        )
    each = (time.perf_counter() - started) / len(sample)
    lead = max(args.lag_lead, len(drafts) * each * 1.5 + 3)
    due_second = datetime.fromtimestamp(math.ceil(time.time() + lead), tz=UTC)
    spread = timedelta(seconds=1) / len(drafts)
    started = time.perf_counter()
    try:
        for n, publication_id in enumerate(drafts):
            publication_schedule(
                actor=seeded.actor,
                publication_id=publication_id,
                scheduled_at=due_second + spread * n,
                expected_revision=None,
            )
    except FieldValidationError as exc:
        raise RuntimeError(f"scheduling overran the due second ({exc}); raise --lag-lead") from exc
    schedule_seconds = time.perf_counter() - started
    remaining = due_second.timestamp() - time.time()
    print(
        f"lag: {len(drafts)} publications scheduled in {schedule_seconds:.1f} s, due in "
        f"[{due_second:%H:%M:%S}, +1 s), {remaining:.1f} s from now",
        flush=True,
    )
    if remaining < 0.5:
        raise RuntimeError("scheduling overran the due second; raise --lag-lead")
    workspace_ids = lag_workspace_ids(seeded)
    counts, complete = wait_settled(
        workspace_ids,
        len(drafts),
        timeout=args.phase_timeout + remaining,
        processes=processes,
        label="lag",
    )
    rows = list(
        Destination.objects.filter(publication__workspace_id__in=workspace_ids).values_list(
            "pk", "publication__scheduled_at", "claimed_at", "published_at", "attempts"
        )
    )
    enqueued = first_publish_times(probe_log)
    dispatch, start, published_lags, missing_probe = [], [], [], 0
    for pk, due, claimed, published, _ in rows:
        at = enqueued.get(str(pk))
        assert due is not None, "a measured destination has its due time"
        if at is None:
            missing_probe += 1
        else:
            dispatch.append(at - due.timestamp())
        if claimed is not None:
            start.append(seconds_after(due, claimed))
        if published is not None:
            published_lags.append(seconds_after(due, published))
    last_published = max((r[3] for r in rows if r[3] is not None), default=None)
    span = (last_published - due_second).total_seconds() if last_published else None
    return {
        "publications": len(drafts),
        "workspaces": len(workspace_ids),
        "due_window": [due_second.isoformat(), (due_second + timedelta(seconds=1)).isoformat()],
        "schedule_seconds": round(schedule_seconds, 2),
        "complete": complete,
        "statuses": dict(counts),
        "dispatch_lag_s": summary(dispatch),
        "start_lag_s": summary(start),
        "published_lag_s": summary(published_lags),
        "not_seen_by_probe": missing_probe,
        "deliveries_per_second_after_due": round(counts["published"] / span, 1) if span else None,
    }


def first_publish_times(probe_log: Path) -> dict[str, float]:
    first: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in probe_log.read_text().splitlines():
            at, _, destination_id = line.partition(" ")
            first.setdefault(destination_id, float(at))
    return first


def publish_counts(probe_log: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    with contextlib.suppress(OSError):
        for line in probe_log.read_text().splitlines():
            counts[line.partition(" ")[2]] += 1
    return counts


def audit(standin_url: str, workspace_ids: list[Any], probe_log: Path) -> dict[str, Any]:
    """Duplicates and losses: every post the stand-in accepted against the database."""
    from publishing.models import Destination

    posts = control(standin_url, "GET", "/__control/posts")["posts"]
    stats = control(standin_url, "GET", "/__control/stats")
    herald_posts = [
        p for p in posts if not str(p.get("idempotency_key") or "").startswith("baseline-")
    ]
    by_key = Counter(str(p.get("idempotency_key")) for p in herald_posts)
    ids_by_key = {str(p.get("idempotency_key")): str(p["id"]) for p in herald_posts}
    rows = list(
        Destination.objects.filter(publication__workspace_id__in=workspace_ids).values_list(
            "pk", "idempotency_key", "status", "external_id"
        )
    )
    # Settled without a post (failed, blocked, canceled) is a loss; still on its way when the
    # run ended (queued, sending, retry_wait, ambiguous) is reported as unsettled.
    not_published = [
        str(pk) for pk, _, status, _ in rows if status in SETTLED and status != "published"
    ]
    unsettled = [str(pk) for pk, _, status, _ in rows if status not in SETTLED]
    no_post = [
        str(pk) for pk, key, status, _ in rows if status == "published" and key not in by_key
    ]
    wrong_id = [
        str(pk)
        for pk, key, status, external in rows
        if status == "published" and key in ids_by_key and ids_by_key[key] != external
    ]
    known_keys = {key for _, key, _, _ in rows}
    messages = publish_counts(probe_log)
    return {
        "destinations": len(rows),
        "posts_accepted_total": stats["posts_accepted"],
        "posts_accepted_herald": len(herald_posts),
        "duplicates": sum(n - 1 for n in by_key.values() if n > 1),
        "posts_without_destination": sum(1 for key in by_key if key not in known_keys),
        "losses": len(not_published) + len(no_post),
        "unsettled": len(unsettled),
        "not_published": not_published[:20],
        "unsettled_ids": unsettled[:20],
        "published_without_post": no_post[:20],
        "external_id_mismatch": len(wrong_id),
        "idempotent_replays": int(stats.get("counters", {}).get("idempotent_replays", 0)),
        "send_messages": sum(messages.values()),
        "send_messages_beyond_first": sum(n - 1 for n in messages.values() if n > 1),
        "standin_requests": stats["requests"],
    }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.50), 3),
        "p95": round(percentile(values, 0.95), 3),
        "p99": round(percentile(values, 0.99), 3),
        "max": round(max(values), 3),
        "min": round(min(values), 3),
    }


# --- Report --------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    from importlib.metadata import version

    from django.db import connection

    found = {
        name: version(name)
        for name in ("Django", "celery", "kombu", "redis", "psycopg", "requests")
    }
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        found["postgresql"] = cursor.fetchone()[0]
    import redis

    client = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5)
    found["redis_server"] = str(client.info("server").get("redis_version", ""))
    client.close()
    return found


def dispatch_interval() -> float:
    """The beat interval of the dispatcher in this run (every process has this environment)."""
    from django.conf import settings

    return float(settings.HERALD_DISPATCH_INTERVAL_SECONDS)


# --- Main ----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--destinations", type=int, default=2000, help="throughput destinations")
    parser.add_argument(
        "--accounts", type=int, default=5, help="connected accounts = destinations per publication"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="Celery worker processes (2: HERALD_WORKER_PROCESSES of make run and compose)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="--concurrency of each worker (16: the default of HERALD_WORKER_CONCURRENCY)",
    )
    parser.add_argument(
        "--pool",
        choices=("prefork", "threads", "solo"),
        default="threads",
        help="threads as deployed (HERALD_WORKER_POOL; prefork enforces the task time limits)",
    )
    parser.add_argument(
        "--db-pool",
        type=int,
        default=8,
        help="HERALD_DB_POOL_SIZE of each worker (8, as docker-compose.yml; 0: no pool)",
    )
    parser.add_argument(
        "--delay-ms",
        type=int,
        default=300,
        help="stand-in response delay (300 ms: a real provider API answers in 200 ms to seconds)",
    )
    parser.add_argument(
        "--warmup", type=int, default=50, help="warm-up destinations before measuring"
    )
    parser.add_argument(
        "--lag-publications",
        type=int,
        default=2000,
        help="publications due in the same second (0 skips)",
    )
    parser.add_argument(
        "--lag-lead",
        type=float,
        default=5.0,
        help="minimum seconds between scheduling and due time",
    )
    parser.add_argument(
        "--dispatch-interval",
        type=float,
        default=None,
        help="beat: seconds between dispatcher ticks (HERALD_DISPATCH_INTERVAL_SECONDS; "
        "default: the setting's default, as deployed)",
    )
    parser.add_argument(
        "--phase-timeout", type=float, default=180.0, help="seconds to wait for a phase to settle"
    )
    parser.add_argument(
        "--log-level", default="INFO", help="HERALD_LOG_LEVEL of every process (production: INFO)"
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get("HERALD_BENCH_DELIVERY_DATABASE_URL", DEFAULT_DATABASE_URL),
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("HERALD_BENCH_DELIVERY_REDIS_URL", DEFAULT_REDIS_URL),
        help="broker and cache; this Redis database is flushed at the start",
    )
    parser.add_argument(
        "--keep-db", action="store_true", help="keep herald_bench_delivery afterwards"
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        metavar="DIR",
        help="copy the process logs and the publish probe's log to DIR",
    )
    parser.add_argument(
        "--baseline-runs",
        type=int,
        choices=(1, 2),
        default=1,
        help="thread-pool runs: 1 before the workers, 2 also after (the faster counts)",
    )
    parser.add_argument("--min-ratio", type=float, default=0.5)
    parser.add_argument("--max-lag-p99", type=float, default=2.0, help="seconds")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so that the finally clause below stops every child process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    concurrency = args.workers * (1 if args.pool == "solo" else args.concurrency)
    load_start = loadavg()
    with tempfile.TemporaryDirectory(prefix="herald-bench-delivery-") as scratch:
        scratch_dir = Path(scratch)
        probe_log = scratch_dir / "published.log"
        env = bench_environment(args, str(scratch_dir / "data"), str(probe_log))
        (scratch_dir / "data" / "static").mkdir(parents=True)
        os.environ.clear()
        os.environ.update(env)
        processes = Processes(scratch_dir)
        try:
            report = run(args, env, processes, scratch_dir, probe_log, concurrency)
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


def run(
    args: argparse.Namespace,
    env: dict[str, str],
    processes: Processes,
    scratch_dir: Path,
    probe_log: Path,
    concurrency: int,
) -> dict[str, Any]:
    print(f"database {args.database_url} (fresh); broker {args.redis_url} (flushed)")
    timings: dict[str, float] = {}
    last = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        timings[name] = round(now - last[0], 1)
        last[0] = now

    ensure_database(args.database_url, fresh=True)
    flush_redis(args.redis_url)
    import django

    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", interactive=False, verbosity=0)
    print(f"migrated in {time.perf_counter() - started:.1f} s")
    meta_versions = versions()

    standin = start_standin(processes, env)
    control(standin["url"], "POST", "/__control/faults", {"delay_ms": args.delay_ms})
    print(f"stand-in Mastodon at {standin['url']} answering after {args.delay_ms} ms")
    lap("set_up")
    seeded = seed(args, standin)
    lap("seed")
    from django.db import connections

    connections.close_all()

    names = [f"bench{n}" for n in range(1, args.workers + 1)]
    worker_pids = []
    # Celery takes "--pool prefork" for its default and uses the configured pool instead
    # (config/settings.py: HERALD_WORKER_POOL), so the pool is chosen through the setting.
    worker_env = {**env, "HERALD_DB_POOL_SIZE": str(args.db_pool)}
    # The ratio compares the workers with a thread pool of the same concurrency sending to the
    # same host: the delivery politeness caps (per account and per host, bench/fairness.py
    # measures them) would make the cap, not the workers, the bound. They are lifted here.
    worker_env["HERALD_PROVIDER_MAX_IN_FLIGHT_PER_ACCOUNT"] = "0"
    worker_env["HERALD_PROVIDER_MAX_IN_FLIGHT_PER_HOST"] = "0"
    if args.pool != "solo":
        worker_env["HERALD_WORKER_POOL"] = args.pool
    for name in names:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "bench.delivery:celery_app",
            "worker",
            "--pool",
            args.pool,
            "--loglevel",
            args.log_level,
            "-n",
            f"{name}@%h",
        ]
        if args.pool != "solo":
            command += ["--concurrency", str(args.concurrency)]
        worker_pids.append(processes.start(name, command, worker_env).pid)
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
    print(
        f"{args.workers} worker(s) x {args.pool} {concurrency // args.workers} = concurrency {concurrency}; "
        f"beat every {dispatch_interval():g} s"
    )

    # Warm-up: every process connected, every code path imported; not measured.
    from publishing.services.publications import publication_publish_now

    for publication_id in seeded.drafts["warmup"]:
        publication_publish_now(
            actor=seeded.actor, publication_id=publication_id, expected_revision=None
        )
    warm_expected = sum(status_counts(seeded.workspaces["warmup"].pk).values())
    counts, complete = wait_settled(
        seeded.workspaces["warmup"].pk,
        warm_expected,
        timeout=60,
        processes=processes,
        label="warm-up",
    )
    if not complete or counts["published"] != warm_expected:
        raise RuntimeError(f"warm-up did not publish: {dict(counts)}")

    lap("start_processes_and_warm_up")
    text = "Herald delivery benchmark, throughput post 0: written once, delivered everywhere."
    baseline_args = {"requests_total": args.destinations, "concurrency": concurrency, "text": text}
    print(f"thread pool x {concurrency}: {args.destinations} requests ...", flush=True)
    baseline_before = thread_pool_baseline(standin["url"], seeded.access_token, **baseline_args)
    lap("thread_pool_before")
    print(f"  {baseline_before['rps']} requests/s", flush=True)
    print(f"workers: {args.destinations} destinations ...", flush=True)
    throughput = throughput_phase(args, seeded, processes, worker_pids)
    lap("throughput")
    print(f"  {throughput['deliveries_per_second']} deliveries/s", flush=True)
    baseline_after = None
    if args.baseline_runs > 1:  # brackets the workers, against drift in the machine's load
        print(f"thread pool x {concurrency}: {args.destinations} requests ...", flush=True)
        baseline_after = thread_pool_baseline(standin["url"], seeded.access_token, **baseline_args)
        lap("thread_pool_after")
        print(f"  {baseline_after['rps']} requests/s", flush=True)
    baseline_rps = max(run["rps"] for run in (baseline_before, baseline_after) if run)
    ratio = throughput["deliveries_per_second"] / baseline_rps if baseline_rps else 0.0

    lag = lag_phase(args, seeded, processes, probe_log) if args.lag_publications else None
    lap("lag")
    audit_ids = [workspace.pk for workspace in seeded.workspaces.values()]
    checked = audit(standin["url"], audit_ids, probe_log)
    standin_cpu = process_tree_cpu_seconds(processes.children["standin"].pid)

    checks = {
        "ratio": {
            "value": round(ratio, 3),
            "target": f">= {args.min_ratio}",
            "passed": ratio >= args.min_ratio,
        },
        "duplicates": {
            "value": checked["duplicates"],
            "target": "0",
            "passed": checked["duplicates"] == 0,
        },
        "losses": {
            "value": checked["losses"],
            "target": "0",
            "unsettled": checked["unsettled"],
            "passed": not (
                checked["losses"] or checked["unsettled"] or checked["external_id_mismatch"]
            ),
        },
    }
    if lag is not None:
        p99 = lag["dispatch_lag_s"].get("p99", math.inf)
        complete_probe = lag["not_seen_by_probe"] == 0
        checks["dispatch_lag_p99"] = {
            "value": p99,
            "target": f"<= {args.max_lag_p99} s",
            "passed": complete_probe and p99 <= args.max_lag_p99,
        }
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "bench/delivery.py", *(sys.argv[1:])]),
        "git_revision": git_revision(),
        "machine": machine(),
        "versions": meta_versions,
        "setup": {
            "database": "PostgreSQL " + meta_versions["postgresql"],
            "broker": "Redis " + meta_versions["redis_server"],
            "workers": args.workers,
            "pool": args.pool,
            "concurrency_per_worker": concurrency // args.workers,
            "concurrency_total": concurrency,
            "dispatch_interval_s": dispatch_interval(),
            "standin_delay_ms": args.delay_ms,
            "accounts": args.accounts,
            "log_level": args.log_level,
            "db_pool_size": args.db_pool,
        },
        "throughput": throughput,
        "thread_pool": {
            "before": baseline_before,
            "after": baseline_after,
            "rps_used": baseline_rps,
        },
        "ratio": round(ratio, 3),
        "lag": lag,
        "audit": checked,
        "standin_cpu_ms_per_request": round(
            standin_cpu / max(checked["standin_requests"], 1) * 1000, 3
        ),
        "phase_seconds": timings,
        "checks": checks,
        "passed": all(c["passed"] for c in checks.values()),
    }


def print_report(report: dict[str, Any]) -> None:
    t, pool, audit_ = report["throughput"], report["thread_pool"], report["audit"]
    setup = report["setup"]
    print()
    print(
        f"concurrency {setup['concurrency_total']} ({setup['workers']} x {setup['pool']} "
        f"{setup['concurrency_per_worker']}), stand-in delay {setup['standin_delay_ms']} ms"
    )
    print(f"{'':<34} {'per s':>9} {'seconds':>8} {'p50 ms':>7} {'p99 ms':>7}")
    print(
        f"{'thread pool (before)':<34} {pool['before']['rps']:>9.1f} {pool['before']['seconds']:>8.1f} "
        f"{pool['before']['latency_ms']['p50']:>7} {pool['before']['latency_ms']['p99']:>7}"
    )
    print(f"{'workers: deliveries':<34} {t['deliveries_per_second']:>9.1f} {t['seconds']:>8.1f}")
    if pool["after"]:
        print(
            f"{'thread pool (after)':<34} {pool['after']['rps']:>9.1f} {pool['after']['seconds']:>8.1f} "
            f"{pool['after']['latency_ms']['p50']:>7} {pool['after']['latency_ms']['p99']:>7}"
        )
    print(
        f"CPU per delivery: worker {t['worker_cpu_ms_per_delivery']} ms, PostgreSQL "
        f"{t['postgres_cpu_ms_per_delivery']} ms; stand-in CPU per request "
        f"{report['standin_cpu_ms_per_request']} ms; publish-now of {t['publications']} publications (before the "
        f"workers resumed) took {t['publish_now_seconds']} s"
    )
    lag = report["lag"]
    if lag:
        print(
            f"\n{lag['publications']} publications due in one second "
            f"({lag['deliveries_per_second_after_due']} deliveries/s after the due time)"
        )
        print(f"{'lag (s)':<34} {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7}")
        for key, label in (
            ("dispatch_lag_s", "due -> message in broker"),
            ("start_lag_s", "due -> send started"),
            ("published_lag_s", "due -> published"),
        ):
            row = lag[key]
            print(
                f"{label:<34} {row.get('p50', 0):>7.3f} {row.get('p95', 0):>7.3f} {row.get('p99', 0):>7.3f} "
                f"{row.get('max', 0):>7.3f}"
            )
    print(
        f"\nstand-in accepted {audit_['posts_accepted_herald']} Herald posts for {audit_['destinations']} "
        f"destinations; idempotent replays {audit_['idempotent_replays']}; send messages "
        f"{audit_['send_messages']} ({audit_['send_messages_beyond_first']} beyond the first per destination)"
    )
    print(
        "phases (s): "
        + ", ".join(f"{name} {seconds:g}" for name, seconds in report["phase_seconds"].items())
    )
    print(
        f"load average at start / end: {report['machine']['loadavg_1_5_15_start']} / "
        f"{report['machine']['loadavg_1_5_15_end']}"
    )
    print()
    for name, check in report["checks"].items():
        print(
            f"{'PASS' if check['passed'] else 'FAIL'}  {name:<18} {check['value']!s:>8}  (target {check['target']})"
        )
    print(f"\n{'PASS' if report['passed'] else 'FAIL'}")


if __name__ == "__main__":
    sys.exit(main())
