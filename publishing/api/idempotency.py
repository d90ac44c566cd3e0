"""``Idempotency-Key`` on mutations: the same key with the same request replays the first
response; the same key with another request is a 409. Keys live 24 hours.

A replay is a request like any other: authentication and the token's permissions ran before the
view, and the operation's own access check (``access``) runs again before a stored answer is
served, so a member removed from the workspace (or demoted) since gets the 403 or 404 a fresh
request would get, not the stored answer."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any, cast

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.problems import RequestValidationError
from config.errors import ConflictError
from publishing.errors import IdempotencyKeyReusedError
from publishing.models import IdempotencyRecord
from workspaces.models import User

HEADER = "HTTP_IDEMPOTENCY_KEY"
MAX_KEY_LENGTH = 200
TTL = IdempotencyRecord.TTL


def _fingerprint(request: Request) -> str:
    body: Any
    try:
        body = request.data if not hasattr(request.data, "dict") else request.data.dict()
    except Exception:  # unparseable bodies fail later, in the view
        body = None
    payload = json.dumps([request.method, request.path, body], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


AccessCheck = Callable[[Request, dict[str, Any]], object]


def idempotent(
    *, access: AccessCheck
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    """Make a view method honour ``Idempotency-Key``. ``access(request, url_kwargs)`` is the
    operation's access check (raising the 404 or 403 of a fresh request); it runs before any
    stored answer for the key is used."""

    def decorate(view_method: Callable[..., Response]) -> Callable[..., Response]:
        return _idempotent(view_method, access)

    return decorate


def _idempotent(
    view_method: Callable[..., Response], access: AccessCheck
) -> Callable[..., Response]:
    @functools.wraps(view_method)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.META.get(HEADER)
        if key is None:
            return view_method(self, request, *args, **kwargs)
        if not key or len(key) > MAX_KEY_LENGTH:
            raise RequestValidationError(
                {"Idempotency-Key": [f"1 to {MAX_KEY_LENGTH} characters."]}, location="header"
            )
        fingerprint = _fingerprint(request)
        user = cast(User, request.user)  # the idempotent operations require authentication
        IdempotencyRecord.objects.filter(
            user=user, key=key, created_at__lt=timezone.now() - TTL
        ).delete()
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    user=user,
                    key=key,
                    method=request.method or "",
                    path=request.path,
                    request_hash=fingerprint,
                )
        except IntegrityError:
            access(request, kwargs)  # the caller may have lost access since the first answer
            existing = IdempotencyRecord.objects.get(user=user, key=key)
            if existing.request_hash != fingerprint:
                raise IdempotencyKeyReusedError() from None
            if existing.response_status is None:
                raise ConflictError(
                    "A request with this Idempotency-Key is still in progress.",
                    code="idempotency_in_progress",
                ) from None
            replay = Response(
                existing.response_body,
                status=existing.response_status,
                headers=existing.response_headers,
            )
            replay["Idempotent-Replayed"] = "true"
            return replay
        try:
            response = view_method(self, request, *args, **kwargs)
        except Exception:
            record.delete()  # a failed request may be retried with the same key
            raise
        if response.status_code >= 500:
            record.delete()
        else:
            headers = {name: response[name] for name in ("Location",) if name in response}
            IdempotencyRecord.objects.filter(pk=record.pk).update(
                response_status=response.status_code,
                response_body=response.data,
                response_headers=headers,
            )
        return response

    return wrapper
