#!/usr/bin/env python
"""Video burst benchmark: 100 video posts of 20 MB each, due at once, to seven networks' stand-ins
that process videos for several seconds, delivered by the shipped worker commands.

    .venv/bin/python bench/video_burst.py                          # or: make bench-video-burst
    .venv/bin/python bench/video_burst.py --posts 10 --size 2MB    # a smoke run

On the production path (PostgreSQL, Redis broker; details and figures in bench/README.md):

1. a fresh database ``herald_bench_video`` and its own Redis database (flushed); the stand-ins of
   the test suite (``tests/providers/<p>/standin.py``, real HTTP servers on 127.0.0.1 in this
   process) of X (chunked upload, then ``processing_info``), Bluesky (the video service's job),
   Mastodon (v2 media, 206 while processing), LinkedIn (Videos API, PROCESSING then AVAILABLE),
   Threads (a VIDEO container it fetches from Herald's signed URL, IN_PROGRESS for a few status
   reads), Telegram (``sendVideo``) and the generic webhook (the video's signed URL); the first
   four process each video for ``--processing`` seconds, Telegram and the webhook answer after
   ``--sync-delay-ms`` (their APIs answer once they have the video);
2. gunicorn (docker/gunicorn.conf.py) as ``HERALD_PUBLIC_URL``, ``--workers`` worker commands
   (``celery -A config worker``, pool and concurrency of config/settings.py) and beat;
3. ``--posts`` distinct MP4s (H.264/AAC, 640x360, 30 frames/s, ``--seconds`` long, ``--size``
   each): one encoded with PyAV (x264 ``fast``), the others the same packets re-muxed with their
   own metadata (distinct bytes: Bluesky's video service answers a video it has seen with the
   earlier job); each uploaded through the API with the CLI's tus client and probed by a worker;
4. one account per network, ``--posts`` publications (one video, one destination each, spread
   round-robin over the seven accounts) scheduled for the same second;
5. until every destination settled (or ``--timeout``): a sampler reads every 0.25 s how many
   destinations wait at stage ``processing`` (the network processing their video) and the
   workers' resident memory; each worker's log gives every ``delivery_send`` task's start and
   duration, hence the busy worker threads at each instant;
6. the audit: stand-in posts per destination (by a marker in each post's text), published
   destinations, and the time spent inside sends against the time destinations waited.

Exit status 1 when a goal is missed (0 duplicates, 0 lost, worker RSS < ``--max-rss-mb``, no
worker thread held while a network processes: every video on a network that processes answered
Pending (a ``destination.processing`` event), and no check was seen held by a worker for the
processing delay), 2 when the run could not complete. Traffic goes to 127.0.0.1 only.
Writes bench/results/video_burst.json (``--output``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/video_burst.py` puts bench/ first on the path
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402  (after the path set-up above)
    drop_database,
    ensure_database,
    git_revision,
    loadavg,
    machine,
    write_results,
)
from bench.api import free_port, gunicorn  # noqa: E402
from bench.burst import start_workers  # noqa: E402
from bench.delivery import (  # noqa: E402
    SETTLED,
    Processes,
    bench_environment,
    flush_redis,
    status_counts,
    summary,
    versions,
    wait_for_workers,
)
from bench.uploads import size as parse_size  # noqa: E402
from config.errors import DomainError  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/herald_bench_video"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/5"
RESULTS = ROOT / "bench" / "results" / "video_burst.json"
NETWORKS = ("x", "bluesky", "mastodon", "linkedin", "threads", "telegram", "webhook")
ASYNC_NETWORKS = ("x", "bluesky", "mastodon", "linkedin", "threads")
PROFILES = {"telegram": {"profile": "telegram.photo"}}  # Telegram's media format (sendVideo)
REDIRECT = "http://127.0.0.1/api/v1/accounts/oauth/callback"
MARKER = re.compile(r"\[vb-(\d+)\]")
TASK_DONE = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d+).*Task publishing\.delivery_send\[[0-9a-f-]+\] "
    r"(?:succeeded|raised|failed|retry)[^0-9]*?in ([0-9.e-]+)s"
)


# --- The videos -------------------------------------------------------------------------------


def encode_video(path: Path, size_bytes: int, seconds: int) -> None:
    """An H.264/AAC MP4 of about ``size_bytes``: 640x360 at 30 frames/s, noise in the picture
    (every frame its own) so that x264 (``fast``) spends the bit rate asked of it."""
    import av

    rate, width, height = 30, 640, 360
    bits = max(200_000, int(size_bytes * 8 / seconds) - 64_000)
    noise = [os.urandom(width * height) for _ in range(16)]
    with av.open(str(path), mode="w", format="mp4") as container:
        stream: Any = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.bit_rate = bits
        stream.options = {"preset": "fast", "maxrate": str(bits), "bufsize": str(bits)}
        sound: Any = container.add_stream("aac", rate=48000)
        sound.bit_rate = 64_000
        for index in range(seconds * rate):
            frame = av.VideoFrame(width, height, "yuv420p")
            frame.planes[0].update(noise[index % 16][index:] + noise[index % 16][:index])
            for plane in frame.planes[1:]:
                plane.update(bytes([(index * 5) % 256]) * plane.buffer_size)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
        samples = 1024
        for index in range(seconds * 48000 // samples):
            chunk = av.AudioFrame(format="fltp", layout="stereo", samples=samples)
            chunk.sample_rate, chunk.pts = 48000, index * samples
            for sound_plane in chunk.planes:
                sound_plane.update(bytes(sound_plane.buffer_size))
            container.mux(sound.encode(chunk))
        container.mux(sound.encode(None))


def remux_variant(source: Path, target: Path, n: int) -> None:
    """The same packets in a new MP4 whose metadata names variant ``n`` (distinct bytes, no
    encoding)."""
    import av

    with av.open(str(source)) as given, av.open(str(target), mode="w", format="mp4") as out:
        out.metadata["comment"] = f"Herald video burst variant {n}"
        streams = {s.index: out.add_stream_from_template(s) for s in given.streams}
        for packet in given.demux():
            if packet.dts is None:
                continue
            packet.stream = streams[packet.stream.index]
            out.mux(packet)


def make_videos(folder: Path, count: int, size_bytes: int, seconds: int) -> list[Path]:
    started = time.perf_counter()
    base = folder / "video-0.mp4"
    encode_video(base, size_bytes, seconds)
    paths = [base]
    for n in range(1, count):
        paths.append(folder / f"video-{n}.mp4")
        remux_variant(base, paths[-1], n)
    print(
        f"{count} videos of {base.stat().st_size / 1e6:.1f} MB in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return paths


# --- The networks -------------------------------------------------------------------------------


@dataclass
class Networks:
    servers: dict[str, Any]
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def environment(self) -> dict[str, str]:
        """The variables that point Herald's adapters at the stand-ins."""
        env = {
            "HERALD_BLUESKY_SERVICE_URL": self.servers["bluesky"].url,
            "HERALD_BLUESKY_VIDEO_URL": self.servers["bluesky"].url,
            "HERALD_TELEGRAM_API_URL": self.servers["telegram"].url,
        }
        for provider in ("x", "linkedin", "threads"):
            app = self.servers[provider].app_settings()
            env |= {f"HERALD_{provider.upper()}_{k.upper()}": v for k, v in app.items() if v}
        return env


