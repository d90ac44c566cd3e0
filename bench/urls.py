"""The real URL layout plus ``/bench/bare``: a plain Django view, no DRF, no database.

It goes through the same middleware stack as the API, so the ratio API / bare measures what the
API itself adds: DRF, authentication (token lookup), throttling, the query and serialization.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path

from config.urls import handler404, handler500
from config.urls import urlpatterns as herald_urlpatterns


def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [path("bench/bare", bare, name="bench-bare"), *herald_urlpatterns]

__all__ = ["handler404", "handler500", "urlpatterns"]
