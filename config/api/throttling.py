from rest_framework.throttling import UserRateThrottle as _UserRateThrottle


class UserRateThrottle(_UserRateThrottle):
    """Per-user (or per-IP when anonymous) API rate, shared through the cache (Redis in prod)."""

    scope = "user"