def start_networks(args: argparse.Namespace) -> Networks:
    """The seven stand-ins in this process, each processing videos as its network documents."""
    from tests.providers.bluesky.standin import BlueskyStandIn
    from tests.providers.linkedin.standin import LinkedInStandIn
    from tests.providers.mastodon.standin import MastodonStandIn
    from tests.providers.telegram.standin import TelegramStandIn
    from tests.providers.threads.standin import ThreadsStandIn
    from tests.providers.webhook.standin import WebhookReceiverStandIn
    from tests.providers.x.standin import XStandIn

    networks = Networks(servers={})
    factories: dict[str, Any] = {
        "x": XStandIn,
        "bluesky": BlueskyStandIn,
        "mastodon": MastodonStandIn,
        "linkedin": LinkedInStandIn,
        "threads": lambda: ThreadsStandIn(container_polls=args.threads_polls),
        "telegram": TelegramStandIn,
        "webhook": WebhookReceiverStandIn,
    }
    for name, factory in factories.items():
        networks.servers[name] = networks.stack.enter_context(factory())
    for name in ("x", "bluesky", "linkedin"):
        networks.servers[name].video_processing_seconds = args.processing
    networks.servers["bluesky"].video_daily_videos = args.posts + 10
    networks.servers["mastodon"].set_faults(video_processing_seconds=args.processing)
    for name in ("telegram", "webhook"):
        networks.servers[name].set_faults(delay_ms=args.sync_delay_ms)
    return networks


