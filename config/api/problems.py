"""One place that turns every API error into ``application/problem+json`` (RFC 9457)."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from config.api.schema_urls import schema_url
from config.errors import DomainError, FieldValidationError, RateLimitedError, field_error
from config.outages import log_outage, outage_dependency

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEMS_PATH = "/docs/problems/"

# Statuses outside the HTTP registry that a protocol Herald speaks defines: tus's checksum
# extension answers a PATCH whose bytes do not match their Upload-Checksum with 460.
EXTENSION_STATUS_PHRASES = {460: "Checksum Mismatch"}


def status_phrase(status: int) -> str:
    """The reason phrase of ``status``, the protocol extensions' own included."""
    if status in EXTENSION_STATUS_PHRASES:
        return EXTENSION_STATUS_PHRASES[status]
    return HTTPStatus(status).phrase


class RequestValidationError(exceptions.ValidationError):
    """A DRF validation error that knows where the input came from (body, query, path, header)."""

    def __init__(self, detail: Any, location: str = "body") -> None:
        super().__init__(detail)
        self.location = location


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def _problem_body(
    request: HttpRequest | None, status: int, code: str, detail: str, errors: Any = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "$schema": schema_url("ErrorModel", request),
        "type": "about:blank" if code in {"error"} else f"{_origin(request)}{PROBLEMS_PATH}{code}",
        "title": status_phrase(status),
        "status": status,
        "detail": detail,
        "instance": request.path if request is not None else "",
        "code": code,
    }
    if errors:
        body["errors"] = errors
    return body


def _origin(request: HttpRequest | None) -> str:
    from django.conf import settings

    if settings.HERALD_PUBLIC_URL:
        return str(settings.HERALD_PUBLIC_URL)
    if request is None:
        return ""
    try:
        return f"{request.scheme}://{request.get_host()}"
    except DisallowedHost:  # the problem refusing that Host header: relative URIs
        return ""


