"""The Content-Security-Policy of every response (a middleware; Django 5.2 has none built in).

One strict policy: scripts, styles, fonts and fetches from Herald's own origin only, no inline
script or style anywhere (pages link static files: herald/herald.css, and the API docs start
Swagger UI from herald/swagger-init.js), images also as ``data:`` URIs (Swagger UI's icons), no
plugins, no ``<base>``, forms post only to Herald, and no framing. An injected ``<script>`` or
``onclick`` therefore does not run even if some text escaped escaping. A response that brings its
own policy (served media and theme assets: ``default-src 'none'; sandbox``) keeps it.

A small middleware rather than django-csp: the policy is one constant with no nonces, so a
dependency would add configuration without adding behaviour.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = POLICY
        return response
