"""Gunicorn settings for the container image (and for bench/api.py, which measures them).

Every value can be tuned through the environment of the web container:

- ``WEB_CONCURRENCY``      worker processes (default 2; roughly one or two per CPU core)
- ``HERALD_WEB_THREADS``   threads per worker (default 4; 1 selects the sync worker class)
- ``HERALD_WEB_TIMEOUT``   seconds before a silent worker is killed and replaced (default 30)
- ``HERALD_WEB_MAX_REQUESTS`` requests after which a worker is replaced (default 10000; 0 = never)
- ``FORWARDED_ALLOW_IPS``  read by gunicorn itself: proxies trusted for X-Forwarded-* headers

The bind address is given on the command line (``--bind 0.0.0.0:8000`` in the image's CMD).
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


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
