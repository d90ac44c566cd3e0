"""Test-only URLconf: the real URLs plus a plain Django view (outside DRF) under /api/ that reads
the cache, to show a Redis outage there is a 503 problem too (tests/api/test_redis_outage.py)."""

from __future__ import annotations

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from config.urls import handler404, handler500
from config.urls import urlpatterns as real_urlpatterns


def plain_cache_view(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"value": cache.get("outage-test")})


urlpatterns = [
    path("api/v1/test-plain-cache", plain_cache_view),
    *real_urlpatterns,
]

__all__ = ["handler404", "handler500", "urlpatterns"]
