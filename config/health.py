"""Liveness and readiness probes.

Liveness never touches the database, so a database outage cannot cause restart loops.
Readiness runs a bounded database probe, when ``REDIS_URL`` is configured a bounded Redis probe
(``PING`` on a fresh connection: Redis is the Celery broker, the cache and the shared rate
limits) and, only when S3 storage is configured, a bounded object-store capability check (write,
read back, delete a random object). The checks run concurrently, each on its own small thread
pool, so a hung dependency can never starve another one's probe. The object-store result is
cached (success 30 s, failure 5 s) in the shared cache, so load balancers polling every instance
do not turn into an S3 request storm.
"""

from __future__ import annotations

import concurrent.futures
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.utils.module_loading import import_string
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config import public_origin, version
from config.api.problems import PROBLEM_CONTENT_TYPE, problem_exception_handler
from config.api.responses import respond
from config.api.schema import ResponseSerializer, problems
from config.errors import ServiceUnavailableError
from config.outages import log_outage
from config.registry import Many

logger = logging.getLogger(__name__)

S3_CACHE_KEY = "health:s3"
S3_SUCCESS_TTL = 30
S3_FAILURE_TTL = 5
DB_TIMEOUT_SECONDS = 3.0
DB_STATEMENT_TIMEOUT_MS = 2000
REDIS_TIMEOUT_SECONDS = 2.0

# Separate pools: stuck object-store calls (bounded by botocore timeouts) must not queue up in
# front of the database probe.
_db_executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="probe-db")
_storage_executor = concurrent.futures.ThreadPoolExecutor(
    max_workers=2, thread_name_prefix="probe-s3"
)
_redis_executor = concurrent.futures.ThreadPoolExecutor(
    max_workers=2, thread_name_prefix="probe-redis"
)


class HealthVersionSerializer(serializers.Serializer[Any]):
    release = serializers.CharField(help_text="Herald's release (CHANGELOG.md), e.g. 0.2.0.")
    source_revision = serializers.CharField(
        help_text="The source revision it was built from (a git commit), or `unknown`."
    )


# --- Checks of the apps ----------------------------------------------------------------------


@dataclass(frozen=True)
class ReadinessCheck:
    """``check`` raises when the instance is not ready; ``/ready`` then fails with ``name``, and
    the 503's detail adds ``reason``. It runs on the database probe's pool, bounded by its time
    limit, and closes the connections it opened."""

    name: str
    check: Callable[[], None]
    reason: str


# Registered by the apps in their AppConfig.ready (config imports no app).
READINESS_CHECKS: Many[ReadinessCheck] = Many("config.readiness_checks")


class LivenessSerializer(ResponseSerializer):
    status = serializers.ChoiceField(choices=["ok"])
    version = HealthVersionSerializer(
        help_text="What is running: the release and its source revision."
    )


class ReadinessSerializer(ResponseSerializer):
    status = serializers.ChoiceField(choices=["ready"])
    database = serializers.ChoiceField(choices=["ok"])
    redis = serializers.ChoiceField(
        choices=["ok"],
        required=False,
        help_text="Present only when REDIS_URL is configured (Celery broker, cache, rate limits).",
    )
    storage = serializers.ChoiceField(
        choices=["ok"], required=False, help_text="Present only when S3 storage is configured."
    )
    public_origin = serializers.ChoiceField(
        choices=["ok", "unreachable", "unchecked"],
        required=False,
        help_text="Present only when HERALD_PUBLIC_URL is set: whether the hourly request to "
        "this server's own media through that URL succeeded (networks that fetch media by "
        "URL, Facebook and Instagram, need it). Informative: it never makes /ready fail.",
    )


class DependencyUnavailable(ServiceUnavailableError):
    code = "dependency_unavailable"


# --- Database --------------------------------------------------------------------------------


def _probe_database() -> None:
    connection = connections["default"]
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # Session-level (the connection is closed below); SET LOCAL would be a no-op
                # outside a transaction block in autocommit mode.
                cursor.execute(f"SET statement_timeout = {DB_STATEMENT_TIMEOUT_MS}")
            cursor.execute("SELECT 1")
    finally:
        connection.close()


# --- Redis ---------------------------------------------------------------------------------