# --- Seeding ------------------------------------------------------------------------------------


def connect_oauth(actor: Any, workspace: Any, provider: str, instance_url: str = "") -> Any:
    """Connect through the services as the API does: Herald's start page bound to a browser,
    the stand-in's consent page (it approves at once), then the callback's completion."""
    from urllib.parse import parse_qs, urlsplit

    import requests

    from publishing.services.accounts import (
        account_connect,
        account_oauth_complete,
        oauth_bind_browser,
    )

    _, start = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider=provider,
        redirect_uri=REDIRECT,
        instance_url=instance_url,
    )
    assert start is not None
    state = urlsplit(start).path.rstrip("/").rsplit("/", 1)[-1]
    nonce, provider_url, _ = oauth_bind_browser(state=state)
    answer = requests.get(provider_url, allow_redirects=False, timeout=10)
    grant = parse_qs(urlsplit(answer.headers["Location"]).query)
    return account_oauth_complete(
        state=grant["state"][0], code=grant["code"][0], browser_nonce=nonce
    )


def connect_fields(actor: Any, workspace: Any, provider: str, fields: dict[str, str]) -> Any:
    from publishing.services.accounts import account_connect

    account, _ = account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider=provider,
        redirect_uri=REDIRECT,
        fields=fields,
    )
    return account


def connect_accounts(actor: Any, workspace: Any, networks: Networks) -> dict[str, str]:
    """One account per network: provider -> account id."""
    from tests.providers.bluesky.standin import ACCOUNTS
    from tests.providers.telegram.standin import BOT_TOKEN, GROUP

    servers = networks.servers
    accounts = {
        provider: connect_oauth(actor, workspace, provider) for provider in ("x", "linkedin")
    }
    accounts["threads"] = connect_oauth(actor, workspace, "threads")
    accounts["mastodon"] = connect_oauth(actor, workspace, "mastodon", servers["mastodon"].url)
    bluesky = {"handle": "herald.test", "app_password": ACCOUNTS["herald.test"]["password"]}
    accounts["bluesky"] = connect_fields(actor, workspace, "bluesky", bluesky)
    telegram = {"bot_token": BOT_TOKEN, "chat_id": str(GROUP["id"])}
    accounts["telegram"] = connect_fields(actor, workspace, "telegram", telegram)
    accounts["webhook"] = connect_fields(actor, workspace, "webhook", servers["webhook"].fixtures())
    return {provider: str(account.pk) for provider, account in accounts.items()}


@dataclass
class Seeded:
    actor: Any
    workspace: Any
    token: str
    accounts: dict[str, str]


def seed(networks: Networks) -> Seeded:
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import api_token_create, organization_create, workspace_create

    user = User.objects.create_user("bench-video@example.invalid", secrets.token_urlsafe(24))
    actor = Actor(user=user)
    organization = organization_create(actor=actor, name="Bench video")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Bench video")
    _, token = api_token_create(user=user, name="bench", permissions=["api:read", "api:write"])
    accounts = connect_accounts(actor, workspace, networks)
    return Seeded(actor=actor, workspace=workspace, token=token, accounts=accounts)


