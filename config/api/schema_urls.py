"""Absolute URLs of response JSON schemas (``$schema``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost

SCHEMAS_PATH = "/api/v1/schemas/"


def schema_url(name: str, request: Any = None) -> str:
    if settings.HERALD_PUBLIC_URL:
        origin = str(settings.HERALD_PUBLIC_URL)
    elif request is not None:
        django_request = getattr(request, "_request", request)
        try:
            origin = f"{django_request.scheme}://{django_request.get_host()}"
        except DisallowedHost:  # a refused Host header names no origin of ours: a relative URL
            origin = ""
    else:
        origin = "http://localhost:8000"
    return f"{origin}{SCHEMAS_PATH}{name}.json"
