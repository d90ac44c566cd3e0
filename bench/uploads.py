#!/usr/bin/env python
"""Large-media benchmark: a resumable (tus) upload through gunicorn on loopback, and the probe
of a one-minute 1080p video.

    .venv/bin/python bench/uploads.py                          # or: make bench-uploads
    .venv/bin/python bench/uploads.py --size 64MiB --probe-seconds 5   # a smoke run

What it does (details in bench/README.md):

1. in a temporary ``HERALD_DATA_DIR`` (the embedded default: SQLite, local media, no Redis):
   migrates, seeds one user, organization and workspace and an API token with ``api:write``;
2. starts gunicorn with the container's configuration (docker/gunicorn.conf.py, one worker) on
   127.0.0.1 and a free port;
3. creates a tus upload of ``--size`` + 1 bytes and sends ``--size`` bytes in PATCHes of
   ``--patch-size``, each with the SHA-256 ``Upload-Checksum`` ``herald media upload`` sends,
   streamed from a 1 MiB block (the client never holds a PATCH); the byte that would finish the
   upload is not sent (the media step is not part of this figure) and the upload is terminated.
   Figures: MB/s of the PATCHes, and the gunicorn worker's resident memory (``VmRSS`` after a
   warm-up upload of 2 MiB, its peak ``VmHWM`` after the measured one);
4. writes a ``--probe-seconds`` 1080p H.264 video (30 frames/s) with PyAV and runs the media
   probe on it (``publishing.services.video.probe_video``: facts, first frame, poster, every
   packet) in this process, measuring its CPU time (all threads) and wall-clock time;
5. prints a table and writes bench/results/uploads.json; stops gunicorn and removes the folder.

Exit status 1 when a goal is missed: worker memory growth >= 50 MB, throughput < 100 MB/s, probe
CPU >= 2 s (goals of the full run: 1 GiB, one minute). Traffic goes to 127.0.0.1 only; the run
stops after ``--timeout`` seconds in any case.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import os
import re
import resource
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/uploads.py` puts bench/ first on the path
    sys.path.insert(0, str(ROOT))

from bench import _common  # noqa: E402  (after the path set-up above)
from bench.api import bench_environment as api_environment  # noqa: E402
from bench.api import free_port, gunicorn  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "uploads.json"
MIB = 1024 * 1024
BLOCK = os.urandom(MIB)  # the bytes sent, over and over (random: nothing compresses them)
GOAL_RSS_GROWTH_MB = 50.0
GOAL_THROUGHPUT_MB_S = 100.0
GOAL_PROBE_CPU_SECONDS = 2.0
HTTP_TIMEOUT = 120  # seconds one response may take (a PATCH of --patch-size included)


def size(text: str) -> int:
    """``64MiB``, ``1GiB``, ``500MB`` or a number of bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*(KiB|MiB|GiB|KB|MB|GB|B)?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    units = {"KiB": 1024, "MiB": MIB, "GiB": 1024 * MIB, "KB": 1000, "MB": 10**6, "GB": 10**9}
    return int(match.group(1)) * units.get(match.group(2) or "B", 1)


# --- Set-up --------------------------------------------------------------------------------


def bench_environment(data_dir: str, max_bytes: int) -> dict[str, str]:
    """The API benchmark's environment (bench.settings, quiet logs, no throttling in the way)
    on the embedded default: SQLite and local media in ``data_dir``, no Redis, one worker (its
    memory is the figure)."""
    shape = argparse.Namespace(database_url="", workers=1, threads=4, redis_url=None)
    env = api_environment(shape, data_dir)
    env.pop("DATABASE_URL", None)
    env["HERALD_MAX_VIDEO_BYTES"] = str(max_bytes)
    return env