def upload_videos(base_url: str, seeded: Seeded, paths: list[Path], scratch: Path) -> list[str]:
    """Each file through the API with the CLI's tus client (what ``herald media upload`` does)."""
    from cli.client import HeraldClient
    from cli.uploads import UploadState, upload_file

    client = HeraldClient(base_url, seeded.token)
    state = UploadState(scratch / "cli")
    started = time.perf_counter()
    ids = [
        upload_file(
            client, str(seeded.workspace.pk), path, alt_text="Noise, in colour", state=state
        )
        for path in paths
    ]
    total = sum(path.stat().st_size for path in paths)
    seconds = time.perf_counter() - started
    print(f"uploaded {total / 1e6:.0f} MB in {seconds:.1f} s", flush=True)
    return ids


def wait_ready(media_ids: list[str], timeout: float, processes: Processes) -> float:
    """Until every media item is probed; the seconds it took. A failed one stops the run."""
    from publishing.models import Media

    started = time.monotonic()
    while True:
        statuses = Counter(Media.objects.filter(pk__in=media_ids).values_list("status", flat=True))
        if statuses.get("failed"):
            reason = Media.objects.filter(pk__in=media_ids, status="failed").first()
            raise RuntimeError(f"a video failed its probe: {reason and reason.failure_reason}")
        if statuses.get("ready", 0) == len(media_ids):
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"videos not probed after {timeout:g} s: {dict(statuses)}")
        processes.check()
        time.sleep(0.5)


def schedule_burst(
    seeded: Seeded, media_ids: list[str], lead: float, networks: list[str]
) -> tuple[datetime, dict[str, tuple[int, str]]]:
    """One publication per video, round-robin over the accounts, all due in the same second.
    Returns the due second and destination id -> (post number, provider)."""
    from publishing.models import Destination
    from publishing.services.publications import publication_create, publication_schedule

    drafts = []
    for n, media_id in enumerate(media_ids):
        provider = networks[n % len(networks)]
        drafts.append(
            publication_create(
                actor=seeded.actor,
                workspace_id=seeded.workspace.pk,
                text=f"Herald video burst [vb-{n}]: one of {len(media_ids)} due at once.",
                media_ids=[media_id],
                destinations=[
                    {"account_id": seeded.accounts[provider], **PROFILES.get(provider, {})}
                ],
            ).pk
        )
    due = datetime.fromtimestamp(math.ceil(time.time() + lead), tz=UTC)
    for publication_id in drafts:
        publication_schedule(
            actor=seeded.actor,
            publication_id=publication_id,
            scheduled_at=due,
            expected_revision=None,
        )
    rows = Destination.objects.filter(publication_id__in=drafts).values_list(
        "pk", "publication__text", "account__provider"
    )
    found = {}
    for pk, text, provider in rows:
        marker = MARKER.search(text)
        assert marker is not None
        found[str(pk)] = (int(marker.group(1)), provider)
    return due, found


# --- Measuring ----------------------------------------------------------------------------------


def rss_kb(pid: int, key: str) -> int:
    """``VmRSS`` or ``VmHWM`` (the peak) of a process, KiB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


@dataclass
class Samples:
    """What the sampler saw every ``interval`` seconds: (seconds since due, destinations at stage
    processing, by provider) and each worker's peak RSS."""

    interval: float
    points: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    rss_peak_kb: dict[str, int] = field(default_factory=dict)
    # A check in progress: a destination at stage processing that a worker thread has claimed.
    # How long each such claim was seen, in a row (a thread waiting out the processing inside a
    # check would be seen for the processing delay).
    held_since: dict[str, float] = field(default_factory=dict)
    longest_check_s: float = 0.0

    def checks_held(self, at: float, claimed: set[str]) -> None:
        for pk in set(self.held_since) - claimed:
            del self.held_since[pk]
        for pk in claimed:
            since = self.held_since.setdefault(pk, at)
            self.longest_check_s = max(self.longest_check_s, at - since + self.interval)


def sample(samples: Samples, due: datetime, workers: dict[str, int], stop: threading.Event) -> None:
    from django.db import connections
    from django.db.models import Count

    from publishing.models import Destination

    while not stop.wait(samples.interval):
        at = time.time() - due.timestamp()
        rows = (
            Destination.objects.filter(status="sending", send_stage="processing")
            .values_list("account__provider")
            .annotate(n=Count("pk"))
        )
        samples.points.append((at, dict(rows)))
        claimed = Destination.objects.filter(
            status="sending", send_stage="processing", claim_expires_at__isnull=False
        ).values_list("pk", flat=True)
        samples.checks_held(at, {str(pk) for pk in claimed})
        for name, pid in workers.items():
            samples.rss_peak_kb[name] = max(samples.rss_peak_kb.get(name, 0), rss_kb(pid, "VmRSS"))
    connections.close_all()