def _probe_redis(url: str, timeout: float) -> None:
    """``PING`` on a fresh connection, so a connection left broken by a Redis restart never
    makes a healthy server look down (nor a pooled one make a dead server look up)."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        if not client.ping():
            raise RuntimeError("Redis did not answer PING")
    finally:
        client.close()


# --- Object store ----------------------------------------------------------------------------


def _probe_storage_backend(timeout: float) -> Any:
    """The configured default storage; an S3 backend gets probe-sized botocore limits.

    A separate instance with the same options (bucket, endpoint, credentials, prefix) but
    connect/read timeouts no longer than the check limit and no retries, so the worker thread
    of a timed-out check is released soon after the check has answered.
    """
    from django.core.files.storage import default_storage

    config: dict[str, Any] = settings.STORAGES.get("default", {})
    backend = import_string(config.get("BACKEND", "django.core.files.storage.FileSystemStorage"))
    try:
        from botocore.config import Config
        from storages.backends.s3 import S3Storage
    except ImportError:  # pragma: no cover - the s3 extra is a hard dependency
        return default_storage
    if not (isinstance(backend, type) and issubclass(backend, S3Storage)):
        return default_storage
    options = dict(config.get("OPTIONS", {}))
    base = options.get("client_config") or Config(
        s3={"addressing_style": options.get("addressing_style")}
    )
    options["client_config"] = base.merge(
        Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"mode": "standard", "total_max_attempts": 1},
        )
    )
    return backend(**options)


def _probe_storage(timeout: float) -> None:
    from django.core.files.base import ContentFile

    storage = _probe_storage_backend(timeout)
    name = f"herald-readiness/{secrets.token_hex(12)}.txt"
    payload = secrets.token_bytes(32)
    saved = storage.save(name, ContentFile(payload))
    try:
        with storage.open(saved, "rb") as handle:
            if handle.read() != payload:
                raise RuntimeError("object store returned different bytes")
    finally:
        storage.delete(saved)


def _cached_storage_result() -> bool | None:
    try:
        cached = cache.get(S3_CACHE_KEY)
    except Exception as exc:  # the cache is not the storage's dependency: just probe
        log_outage(
            logger,
            "cache",
            "readiness",
            "probing storage without the cached result (%s)",
            type(exc).__name__,
        )
        return None
    return None if cached is None else bool(cached)


def _remember_storage_result(healthy: bool) -> None:
    try:
        cache.set(S3_CACHE_KEY, healthy, S3_SUCCESS_TTL if healthy else S3_FAILURE_TTL)
    except Exception as exc:
        log_outage(
            logger, "cache", "readiness", "storage result not cached (%s)", type(exc).__name__
        )


# --- Waiting ---------------------------------------------------------------------------------


def _outcome(future: concurrent.futures.Future[None], deadline: float, what: str) -> bool:
    try:
        future.result(timeout=max(0.0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:
        future.cancel()  # drops it if it never started; a running check ends on its own limits
        # Load balancers poll often: an outage is reported once per interval, not per probe.
        log_outage(logger, what, "readiness", "check did not finish within its time limit")
        return False
    except Exception as exc:  # any failure means not ready
        log_outage(logger, what, "readiness", "check failed (%s)", type(exc).__name__)
        return False
    return True


def readiness() -> tuple[dict[str, str], list[str]]:
    """Run the required checks concurrently; return (result, failing dependency names)."""
    now = time.monotonic()
    db_future = _db_executor.submit(_probe_database)
    redis_future = None
    if settings.REDIS_URL:
        redis_future = _redis_executor.submit(
            _probe_redis, settings.REDIS_URL, REDIS_TIMEOUT_SECONDS
        )
    storage_future = None
    storage_cached = None
    storage_timeout = float(settings.HERALD_S3_CHECK_TIMEOUT_SECONDS)
    if settings.HERALD_S3_BUCKET:
        storage_cached = _cached_storage_result()
        if storage_cached is None:
            storage_future = _storage_executor.submit(_probe_storage, storage_timeout)

    app_futures = {app.name: _db_executor.submit(app.check) for app in READINESS_CHECKS.all()}

    result: dict[str, str] = {"status": "ready"}
    failing: list[str] = []
    if _outcome(db_future, now + DB_TIMEOUT_SECONDS, "database"):
        result["database"] = "ok"
    else:
        failing.append("database")
    for name, future in app_futures.items():
        # Reported only when failing: a ready body keeps its documented members.
        if not _outcome(future, now + DB_TIMEOUT_SECONDS, name) and "database" not in failing:
            failing.append(name)
    if redis_future is not None:
        if _outcome(redis_future, now + REDIS_TIMEOUT_SECONDS, "redis"):
            result["redis"] = "ok"
        else:
            failing.append("redis")
    if settings.HERALD_S3_BUCKET:
        if storage_future is not None:
            storage_cached = _outcome(storage_future, now + storage_timeout, "object-store")
            _remember_storage_result(storage_cached)
        if storage_cached:
            result["storage"] = "ok"
        else:
            failing.append("storage")
    return _with_public_origin(result), failing


def _with_public_origin(result: dict[str, str]) -> dict[str, str]:
    """The public-origin check's latest result, when there is a public origin to check."""
    origin = public_origin.state()
    return result if origin is None else {**result, "public_origin": origin}


# --- Views -----------------------------------------------------------------------------------


class LivenessView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        operation_id="health_liveness",
        auth=[],
        responses={200: LivenessSerializer},
        description="Liveness: the HTTP process is alive, and which release it runs. Never "
        "checks the database.",
    )
    def get(self, request: Request) -> Response:
        running = {"release": version.RELEASE, "source_revision": version.source_revision()}
        response = respond(request, LivenessSerializer, {"status": "ok", "version": running})
        response["Cache-Control"] = "no-store"
        return response


class ReadinessView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        operation_id="health_readiness",
        auth=[],
        responses={200: ReadinessSerializer, **problems(503)},
        description=(
            "Readiness: a bounded database probe, when REDIS_URL is configured a bounded Redis "
            "probe and, when S3 storage is configured, a bounded object-store capability check. "
            "503 (code `dependency_unavailable`) names the failing dependencies in its `failing` "
            "member (`database`, `redis`, `storage`, and `credentials` when the configured "
            "HERALD_CREDENTIALS_KEY opens none of the stored provider credentials)."
        ),
    )
    def get(self, request: Request) -> Response:
        result, failing = readiness()
        if failing:
            reason_of = {app.name: app.reason for app in READINESS_CHECKS.all()}
            reasons = [reason_of[name] for name in failing if name in reason_of]
            exc = DependencyUnavailable(
                " ".join([f"Not ready: {', '.join(failing)} unavailable.", *reasons])
            )
            problem = problem_exception_handler(exc, {"request": request, "view": self})
            if problem is None:  # pragma: no cover - a DomainError always renders
                raise exc
            problem.data["failing"] = failing
            response = problem
        else:
            response = respond(request, ReadinessSerializer, result)
        response["Cache-Control"] = "no-store"
        return response


__all__ = ["PROBLEM_CONTENT_TYPE", "LivenessView", "ReadinessView"]