def problem_response(
    request: HttpRequest | None,
    status: int,
    code: str,
    detail: str,
    *,
    errors: Any = None,
    headers: dict[str, str] | None = None,
) -> JsonResponse:
    """A problem response for plain Django views and middleware (outside DRF)."""
    response = JsonResponse(
        _problem_body(request, status, code, detail, errors),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
    )
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def flatten_errors(data: Any, location: str) -> list[dict[str, Any]]:
    """Turn DRF's nested error structure into ``[{location, message, value}]``."""
    flat: list[dict[str, Any]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                if key == "non_field_errors":
                    walk(child, path)
                elif isinstance(key, int):  # ListField/DictField-of-list item errors
                    walk(child, f"{path}[{key}]")
                else:
                    walk(child, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            if node and all(not isinstance(item, (dict, list)) for item in node):
                for item in node:
                    flat.append(field_error(path, str(item)))
            else:
                for index, child in enumerate(node):
                    if child in ({}, [], None):
                        continue
                    walk(child, f"{path}[{index}]")
        else:
            flat.append(field_error(path, str(node)))

    walk(data, location)
    return flat


def _attach_values(errors: list[dict[str, Any]], request: Any) -> None:
    """Echo the offending value when it is small and not a secret."""
    for error in errors:
        location = error["location"]
        root, _, rest = location.partition(".")
        source: Any
        if root == "query":
            source = getattr(request, "query_params", {})
        elif root == "body":
            try:
                source = request.data
            except Exception:  # noqa: S112  (the body already failed to parse: no value to echo)
                continue
        else:
            continue
        value = _dig(source, rest)
        if value is _MISSING:
            continue
        if isinstance(value, (str, int, float, bool)) or value is None:
            if isinstance(value, str) and len(value) > 200:
                value = value[:200] + "…"
            if _looks_secret(rest):
                continue
            error["value"] = value


_MISSING = object()


def _looks_secret(path: str) -> bool:
    lowered = path.lower()
    return any(word in lowered for word in ("password", "token", "secret", "key"))


def _dig(source: Any, path: str) -> Any:
    import re

    if not path:
        return _MISSING
    node = source
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        try:
            if part.startswith("["):
                node = node[int(part[1:-1])]
            elif hasattr(node, "getlist"):
                values = node.getlist(part)
                if not values:
                    return _MISSING
                node = values[0] if len(values) == 1 else values
            else:
                node = node[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return _MISSING
    return node


def _as_api_exception(exc: Exception) -> exceptions.APIException | None:
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        return exceptions.ValidationError(detail)
    return None


def _finish(
    response: Response, request: Any, code: str, detail: str, errors: Any = None
) -> Response:
    django_request = getattr(request, "_request", request)
    response.data = _problem_body(django_request, response.status_code, code, detail, errors)
    response.content_type = PROBLEM_CONTENT_TYPE
    return response


OUTAGE_RETRY_AFTER_SECONDS = 5


def outage_detail(dependency: str) -> str:
    return f"A required service ({dependency}) is unavailable; retry later."


def outage_problem(exc: Exception, request: Any) -> Response | None:
    """A 503 ``dependency_unavailable`` problem when ``exc`` says Redis or the broker cannot be
    reached (``config/outages.py``), logged once per interval without a traceback; else None."""
    dependency = outage_dependency(exc)
    if dependency is None:
        return None
    path = getattr(request, "path", "")
    log_outage(
        logger,
        dependency,
        "api",
        "answering 503 to API requests that need it (%s on %s)",
        type(exc).__name__,
        path,
    )
    response = Response(status=503, headers={"Retry-After": str(OUTAGE_RETRY_AFTER_SECONDS)})
    response = _finish(response, request, "dependency_unavailable", outage_detail(dependency))
    response.data["failing"] = [dependency]
    return response


def outage_response(exc: Exception, request: HttpRequest) -> JsonResponse | None:
    """:func:`outage_problem` for plain Django views and middleware (outside DRF)."""
    dependency = outage_dependency(exc)
    if dependency is None:
        return None
    log_outage(
        logger,
        dependency,
        "api",
        "answering 503 to API requests that need it (%s on %s)",
        type(exc).__name__,
        request.path,
    )
    body = _problem_body(request, 503, "dependency_unavailable", outage_detail(dependency))
    body["failing"] = [dependency]
    response = JsonResponse(body, status=503, content_type=PROBLEM_CONTENT_TYPE)
    response["Retry-After"] = str(OUTAGE_RETRY_AFTER_SECONDS)
    return response


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    request = context.get("request")
    outage = outage_problem(exc, request)
    if outage is not None:
        return outage
    if isinstance(exc, DomainError):
        return _domain_problem(exc, request)
    api_exc = _as_api_exception(exc)
    if api_exc is None:
        return None  # unexpected: Django's handler500 renders a detail-free problem
    handled = drf_exception_handler(api_exc, context)
    if handled is None:
        return None
    return _drf_problem(api_exc, handled, request)


def _domain_problem(exc: DomainError, request: Any) -> Response:
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimitedError):
        headers["Retry-After"] = str(exc.retry_after)
    response = Response(status=exc.status, headers=headers)
    errors = exc.errors if isinstance(exc, FieldValidationError) else None
    response = _finish(response, request, exc.code, exc.detail, errors)
    # Extension members, e.g. the readiness decision that blocked a queue action; they never
    # replace the standard members.
    for name, value in getattr(exc, "extra", {}).items():
        response.data.setdefault(name, value)
    return response


def _drf_problem(api_exc: exceptions.APIException, response: Response, request: Any) -> Response:
    """DRF's answer to ``api_exc`` as a problem: 422 for validation, 401 for authentication."""
    if isinstance(api_exc, exceptions.ValidationError):
        response.status_code = 422
        location = getattr(api_exc, "location", "body")
        errors = flatten_errors(api_exc.detail, location)
        if request is not None:
            _attach_values(errors, request)
        return _finish(response, request, "invalid", "Request validation failed.", errors)
    if isinstance(api_exc, exceptions.ParseError):
        return _finish(response, request, "malformed_body", str(api_exc.detail))
    if isinstance(api_exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        response.status_code = 401
        if "WWW-Authenticate" not in response:
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        code = "not_authenticated"
        return _finish(response, request, code, str(api_exc.detail))
    if isinstance(api_exc, exceptions.Throttled):
        wait = api_exc.wait or 1  # type: ignore[attr-defined]  # set by Throttled(); not in stubs
        response["Retry-After"] = str(max(1, int(wait + 0.999)))
        return _finish(response, request, "rate_limited", "Too many requests; retry later.")
    codes = api_exc.get_codes()
    code = codes if isinstance(codes, str) else "error"
    detail = api_exc.detail if isinstance(api_exc.detail, str) else str(api_exc.detail)
    return _finish(response, request, code, str(detail))