def wait_settled(expected: int, workspace_id: Any, timeout: float, processes: Processes) -> bool:
    deadline = time.monotonic() + timeout
    last_print = 0.0
    while True:
        counts = status_counts(workspace_id)
        if sum(counts[s] for s in SETTLED) >= expected:
            return True
        if time.monotonic() > deadline:
            return False
        if time.monotonic() - last_print > 5:
            print(f"  {counts['published']}/{expected} published {dict(counts)}", flush=True)
            last_print = time.monotonic()
        processes.check()
        time.sleep(0.5)


def send_intervals(log: Path, due: datetime) -> list[tuple[float, float]]:
    """Every ``delivery_send`` task of a worker's log: (start, end), seconds since ``due``."""
    intervals = []
    for line in log.read_text(errors="replace").splitlines():
        match = TASK_DONE.search(line)
        if match is None:
            continue
        stamp = datetime.fromisoformat(match.group(1).replace(",", ".")).replace(tzinfo=UTC)
        end = (stamp - due).total_seconds()
        intervals.append((end - float(match.group(2)), end))
    return intervals


def thread_figures(
    intervals: list[tuple[float, float]], samples: Samples, processing: float
) -> dict[str, Any]:
    """Busy worker threads (sends in progress) at each sample against the destinations waiting
    while their network processes, and how long sends take."""
    durations = [end - start for start, end in intervals]
    waiting_points = [(at, sum(by.values())) for at, by in samples.points if sum(by.values())]
    busy_then = [sum(1 for s, e in intervals if s <= at <= e) for at, _ in waiting_points]
    return {
        "sends": len(durations),
        "send_seconds": summary(durations),
        "thread_seconds_in_sends": round(sum(durations), 1),
        "destination_seconds_processing": round(
            sum(n for _, n in waiting_points) * samples.interval, 1
        ),
        "samples_with_processing": len(waiting_points),
        "processing_peak": max((n for _, n in waiting_points), default=0),
        "processing_mean": round(sum(n for _, n in waiting_points) / len(waiting_points), 1)
        if waiting_points
        else 0,
        "busy_threads_while_processing_peak": max(busy_then, default=0),
        "busy_threads_while_processing_mean": round(sum(busy_then) / len(busy_then), 2)
        if busy_then
        else 0,
        "sends_at_least_processing_delay": sum(1 for d in durations if d >= processing),
        "longest_check_held_s": round(samples.longest_check_s, 2),
    }


def returned_while_processing(destinations: dict[str, tuple[int, str]]) -> dict[str, Any]:
    """Destinations on a network that processes videos whose send gave its thread back while the
    network processed (a ``destination.processing`` event: the send answered Pending)."""
    from publishing.models import PublicationEvent

    expected = {pk for pk, (_, provider) in destinations.items() if provider in ASYNC_NETWORKS}
    seen = {
        str(pk)
        for pk in PublicationEvent.objects.filter(
            destination_id__in=list(expected), kind="destination.processing"
        ).values_list("destination_id", flat=True)
    }
    return {"destinations": len(expected), "returned_pending": len(expected & seen)}


def audit(networks: Networks, destinations: dict[str, tuple[int, str]]) -> dict[str, Any]:
    """Stand-in posts per destination (its marker in the post), against the database."""
    from publishing.models import Destination

    posts: Counter[int] = Counter()
    per_network: dict[str, int] = {}
    for name, server in networks.servers.items():
        found = [MARKER.search(json.dumps(post, default=str)) for post in server.posts]
        per_network[name] = len(found)
        posts.update(int(m.group(1)) for m in found if m is not None)
    statuses = dict(
        Destination.objects.filter(pk__in=list(destinations)).values_list("pk", "status")
    )
    published = {str(pk) for pk, status in statuses.items() if status == "published"}
    numbers = {pk: n for pk, (n, _) in destinations.items()}
    lost = [pk for pk in destinations if pk not in published or posts[numbers[pk]] == 0]
    failures = list(
        Destination.objects.filter(pk__in=list(destinations))
        .exclude(status="published")
        .values_list("account__provider", "status", "error_message")[:10]
    )
    return {
        "destinations": len(destinations),
        "published": len(published),
        "posts_per_network": per_network,
        "duplicates": sum(max(0, posts[n] - 1) for n in numbers.values()),
        "lost": len(lost),
        "not_published_examples": [list(row) for row in failures],
    }


