"""Gunicorn settings for the container image (and for bench/api.py, which measures them).

Every value can be tuned through the environment of the web container:

- ``WEB_CONCURRENCY``      worker processes (default 2; roughly one or two per CPU core)
- ``HERALD_WEB_THREADS``   threads per worker (default 4; 1 selects the sync worker class)
- ``HERALD_WEB_TIMEOUT``   seconds before a silent worker is killed and replaced (default 30)
- ``HERALD_WEB_MAX_REQUESTS`` requests after which a worker is replaced (default 10000; 0 = never)
- ``HERALD_WEB_GC_GEN0``   allocations between two young-generation garbage collections in a
                           worker (default 10000; Python's own is 700; 0 = leave the collector alone)
- ``FORWARDED_ALLOW_IPS``  read by gunicorn itself: proxies trusted for X-Forwarded-* headers

The bind address is given on the command line (``--bind 0.0.0.0:8000`` in the image's CMD).
"""

from __future__ import annotations

import gc
import os
from typing import Any


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


# Threaded workers (gthread), not the sync workers' usual 2 x cores + 1: gunicorn is served
# directly (no buffering proxy in the composition), sync workers close every connection after
# one response (no keep-alive), and a request spends part of its time waiting on PostgreSQL and
# Redis. Two processes x four threads keep eight requests in flight with the memory of two
# processes. Measured on 2 cores (bench/README.md, "The served path"): 2 x 4, 3 x 2 and 4 x 1
# gthread cost the same CPU per request within noise; sync 3 and sync 5 cost 35-60 % more.
workers = _int("WEB_CONCURRENCY", 2)
threads = _int("HERALD_WEB_THREADS", 4)
worker_class = "gthread" if threads > 1 else "sync"
timeout = _int("HERALD_WEB_TIMEOUT", 30)
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound.
max_requests = _int("HERALD_WEB_MAX_REQUESTS", 10000)
max_requests_jitter = max_requests // 10
# The heartbeat file lives in memory: an overlay filesystem can stall and get workers killed.
_SHM = "/dev/shm"  # noqa: S108 - gunicorn creates private, randomly named files in it
worker_tmp_dir = _SHM if os.path.isdir(_SHM) else None
# No gunicornc control socket (gunicorn >= 25): nothing uses it, and it would be created under
# the home directory of the unprivileged user. Older gunicorn ignores the unknown name.
control_socket_disable = True
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("HERALD_LOG_LEVEL", "info").lower()

# Garbage collection in the workers. A request allocates thousands of short-lived containers
# (a 200-row page: a dict per row, the row tuples, the JSON). With Python's default threshold
# (a young collection every 700 net allocations) the served 200-row audit page paid about
# 0.37 ms of collector CPU per request, and now and then a full collection walked the whole
# boot-time heap (about 90 ms: a pause for whichever request triggered it). Frozen boot-time
# objects and a threshold of 10000: about 0.19 ms, and no full collection in the measurement
# (bench/README.md, "The served path"). Freezing what the worker holds after loading the
# application (settings, URL patterns, models) also keeps those pages shared with the master
# (copy-on-write). Cycles are still collected, only in fewer, larger batches: memory grows by at
# most one batch of garbage. The bare view does not allocate enough to notice either way.
_GC_GEN0 = _int("HERALD_WEB_GC_GEN0", 10000)


def post_worker_init(worker: Any) -> None:
    if _GC_GEN0 > 0:
        gc.collect()
        gc.freeze()
        gc.set_threshold(_GC_GEN0, *gc.get_threshold()[1:])
