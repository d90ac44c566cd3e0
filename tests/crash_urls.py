"""Test-only URLconf: the real URLs plus views that crash, to exercise the 500 problem, and
browser pages that crash or refuse, to exercise the HTML 500 and 403 pages."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import handler403, handler404, handler500
from config.urls import urlpatterns as real_urlpatterns

SECRET_INTERNAL = "database password is hunter2 at /srv/herald/internal.py"


class CrashingApiView(APIView):
    authentication_classes = ()
    permission_classes = (AllowAny,)

    def get(self, request: Request) -> Response:
        raise RuntimeError(SECRET_INTERNAL)


def crashing_plain_view(request: HttpRequest) -> HttpResponse:
    raise KeyError(SECRET_INTERNAL)


def forbidden_page(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied(SECRET_INTERNAL)


def missing_thing(request: HttpRequest) -> HttpResponse:
    raise Http404(SECRET_INTERNAL)


def plain_post(request: HttpRequest) -> HttpResponse:
    """A plain Django view (not DRF's csrf-exempt ones): CsrfViewMiddleware guards it."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("api/v1/test-crash", CrashingApiView.as_view()),
    path("api/v1/test-crash-plain", crashing_plain_view),
    path("api/v1/test-forbidden", forbidden_page),
    path("api/v1/test-plain-post", plain_post),
    path("api/v1/test-missing", missing_thing),
    path("test-crash-page/", crashing_plain_view),
    path("test-forbidden-page/", forbidden_page),
    *real_urlpatterns,
]

__all__ = ["handler403", "handler404", "handler500", "urlpatterns"]