# --- The run ------------------------------------------------------------------------------------


@dataclass
class Burst:
    due: datetime
    destinations: dict[str, tuple[int, str]]
    samples: Samples
    complete: bool
    seconds_due_to_settled: float
    setup_seconds: dict[str, float]


@dataclass
class Prepared:
    seeded: Seeded
    media_ids: list[str]
    workers: dict[str, int]  # worker name -> pid
    timings: dict[str, float]


def prepare(
    args: argparse.Namespace, networks: Networks, processes: Processes, scratch: Path, web: str
) -> Prepared:
    """Migrate, seed, make and upload the videos, start the workers; wait for every probe."""
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", interactive=False, verbosity=0)
    seeded = seed(networks)
    paths = make_videos(scratch, args.posts, args.size, args.seconds)
    env = dict(os.environ)
    names, workers = start_workers(args, env, processes, scratch)
    connections.close_all()
    wait_for_workers(names, processes)
    started = time.perf_counter()
    media_ids = upload_videos(web, seeded, paths, scratch)
    timings = {"upload_s": round(time.perf_counter() - started, 1)}
    timings["probe_wait_s"] = round(wait_ready(media_ids, args.timeout, processes), 1)
    for path in paths:
        path.unlink()
    return Prepared(seeded, media_ids, workers, timings)


def burst(args: argparse.Namespace, prepared: Prepared, processes: Processes) -> Burst:
    seeded, workers = prepared.seeded, prepared.workers
    started = time.perf_counter()
    due, destinations = schedule_burst(seeded, prepared.media_ids, args.lead, args.networks)
    schedule_s = time.perf_counter() - started
    print(f"{len(destinations)} video posts due at {due:%H:%M:%S}", flush=True)
    samples, stop = Samples(interval=0.25), threading.Event()
    sampler = threading.Thread(target=sample, args=(samples, due, workers, stop), daemon=True)
    sampler.start()
    complete = wait_settled(len(destinations), seeded.workspace.pk, args.timeout, processes)
    settled_at = time.time()
    stop.set()
    sampler.join(timeout=10)
    return Burst(
        due=due,
        destinations=destinations,
        samples=samples,
        complete=complete,
        seconds_due_to_settled=round(settled_at - due.timestamp(), 1),
        setup_seconds={"schedule_s": round(schedule_s, 1)},
    )


def figures(
    args: argparse.Namespace,
    networks: Networks,
    result: Burst,
    workers: dict[str, int],
    scratch: Path,
) -> dict[str, Any]:
    from django.db.models import Max

    from publishing.models import Destination

    intervals = [
        interval
        for name in workers
        for interval in send_intervals(scratch / f"{name}.log", result.due)
    ]
    rows = Destination.objects.filter(pk__in=list(result.destinations))
    lags = [
        (published - result.due).total_seconds()
        for published in rows.values_list("published_at", flat=True)
        if published is not None
    ]
    by_network: dict[str, list[float]] = {}
    for provider, published in rows.values_list("account__provider", "published_at"):
        if published is not None:
            by_network.setdefault(provider, []).append((published - result.due).total_seconds())
    last = rows.aggregate(last=Max("published_at"))["last"]
    peak_hwm = {name: round(rss_kb(pid, "VmHWM") / 1024, 1) for name, pid in workers.items()}
    return {
        "complete": result.complete,
        "published_lag_s": summary(lags),
        "seconds_due_to_last_published": round((last - result.due).total_seconds(), 1)
        if last
        else None,
        "published_lag_max_s_by_network": {k: round(max(v), 1) for k, v in by_network.items()},
        "threads": thread_figures(intervals, result.samples, args.processing),
        "worker_rss_mb": {
            "sampled_peak_during_burst": {
                k: round(v / 1024, 1) for k, v in result.samples.rss_peak_kb.items()
            },
            "peak_whole_run_vmhwm": peak_hwm,
        },
        "audit": audit(networks, result.destinations),
        "pending": returned_while_processing(result.destinations),
    }


