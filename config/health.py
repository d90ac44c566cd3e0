"""Liveness and readiness probes (spec §1 "Operations", §4 "Health").

Liveness never touches the database, so a database outage cannot cause restart loops.
Readiness runs a bounded database probe and, only when S3 storage is configured, a bounded
object-store capability check (write, read back, delete a random object).
"""

from __future__ import annotations

import concurrent.futures
import logging
import secrets
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.problems import PROBLEM_CONTENT_TYPE
from config.api.schema import ResponseSerializer, problems
from config.errors import ServiceUnavailableError

logger = logging.getLogger(__name__)

S3_CACHE_KEY = "health:s3"
S3_SUCCESS_TTL = 30
S3_FAILURE_TTL = 5
DB_TIMEOUT_SECONDS = 3.0

_executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="probe")


class LivenessSerializer(ResponseSerializer):
    status = serializers.ChoiceField(choices=["ok"])


class ReadinessSerializer(ResponseSerializer):
    status = serializers.ChoiceField(choices=["ready"])
    database = serializers.ChoiceField(choices=["ok"])
    storage = serializers.ChoiceField(
        choices=["ok"], required=False, help_text="Present only when S3 storage is configured."
    )


class DependencyUnavailable(ServiceUnavailableError):
    code = "dependency_unavailable"


def _probe_database() -> None:
    connection = connections["default"]
    try:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = 2000")
                cursor.execute("SELECT 1")
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
    finally:
        connection.close()


def database_ok() -> bool:
    future = _executor.submit(_probe_database)
    try:
        future.result(timeout=DB_TIMEOUT_SECONDS)
    except Exception as exc:  # any failure, including timeout, means not ready
        logger.warning("Readiness: database probe failed: %s", type(exc).__name__)
        return False
    return True


def _probe_storage() -> None:
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    name = f"herald-readiness/{secrets.token_hex(12)}.txt"
    payload = secrets.token_bytes(32)
    saved = default_storage.save(name, ContentFile(payload))
    try:
        with default_storage.open(saved, "rb") as handle:
            if handle.read() != payload:
                raise RuntimeError("object store returned different bytes")
    finally:
        default_storage.delete(saved)


def storage_ok() -> bool:
    cached = cache.get(S3_CACHE_KEY)
    if cached is not None:
        return bool(cached)
    future = _executor.submit(_probe_storage)
    started = time.monotonic()
    try:
        future.result(timeout=settings.HERALD_S3_CHECK_TIMEOUT_SECONDS)
        healthy = True
    except Exception as exc:
        logger.warning(
            "Readiness: object-store check failed after %.1fs: %s",
            time.monotonic() - started,
            type(exc).__name__,
        )
        healthy = False
    cache.set(S3_CACHE_KEY, healthy, S3_SUCCESS_TTL if healthy else S3_FAILURE_TTL)
    return healthy


class LivenessView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        operation_id="health_liveness",
        auth=[],
        responses={200: LivenessSerializer},
        description="Liveness: the HTTP process is alive. Never checks the database.",
    )
    def get(self, request: Request) -> Response:
        return Response(LivenessSerializer({"status": "ok"}, context={"request": request}).data)


class ReadinessView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        operation_id="health_readiness",
        auth=[],
        responses={200: ReadinessSerializer, **problems(503)},
        description=(
            "Readiness: a bounded database probe and, when S3 storage is configured, a bounded "
            "object-store capability check. 503 names the failing dependency."
        ),
    )
    def get(self, request: Request) -> Response:
        failing = []
        result: dict[str, str] = {"status": "ready"}
        if database_ok():
            result["database"] = "ok"
        else:
            failing.append("database")
        if settings.HERALD_S3_BUCKET:
            if storage_ok():
                result["storage"] = "ok"
            else:
                failing.append("storage")
        if failing:
            raise DependencyUnavailable(
                f"Not ready: {', '.join(failing)} unavailable.", failing=failing
            )
        response = Response(ReadinessSerializer(result, context={"request": request}).data)
        response["Cache-Control"] = "no-store"
        return response


__all__ = ["PROBLEM_CONTENT_TYPE", "LivenessView", "ReadinessView"]
