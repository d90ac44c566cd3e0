"""Discovery's two per-user limits, shared through Redis when it is configured:

* a rate (``HERALD_DISCOVERY_RATE``, 6 per minute): a DRF throttle on the shared window
  counter of ``config.api.throttling``;
* one request in flight: a lock key per user (``SET NX EX`` on Redis, ``cache.add`` on other
  caches) that lives at most the engine's time budget plus a margin, so a process that dies
  mid-request cannot block its user for longer than that.

While Redis is down, taking the slot fails and the request is a 503 ``dependency_unavailable``
problem (``config/api/problems.py``); a slot whose release fails expires on its own.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache import caches

from config.api.throttling import UserRateThrottle, redis_client
from config.outages import REDIS_OUTAGE_ERRORS, log_outage
from discovery.errors import DiscoveryInFlightError

logger = logging.getLogger(__name__)

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class DiscoveryRateThrottle(UserRateThrottle):
    """Per-user discovery rate (``DEFAULT_THROTTLE_RATES["discovery"]``)."""

    scope = "discovery"


def _key(user_id: Any) -> str:
    return f"discovery:in-flight:{user_id}"


@contextmanager
def one_in_flight(user_id: Any, *, ttl_seconds: float, retry_after: float) -> Iterator[None]:
    """Hold the user's single discovery slot for the duration of the block (429 otherwise)."""
    backend = caches["default"]
    client = redis_client(backend)
    token = secrets.token_hex(16)
    ttl = max(1, math.ceil(ttl_seconds))
    if client is not None:
        full_key = backend.make_and_validate_key(_key(user_id))
        acquired = bool(client.set(full_key, token, nx=True, ex=ttl))
    else:
        acquired = backend.add(_key(user_id), token, timeout=ttl)
    if not acquired:
        raise DiscoveryInFlightError(retry_after=max(1, math.ceil(retry_after)))
    try:
        yield
    finally:
        try:
            if client is not None:
                client.eval(_RELEASE, 1, full_key, token)
            elif backend.get(_key(user_id)) == token:
                backend.delete(_key(user_id))
        except REDIS_OUTAGE_ERRORS as exc:  # Redis went away mid-request: the key expires anyway
            log_outage(logger, "redis", "discovery", "in-flight slot left to expire (%s)",
                       type(exc).__name__)  # fmt: skip
