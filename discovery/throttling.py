"""Discovery's two per-user limits, shared by every process of the instance (config/limits.py:
Redis when it is configured, else the instance's SQLite limits file):

* a rate (``HERALD_DISCOVERY_RATE``, 6 per minute): a DRF throttle on the shared window
  counter of ``config.api.throttling``;
* one request in flight: a slot per user that lives at most the engine's time budget plus a
  margin, so a process that dies mid-request cannot block its user for longer than that.

While Redis is down the rate fails open like every counter, but taking the slot fails and the
request is a 503 ``dependency_unavailable`` problem (``config/api/problems.py``); a slot whose
release fails expires on its own.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from config.api.throttling import UserRateThrottle
from config.limits import acquire_slot, release_slot
from config.types import ModelId
from discovery.errors import DiscoveryInFlightError


class DiscoveryRateThrottle(UserRateThrottle):
    """Per-user discovery rate (``DEFAULT_THROTTLE_RATES["discovery"]``)."""

    scope = "discovery"


def _key(user_id: ModelId) -> str:
    return f"discovery:in-flight:{user_id}"


@contextmanager
def one_in_flight(user_id: ModelId, *, ttl_seconds: float, retry_after: float) -> Iterator[None]:
    """Hold the user's single discovery slot for the duration of the block (429 otherwise)."""
    token = secrets.token_hex(16)
    if not acquire_slot(_key(user_id), token, max(1, math.ceil(ttl_seconds))):
        raise DiscoveryInFlightError(retry_after=max(1, math.ceil(retry_after)))
    try:
        yield
    finally:
        release_slot(_key(user_id), token)
