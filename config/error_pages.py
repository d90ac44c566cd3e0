"""Error pages (``handler403/404/500`` in config/urls.py and ``CSRF_FAILURE_VIEW``).

Browsers get an HTML page in the look of the other server-rendered pages (herald/error.html);
/api/ paths keep their ``application/problem+json`` body.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template import loader

from config.api.middleware import API_PREFIX
from config.api.problems import problem_response

_PAGES = {
    403: ("Access denied", "You do not have access to this page."),
    404: (
        "Page not found",
        "There is no page at this address. Check the link, or start again from the sign-in page.",
    ),
    500: (
        "Something went wrong",
        "The server could not show this page. The error has been logged; try again in a moment.",
    ),
}


def error_page(
    request: HttpRequest | None, status: int, *, title: str, message: str, use_request: bool = True
) -> HttpResponse:
    """The HTML error page. ``use_request=False`` renders without the request's context
    processors (no session or user lookup), for the 500 page, which must not fail itself."""
    template = loader.get_template("herald/error.html")
    context = {"status": status, "error_title": title, "message": message}
    body = template.render(context, request if use_request else None)
    response = HttpResponse(body, status=status, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return problem_response(request, 404, "not_found", "No such resource.")
    title, message = _PAGES[404]
    return error_page(request, 404, title=title, message=message)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return problem_response(
            request, 403, "permission_denied", "You do not have access to this resource."
        )
    title, message = _PAGES[403]
    return error_page(request, 403, title=title, message=message)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return problem_response(
            request, 500, "internal_error", "An unexpected error occurred; it has been logged."
        )
    title, message = _PAGES[500]
    return error_page(request, 500, title=title, message=message, use_request=False)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form posted without a valid CSRF token (often: a page open for long, or cookies off).
    ``reason`` is Django's technical text; it is not shown to the visitor."""
    if request.path.startswith(API_PREFIX):
        return problem_response(
            request,
            403,
            "csrf_failed",  # as the API's session authentication answers it
            "CSRF verification failed: send the X-CSRFToken header with the csrftoken cookie's value.",
        )
    return error_page(
        request,
        403,
        title="This form has expired",
        message=(
            "The form could not be verified, so nothing was changed. Go back, reload the page "
            "and submit it again. If this keeps happening, allow cookies for this site."
        ),
    )
