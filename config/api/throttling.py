"""The API rate limit, shared through the cache (Redis in production), and fast cache reads.

DRF's ``SimpleRateThrottle`` keeps a list of request times per client: a ``GET`` and a ``SET``
of a growing pickled list on every request. Here each client has a counter that lives for one
rate period from its first request. On Redis that is one pipelined round trip per request
(``SET NX EX`` + ``INCR`` + ``TTL``); a 429 carries the seconds until the window ends. Like any
fixed window (unlike DRF's sliding log), it admits up to twice the rate across the end of one
window and the start of the next.

A bearer request also reads its client's failed-authentication count. ``count_with_reading``
does both in the same round trip (one server-side script), and ``UserRateThrottle.admit`` lets the
authentication class use it: the throttle then finds its window already counted for the request.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.throttling import UserRateThrottle as _UserRateThrottle


def redis_client(backend: BaseCache) -> Any | None:
    """One reused ``redis.Redis`` client per cache backend instance, or ``None`` when the cache
    is not Redis. (Django's ``RedisCache`` builds a new client for every operation, and a
    redis-py client costs about 0.1 ms to build; the connection pool was already shared.)

    Keys for this client go through ``backend.make_key`` (prefix and version) without
    ``validate_key``: that check walks the key character by character for memcached's limits,
    which Redis does not have, and the keys here are built from IP addresses and user ids."""
    from django.core.cache.backends.redis import RedisCache

    if not isinstance(backend, RedisCache):
        return None
    cache_client = backend._cache
    client = cache_client.__dict__.get("_herald_client")
    if client is None:
        client = cache_client.get_client(write=True)
        cache_client.__dict__["_herald_client"] = client
    return client


def cache_get_int(key: str, default: int = 0) -> int:
    """``cache.get(key, default)`` for an integer counter (e.g. one written with ``incr``)."""
    backend = caches["default"]
    client = redis_client(backend)
    if client is None:
        return int(backend.get(key, default))
    value = client.get(backend.make_key(key))
    return default if value is None else int(value)


def window_hit(key: str, duration: int) -> tuple[int, float]:
    """Count one request in the window of ``key``: (requests in the window, seconds left)."""
    backend = caches["default"]
    client = redis_client(backend)
    if client is not None:
        full_key = backend.make_key(key)
        pipe = client.pipeline(transaction=False)
        pipe.set(full_key, 0, ex=duration, nx=True)
        pipe.incr(full_key)
        pipe.ttl(full_key)
        _, count, ttl = pipe.execute()
        if ttl < 0:  # no expiry (should not happen): never let a counter live forever
            client.expire(full_key, duration)
            ttl = duration
        return int(count), float(ttl)
    # Any other cache (the in-process cache in development and tests): read, then write.
    now = time.time()
    state = backend.get(key)
    if state is None or state[0] <= now:
        state = (now + duration, 0)
    ends, count = state[0], state[1] + 1
    backend.set(key, (ends, count), timeout=max(1, math.ceil(ends - now)))
    return count, ends - now


# One round trip: read an integer counter (``KEYS[1]``) and, unless it has reached ``ARGV[2]``,
# count one request in the window ``KEYS[2]`` of ``ARGV[1]`` seconds, as ``window_hit`` does.
_READ_THEN_HIT = """
local reading = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if reading >= tonumber(ARGV[2]) then
  return {reading, -1, -1}
end
redis.call('SET', KEYS[2], 0, 'EX', ARGV[1], 'NX')
local count = redis.call('INCR', KEYS[2])
local ttl = redis.call('TTL', KEYS[2])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[2], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {reading, count, ttl}
"""


def count_with_reading(
    read_key: str, stop_at: int, key: str, duration: int
) -> tuple[int, tuple[int, float] | None]:
    """The integer at ``read_key`` and, unless it has reached ``stop_at``, ``window_hit(key,
    duration)``; on Redis in one round trip. A request stopped by the reading is not counted."""
    backend = caches["default"]
    client = redis_client(backend)
    if client is None:
        reading = cache_get_int(read_key)
        return reading, None if reading >= stop_at else window_hit(key, duration)
    script = client.__dict__.get("_herald_read_then_hit")
    if script is None:  # registered once per client; redis-py sends EVALSHA, loading it if needed
        script = client.__dict__["_herald_read_then_hit"] = client.register_script(_READ_THEN_HIT)
    full_keys = [backend.make_key(read_key), backend.make_key(key)]
    reading, count, ttl = script(keys=full_keys, args=[duration, stop_at])
    if count < 0:
        return int(reading), None
    return int(reading), (int(count), float(ttl))


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


class UserRateThrottle(WindowRateThrottle, _UserRateThrottle):
    """Per-user (or per-IP when anonymous) API rate, shared through the cache (Redis in prod)."""

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
