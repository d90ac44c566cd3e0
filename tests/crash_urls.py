"""Test-only URLconf: the real URLs plus views that crash, to exercise the 500 problem."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.urls import handler404, handler500
from config.urls import urlpatterns as real_urlpatterns

SECRET_INTERNAL = "database password is hunter2 at /srv/herald/internal.py"


class CrashingApiView(APIView):
    authentication_classes = ()
    permission_classes = (AllowAny,)

    def get(self, request: Request) -> Response:
        raise RuntimeError(SECRET_INTERNAL)


def crashing_plain_view(request: HttpRequest) -> HttpResponse:
    raise KeyError(SECRET_INTERNAL)


urlpatterns = [
    path("api/v1/test-crash", CrashingApiView.as_view()),
    path("api/v1/test-crash-plain", crashing_plain_view),
    *real_urlpatterns,
]

__all__ = ["handler404", "handler500", "urlpatterns"]
