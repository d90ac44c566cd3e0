"""The API rate limit, shared by every process of the instance (``config/limits.py``).

DRF's ``SimpleRateThrottle`` keeps a list of request times per client: a ``GET`` and a ``SET``
of a growing pickled list on every request. Here each client has a counter that lives for one
rate period from its first request. On Redis that is one pipelined round trip per request
(``SET NX EX`` + ``INCR`` + ``TTL``); without Redis one SQLite statement on the instance's limits
file. A 429 carries the seconds until the window ends. Like any fixed window (unlike DRF's
sliding log), it admits up to twice the rate across the end of one window and the start of the
next. An anonymous client is counted under :func:`config.limits.client_ip`, never under an
address it chose itself.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.throttling import UserRateThrottle as _UserRateThrottle

from config.limits import client_ip, redis_client, window_hit

__all__ = ["UserRateThrottle", "WindowRateThrottle", "caches", "redis_client", "window_hit"]


class WindowRateThrottle(SimpleRateThrottle):
    """``SimpleRateThrottle`` with a shared counter instead of a history list."""

    # Set by SimpleRateThrottle.__init__ from the rate (used only when there is one); declared
    # here because DRF's stubs do not.
    num_requests: int
    duration: int

    cache_format = "throttle:%(scope)s:%(ident)s"

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
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