def checks(args: argparse.Namespace, found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    audit_, threads, pending = found["audit"], found["threads"], found["pending"]
    rss = max(found["worker_rss_mb"]["peak_whole_run_vmhwm"].values())
    return {
        "duplicates": {"value": audit_["duplicates"], "target": "0"},
        "lost": {"value": audit_["lost"], "target": "0"},
        "worker_rss_mb": {"value": rss, "target": f"< {args.max_rss_mb}"},
        "sends_returned_while_processing": {
            "value": f"{pending['returned_pending']}/{pending['destinations']}",
            "target": "every video on a processing network",
        },
        "longest_check_held_s": {
            "value": threads["longest_check_held_s"],
            "target": f"< {args.processing} s",
        },
    } | {
        "passed": {
            "duplicates": audit_["duplicates"] == 0,
            "lost": audit_["lost"] == 0 and found["complete"],
            "worker_rss_mb": rss < args.max_rss_mb,
            "sends_returned_while_processing": pending["returned_pending"]
            == pending["destinations"]
            and threads["samples_with_processing"] > 0,
            "longest_check_held_s": threads["longest_check_held_s"] < args.processing,
        }
    }


def run(
    args: argparse.Namespace, networks: Networks, processes: Processes, scratch: Path
) -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings

    port = urlsplit_port(os.environ["HERALD_PUBLIC_URL"])
    with gunicorn(dict(os.environ), port, scratch):
        prepared = prepare(args, networks, processes, scratch, os.environ["HERALD_PUBLIC_URL"])
        result = burst(args, prepared, processes)
    found = figures(args, networks, result, prepared.workers, scratch)
    verdicts = checks(args, found)
    passed = verdicts.pop("passed")
    for name, ok in passed.items():
        verdicts[name]["passed"] = ok
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "bench/video_burst.py", *sys.argv[1:]]),
        "git_revision": git_revision(),
        "machine": machine(),
        "versions": versions(),
        "setup": {
            "posts": args.posts,
            "video_bytes": args.size,
            "video_seconds": args.seconds,
            "networks": args.networks,
            "processing_s": args.processing,
            "threads_status_reads_in_progress": args.threads_polls,
            "sync_delay_ms": args.sync_delay_ms,
            "workers": args.workers,
            "pool": settings.CELERY_WORKER_POOL,
            "concurrency_per_worker": settings.CELERY_WORKER_CONCURRENCY,
            "timings_s": prepared.timings | result.setup_seconds,
        },
        "burst": found,
        "checks": verdicts,
        "passed": all(passed.values()),
    }


def urlsplit_port(url: str) -> int:
    from urllib.parse import urlsplit

    return int(urlsplit(url).port or 80)


