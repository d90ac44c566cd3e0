"""Discovery errors beyond the shared ones (config.errors)."""

from __future__ import annotations

from config.errors import RateLimitedError


class DiscoveryInFlightError(RateLimitedError):
    """A discovery request of the caller's is still running; retry after it finishes."""

    title = "Discovery in flight"
    code = "discovery_in_flight"
    default_detail = "A discovery request of yours is still running; wait for it to finish."
