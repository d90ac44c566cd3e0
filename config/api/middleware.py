"""Problem+json for errors raised outside DRF views on /api/ paths: oversize bodies, crashes,
and Django-level 404/405 responses."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from config.api.problems import PROBLEM_CONTENT_TYPE, problem_response

logger = logging.getLogger("django.request")

API_PREFIX = "/api/"


class ApiProblemMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        too_large = self._too_large(request)
        if too_large:
            return too_large
        response = self.get_response(request)
        if response.status_code >= 400 and not _is_json(response):
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
        limit = (
            settings.HERALD_MAX_UPLOAD_BYTES
            if content_type.startswith("multipart/")
            else settings.HERALD_MAX_JSON_BODY_BYTES
        )
        if length > limit:
            return problem_response(
                request,
                413,
                "payload_too_large",
                f"The request body is {length} bytes; the limit is {limit} bytes.",
            )
        return None


def _is_json(response: HttpResponse) -> bool:
    content_type = response.get("Content-Type", "")
    return content_type.startswith(("application/json", PROBLEM_CONTENT_TYPE, "application/schema+json"))
