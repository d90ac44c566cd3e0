"""Problem+json for errors raised outside DRF views on /api/ paths: oversize bodies, crashes,
and Django-level 404/405 responses. :class:`HostCheckMiddleware` refuses a bad ``Host`` header
first."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.log import log_response

from config.api.problems import PROBLEM_CONTENT_TYPE, outage_response, problem_response

logger = logging.getLogger("django.request")

API_PREFIX = "/api/"

# The logger Django itself uses for this refusal (operators may already route it).
host_logger = logging.getLogger("django.security.DisallowedHost")


class HostCheckMiddleware:
    """Refuse a request whose ``Host`` header is not in ``ALLOWED_HOSTS``, before any other
    middleware asks for it: a 400 problem+json on /api/ paths, a plain 400 elsewhere.

    Logged once, at WARNING, without a traceback: anyone can send such requests, so each one
    must not cost a stack trace in the log (Django's own handling logs it at ERROR with one, and
    the problem body built afterwards asked for the host again and logged it a second time).
    ``log_response`` escapes the header and marks the response logged, so the handler does not
    log it a second time as a plain "Bad Request".
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost as exc:
            response: HttpResponse
            if request.path.startswith(API_PREFIX):
                response = problem_response(
                    request, 400, "malformed_request", "The Host header does not name this service."
                )
            else:
                response = HttpResponseBadRequest(
                    b"Bad Request (400): the Host header does not name this service.\n",
                    content_type="text/plain; charset=utf-8",
                )
            log_response(
                "%s",
                str(exc)[:300],
                response=response,
                request=request,
                level="warning",
                logger=host_logger,
            )
            return response
        return self.get_response(request)


class ApiProblemMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        unframed = _length_required(request)
        if unframed is not None:
            return unframed
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        too_large = self._too_large(request)
        if too_large:
            return too_large
        response = self.get_response(request)
        # An /api/ view that answers a browser with Herald's HTML page on purpose (the OAuth
        # callback) marks it ``browser_page``; every other error becomes problem+json.
        if (
            response.status_code >= 400
            and not _is_json(response)
            and not getattr(response, "browser_page", False)
        ):
            detail = {
                404: "No such resource.",
                405: f"Method {request.method} is not allowed here.",
                413: "The request body is too large.",
            }.get(response.status_code, "The request failed.")
            code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
                response.status_code, "error"
            )
            return problem_response(request, response.status_code, code, detail)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, (Http404, PermissionDenied)):
            return None  # not a crash: handler404/handler403 answer with a 404/403 problem
        outage = outage_response(exception, request)  # Redis down: 503, logged once per interval
        if outage is not None:
            return outage
        logger.error(
            "Unhandled exception on %s %s", request.method, request.path, exc_info=exception
        )
        return problem_response(
            request, 500, "internal_error", "An unexpected error occurred; it has been logged."
        )

    @staticmethod
    def _too_large(request: HttpRequest) -> HttpResponse | None:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return problem_response(request, 400, "malformed_request", "Invalid Content-Length.")
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.startswith("multipart/"):
            limit = settings.HERALD_MAX_UPLOAD_BYTES
        elif content_type.startswith("application/offset+octet-stream"):
            # a resumable-upload PATCH: its view reads the raw stream in bounded chunks and
            # answers its own 413 (with the tus headers) against the upload's length
            limit = settings.HERALD_MAX_VIDEO_BYTES
        else:
            limit = settings.HERALD_MAX_JSON_BODY_BYTES
        if length > limit:
            return problem_response(
                request,
                413,
                "payload_too_large",
                f"The request body is {length} bytes; the limit is {limit} bytes.",
            )
        return None


def _length_required(request: HttpRequest) -> HttpResponse | None:
    """A 411 for a body framed by ``Transfer-Encoding`` (chunked) without a Content-Length.

    Django reads exactly CONTENT_LENGTH bytes of a WSGI request (none without one), so such a
    body would be silently dropped and the client told that its fields are missing. gunicorn
    passes chunked bodies through to WSGI (``wsgi.input_terminated``) without a CONTENT_LENGTH;
    rather than read an unbounded stream, the request is refused and the client told to send a
    Content-Length, which the size limits (413) are checked against.
    """
    meta = request.META
    if not meta.get("HTTP_TRANSFER_ENCODING") or meta.get("CONTENT_LENGTH"):
        return None
    detail = "Send the request body with a Content-Length header; Transfer-Encoding: chunked is not accepted."
    if request.path.startswith(API_PREFIX):
        return problem_response(request, 411, "length_required", detail)
    return HttpResponse(
        f"Length Required (411): {detail}\n", status=411, content_type="text/plain; charset=utf-8"
    )


def _is_json(response: HttpResponse) -> bool:
    content_type = response.get("Content-Type", "")
    return content_type.startswith(
        ("application/json", PROBLEM_CONTENT_TYPE, "application/schema+json")
    )
