"""The API rate limit, shared by every process of the instance (``config/limits.py``).

DRF's ``SimpleRateThrottle`` keeps a list of request times per client: a ``GET`` and a ``SET``
of a growing pickled list on every request. Here each client has a counter that lives for one
rate period from its first request. On Redis that is one pipelined round trip per request
(``SET NX EX`` + ``INCR`` + ``TTL``); without Redis one SQLite statement on the instance's limits
file. A 429 carries the seconds until the window ends. Like any fixed window (unlike DRF's
sliding log), it admits up to twice the rate across the end of one window and the start of the
next. An anonymous client is counted under :func:`config.limits.client_ip`, never under an
address it chose itself.

A bearer request also reads its client's failed-authentication count. ``count_with_reading``
does both in the same round trip (one server-side script), and ``UserRateThrottle.admit`` lets the
authentication class use it: the throttle then finds its window already counted for the request.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.throttling import UserRateThrottle as _UserRateThrottle

from config.limits import client_ip, count_with_reading, read_count, redis_client, window_hit

__all__ = [
    "UserRateThrottle",
    "WindowRateThrottle",
    "cache_get_int",
    "caches",
    "count_with_reading",
    "redis_client",
    "window_hit",
]


def cache_get_int(key: str, default: int = 0) -> int:
    """The count of the window ``key`` in the limits store (``default`` when it has none)."""
    return read_count(key) or default


class WindowRateThrottle(SimpleRateThrottle):
    """``SimpleRateThrottle`` with a shared counter instead of a history list."""

    cache_format = "throttle:%(scope)s:%(ident)s"

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        counted = request.__dict__.pop("_herald_counted_window", None)
        if counted is not None and counted[0] == self.key:  # see UserRateThrottle.admit
            count, self.remaining = counted[1]
        else:
            count, self.remaining = window_hit(self.key, self.duration)
        return bool(count <= self.num_requests)

    def wait(self) -> float | None:
        return max(1.0, float(getattr(self, "remaining", self.duration)))

    def get_ident(self, request: Any) -> str:
        """The anonymous client's address: :func:`config.limits.client_ip` (``HERALD_NUM_PROXIES``),
        not DRF's, which trusts a client-supplied ``X-Forwarded-For`` when it is unset."""
        return client_ip(request)


class UserRateThrottle(WindowRateThrottle, _UserRateThrottle):
    """Per-user (or per client address when anonymous) API rate, shared by every process."""

    scope = "user"

    @classmethod
    def admit(cls, request: Any, view: Any, user: Any, *, read_key: str, stop_at: int) -> int:
        """For a request ``user`` has just authenticated: the integer at ``read_key`` (the
        client's failed authentications) and, unless it has reached ``stop_at``, this request
        counted in the user's window, in one round trip. ``allow_request`` then uses that count
        instead of counting again. Views that do not apply this throttle only read."""
        if view is None or cls not in getattr(view, "throttle_classes", ()):
            return cache_get_int(read_key)
        throttle = cls()
        if throttle.rate is None:
            return cache_get_int(read_key)
        key = throttle.cache_format % {"scope": throttle.scope, "ident": user.pk}
        reading, window = count_with_reading(read_key, stop_at, key, throttle.duration)
        if window is not None:
            request.__dict__["_herald_counted_window"] = (key, window)
        return reading