def print_report(report: dict[str, Any]) -> None:
    found, setup = report["burst"], report["setup"]
    threads, audit_ = found["threads"], found["audit"]
    print()
    print(
        f"{setup['posts']} video posts of {setup['video_bytes'] / 1e6:.0f} MB to "
        f"{len(setup['networks'])} networks (processing {setup['processing_s']} s); "
        f"{setup['workers']} worker(s) x {setup['pool']} {setup['concurrency_per_worker']}"
    )
    lag = found["published_lag_s"]
    print(
        f"due -> published: p50 {lag.get('p50')} s, max {lag.get('max')} s; "
        f"published {audit_['published']}/{audit_['destinations']}; "
        f"posts per network {audit_['posts_per_network']}"
    )
    print(f"due -> published, slowest per network (s): {found['published_lag_max_s_by_network']}")
    print(
        f"sends: {threads['sends']}, inside sends {threads['thread_seconds_in_sends']} thread-s "
        f"(p50 {threads['send_seconds'].get('p50')} s, max {threads['send_seconds'].get('max')} s); "
        f"destinations waiting on processing {threads['destination_seconds_processing']} "
        f"destination-s, up to {threads['processing_peak']} at once, while busy worker threads "
        f"were {threads['busy_threads_while_processing_mean']} on average "
        f"(peak {threads['busy_threads_while_processing_peak']})"
    )
    print(f"worker RSS MB: {found['worker_rss_mb']}")
    print(
        f"load average start / end: {report['machine'].get('loadavg_1_5_15_start')} / "
        f"{report['machine'].get('loadavg_1_5_15_end')}"
    )
    for name, check in report["checks"].items():
        verdict = "PASS" if check["passed"] else "FAIL"
        print(f"{verdict}  {name:<32} {check['value']!s:>8}  (target {check['target']})")
    print(f"\n{'PASS' if report['passed'] else 'FAIL'}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--posts", type=int, default=100, help="video posts (one distinct video each)")
    add("--size", type=parse_size, default=parse_size("20MB"), help="bytes of each video")
    add("--seconds", type=int, default=10, help="duration of each video")
    add("--processing", type=float, default=6.0, help="seconds each network processes a video")
    add("--threads-polls", type=int, default=2, help="Threads status reads IN_PROGRESS")
    add("--sync-delay-ms", type=int, default=500, help="Telegram and webhook answer delay")
    add(
        "--networks",
        type=lambda text: [n for n in text.split(",") if n],
        default=list(NETWORKS),
        help=f"networks the posts go to, round-robin (default: {','.join(NETWORKS)})",
    )
    add("--workers", type=int, default=2, help="worker commands (HERALD_WORKER_PROCESSES)")
    add("--db-pool", type=int, default=8, help="HERALD_DB_POOL_SIZE of each worker")
    add("--lead", type=float, default=5.0, help="seconds from scheduling to the due second")
    add("--max-rss-mb", type=float, default=300.0)
    add("--timeout", type=float, default=600.0, help="seconds any phase may take")
    add("--log-level", default="INFO")
    add("--dispatch-interval", type=float, default=None)
    add(
        "--database-url",
        default=os.environ.get("HERALD_BENCH_VIDEO_DATABASE_URL", DEFAULT_DATABASE_URL),
    )
    add("--redis-url", default=os.environ.get("HERALD_BENCH_VIDEO_REDIS_URL", DEFAULT_REDIS_URL))
    add("--keep-db", action="store_true")
    add("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_start = loadavg()
    ensure_database(args.database_url, fresh=True)
    flush_redis(args.redis_url)
    networks = start_networks(args)
    with tempfile.TemporaryDirectory(prefix="herald-bench-video-") as folder:
        scratch = Path(folder)
        env = bench_environment(args, str(scratch / "data"), "")
        env.pop("HERALD_BENCH_PUBLISH_LOG", None)
        env |= networks.environment()
        env["HERALD_PUBLIC_URL"] = f"http://127.0.0.1:{free_port()}"
        (scratch / "data" / "static").mkdir(parents=True)
        os.environ.clear()
        os.environ.update(env)
        processes = Processes(scratch)
        watchdog = threading.Timer(args.timeout * 3, lambda: os.kill(os.getpid(), signal.SIGTERM))
        watchdog.daemon = True
        watchdog.start()
        try:
            report = run(args, networks, processes, scratch)
        except (RuntimeError, OSError, AssertionError, ValueError, DomainError) as exc:
            print(f"ABORTED: {exc!r} {getattr(exc, 'errors', '')}", file=sys.stderr)
            for name in processes.children:
                print(f"--- {name} log (tail)\n{processes.tail(name)}", file=sys.stderr)
            return 2
        finally:
            watchdog.cancel()
            processes.stop()
            networks.stack.close()
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            if not args.keep_db:
                drop_database(args.database_url)
    report["machine"]["loadavg_1_5_15_start"] = load_start
    report["machine"]["loadavg_1_5_15_end"] = loadavg()
    print_report(report)
    write_results(report, args.output)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