def seed() -> tuple[str, str]:
    """(workspace id, a token with api:write)."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    from workspaces.access import Actor
    from workspaces.models import User
    from workspaces.services import api_token_create, organization_create, workspace_create

    user = User.objects.create_user("bench@example.invalid", secrets.token_urlsafe(24))
    actor = Actor(user=user)
    organization = organization_create(actor=actor, name="Bench Org")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Bench")
    _, token = api_token_create(user=user, name="bench", permissions=["api:read", "api:write"])
    return str(workspace.pk), token


# --- The upload ------------------------------------------------------------------------------


@dataclass
class UploadFigures:
    bytes_sent: int
    patches: int
    seconds: float
    throughput_mb_s: float
    rss_before_mb: float
    rss_peak_mb: float
    rss_growth_mb: float


def memory_mb(pid: int, field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak since start) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024 / 10**6
    return 0.0


def body(length: int) -> Iterator[bytes]:
    """``length`` bytes of the repeated block, one block at a time."""
    left = length
    while left > 0:
        piece = BLOCK[: min(MIB, left)]
        left -= len(piece)
        yield piece


def checksum(length: int) -> str:
    digest = hashlib.sha256()
    for piece in body(length):
        digest.update(piece)
    return "sha256 " + base64.b64encode(digest.digest()).decode()


def tus(
    port: int, method: str, path: str, headers: dict[str, str], length: int = 0
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    headers = {"Tus-Resumable": "1.0.0", **headers, "Content-Length": str(length)}
    conn.request(method, path, body=body(length) if length else None, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def upload(port: int, token: str, workspace_id: str, total: int, patch: int) -> tuple[int, int]:
    """Create the upload and send ``total`` bytes in PATCHes; (bytes sent, PATCHes)."""
    auth = {"Authorization": f"Bearer {token}"}
    metadata = ",".join(
        f"{key} {base64.b64encode(value.encode()).decode()}"
        for key, value in (("workspace_id", workspace_id), ("filename", "bench.bin"))
    )
    created = tus(
        port,
        "POST",
        "/api/v1/uploads",
        {**auth, "Upload-Length": str(total + 1), "Upload-Metadata": metadata},
    )
    location = created.headers.get("Location", "")
    if created.status != 201 or not location:
        raise SystemExit(f"creating the upload answered {created.status}")
    path = "/" + location.split("/", 3)[3]
    offset = patches = 0
    sums = {length: checksum(length) for length in {patch, total % patch or patch}}
    while offset < total:
        length = min(patch, total - offset)
        answer = tus(
            port,
            "PATCH",
            path,
            {
                **auth,
                "Upload-Offset": str(offset),
                "Upload-Checksum": sums[length],
                "Content-Type": "application/offset+octet-stream",
            },
            length,
        )
        if answer.status != 204:
            raise SystemExit(f"PATCH at {offset} answered {answer.status}")
        offset, patches = int(answer.headers["Upload-Offset"]), patches + 1
    tus(port, "DELETE", path, auth)
    return offset, patches


def measure_upload(args: argparse.Namespace, data_dir: str) -> UploadFigures:
    env = bench_environment(data_dir, args.size + 1)
    os.environ.update(env)
    workspace_id, token = seed()
    port = free_port()
    log_dir = Path(data_dir) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with gunicorn(env, port, log_dir) as server:
        [worker] = _common.child_pids(server.pid)
        upload(port, token, workspace_id, 2 * MIB, MIB)  # warm-up: imports, first connections
        before = memory_mb(worker, "VmRSS")
        started = time.perf_counter()
        sent, patches = upload(port, token, workspace_id, args.size, args.patch_size)
        seconds = time.perf_counter() - started
        peak = memory_mb(worker, "VmHWM")
    return UploadFigures(
        bytes_sent=sent,
        patches=patches,
        seconds=round(seconds, 3),
        throughput_mb_s=round(sent / seconds / 10**6, 1),
        rss_before_mb=round(before, 1),
        rss_peak_mb=round(peak, 1),
        rss_growth_mb=round(peak - before, 1),
    )


# --- The probe -------------------------------------------------------------------------------


@dataclass
class ProbeFigures:
    video_seconds: float
    video_bytes: int
    write_seconds: float
    cpu_seconds: float
    wall_seconds: float
    facts: dict[str, Any]


def write_video(path: Path, seconds: int, width: int = 1920, height: int = 1080) -> None:
    """H.264 1080p at 30 frames/s: a moving ramp with a band of noise (so the stream has a bit
    rate of its own), x264 ``ultrafast`` so that writing it stays short."""
    import av

    rate = 30
    with av.open(str(path), mode="w", format="mp4") as container:
        stream: Any = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "23"}
        band = height // 8
        for index in range(seconds * rate):
            frame = av.VideoFrame(width, height, "yuv420p")
            luma = bytearray(bytes([(index * 3) % 256]) * (width * height))
            start = (index * 7 % (height - band)) * width
            luma[start : start + band * width] = os.urandom(band * width)
            frame.planes[0].update(bytes(luma))
            for plane in frame.planes[1:]:
                plane.update(bytes([128]) * plane.buffer_size)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_probe(args: argparse.Namespace, folder: Path) -> ProbeFigures:
    import django

    django.setup()
    from publishing.services.video import probe_video

    path = folder / "probe.mp4"
    started = time.perf_counter()
    write_video(path, args.probe_seconds)
    written = time.perf_counter() - started
    cpu, wall = cpu_seconds(), time.perf_counter()
    with path.open("rb") as handle:
        probe = probe_video(handle, "video/mp4")
    return ProbeFigures(
        video_seconds=probe.facts["duration_seconds"],
        video_bytes=path.stat().st_size,
        write_seconds=round(written, 2),
        cpu_seconds=round(cpu_seconds() - cpu, 3),
        wall_seconds=round(time.perf_counter() - wall, 3),
        facts=probe.facts,
    )


# --- Report ----------------------------------------------------------------------------------


def misses(upload_figures: UploadFigures, probe_figures: ProbeFigures) -> list[str]:
    found = []
    if upload_figures.rss_growth_mb >= GOAL_RSS_GROWTH_MB:
        found.append(f"worker memory grew {upload_figures.rss_growth_mb} MB")
    if upload_figures.throughput_mb_s < GOAL_THROUGHPUT_MB_S:
        found.append(f"upload at {upload_figures.throughput_mb_s} MB/s")
    if probe_figures.cpu_seconds >= GOAL_PROBE_CPU_SECONDS:
        found.append(f"probe took {probe_figures.cpu_seconds} s of CPU")
    return found


def report(args: argparse.Namespace, up: UploadFigures, probe: ProbeFigures) -> list[str]:
    missed = misses(up, probe)
    print(
        f"upload   {up.bytes_sent / MIB:.0f} MiB in {up.patches} PATCHes: {up.seconds} s, "
        f"{up.throughput_mb_s} MB/s (goal >= {GOAL_THROUGHPUT_MB_S})"
    )
    print(
        f"worker   RSS {up.rss_before_mb} MB before, peak {up.rss_peak_mb} MB: "
        f"+{up.rss_growth_mb} MB (goal < {GOAL_RSS_GROWTH_MB})"
    )
    print(
        f"probe    {probe.video_seconds} s of 1080p ({probe.video_bytes / 10**6:.1f} MB): "
        f"{probe.cpu_seconds} s CPU, {probe.wall_seconds} s wall (goal < "
        f"{GOAL_PROBE_CPU_SECONDS} s CPU)"
    )
    print("missed: " + "; ".join(missed) if missed else "every goal met")
    _common.write_results(
        {
            "benchmark": "uploads",
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "revision": _common.git_revision(),
            "machine": _common.machine(),
            "loadavg": _common.loadavg(),
            "arguments": {k: v for k, v in vars(args).items() if k != "results"},
            "upload": asdict(up),
            "probe": asdict(probe),
            "missed": missed,
        },
        args.results,
    )
    return missed


def _out_of_time(signum: int, frame: object) -> None:
    raise SystemExit("bench/uploads.py: out of time (--timeout)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--size", type=size, default=1024 * MIB, help="bytes uploaded (1GiB)")
    parser.add_argument("--patch-size", type=size, default=64 * MIB, help="bytes per PATCH")
    parser.add_argument("--probe-seconds", type=int, default=60, help="length of the video")
    parser.add_argument("--timeout", type=int, default=900, help="stop after this many seconds")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _out_of_time)
    signal.alarm(args.timeout)  # stops by itself: gunicorn and the folder are cleaned up
    with tempfile.TemporaryDirectory(prefix="herald-bench-uploads-") as folder:
        up = measure_upload(args, folder)
        probe = measure_probe(args, Path(folder))
    return 1 if report(args, up, probe) else 0


if __name__ == "__main__":
    sys.exit(main())
