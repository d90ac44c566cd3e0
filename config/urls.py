"""URL layout (docs/decisions/0001-url-layout.md): API under /api/v1, docs under /docs/, admin, browser sign-in."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularSwaggerView

from config import error_pages, web
from config.api.openapi import OpenApiJsonView
from config.api.schema import json_schema_view
from config.health import LivenessView, ReadinessView

api_v1: list[URLPattern | URLResolver] = [
    path("health", LivenessView.as_view(), name="health"),
    path("ready", ReadinessView.as_view(), name="ready"),
    path("schemas/<str:name>.json", json_schema_view, name="json-schema"),
    path("", include("workspaces.api.urls")),
    path("", include("publishing.api.urls")),
    path("", include("readiness.api.urls")),
    path("", include("themes.api.urls")),
    path("", include("voice.api.urls")),
    path("", include("discovery.api.urls")),
    path("", include("reposts.api.urls")),
    path("", include("events.api.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("docs/openapi.json", OpenApiJsonView.as_view(), name="openapi"),
    # Herald's own page around Swagger UI: no inline script or style (config/security_headers.py).
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="openapi", template_name="herald/swagger_ui.html"),
        name="docs",
    ),
    path("docs/problems/", web.problem_index, name="problem-index"),
    path("docs/problems/<slug:code>", web.problem_type, name="problem-type"),
    path("feeds/", include("publishing.feed_urls")),  # public built-in feeds (provider "feed")
    path("media/", include("publishing.media_file_urls")),  # signed public media URLs
    path("connections/", include("publishing.web_urls")),  # where an OAuth connect ends
    path("admin/", admin.site.urls),
    # APPEND_SLASH is off (API paths have no trailing slash); these pages are typed by hand.
    *[
        path(name, RedirectView.as_view(url=f"/{name}/", permanent=True, query_string=True))
        for name in (
            "login",
            "admin",
            "docs",
            "logout",
            "settings",
            "settings/profile",
            "settings/password",
            "settings/developer",
            "password-reset",
        )
    ],
    # The browser session's pages (sign-in, sign-out, settings, invitations, password reset, the
    # home redirect) belong to workspaces, named by a dotted string: config imports no app.
    path("", include("workspaces.web_urls")),
]


# Browsers get Herald's HTML error pages; /api/ paths keep problem+json (config/error_pages.py).
handler403 = error_pages.permission_denied
handler404 = error_pages.page_not_found
handler500 = error_pages.server_error
