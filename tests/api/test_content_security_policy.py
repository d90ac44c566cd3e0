"""Every HTML page sends a Content-Security-Policy that forbids inline script and inline style,
and no page needs either: no ``<script>`` without ``src`` (JSON data blocks aside), no
``<style>``, no ``style=`` or ``on…=`` attribute, no ``javascript:`` link. Covers the sign-in,
password, settings and invitation pages, the API docs, the error pages and the Django admin.
That the pages then render without a single violation in a real browser is checked by
tests/api/test_pages_in_browser.py.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client

from config.security_headers import ContentSecurityPolicyMiddleware
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db

DATA_BLOCKS = {"application/json", "application/ld+json"}


class InlineCode(HTMLParser):
    """What a page would need ``'unsafe-inline'`` for."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name.lower(): value or "" for name, value in attrs}
        is_code = attributes.get("type", "").lower() not in DATA_BLOCKS
        if tag == "script" and not attributes.get("src") and is_code:
            self.found.append(f"inline <script {attributes}>")
        if tag == "style":
            self.found.append("<style> element")
        for name, value in attributes.items():
            if name == "style":
                self.found.append(f"style attribute on <{tag}>: {value!r}")
            if name.startswith("on"):
                self.found.append(f"{name} handler on <{tag}>")
            if name in ("href", "src", "action") and value.strip().lower().startswith(
                "javascript:"
            ):
                self.found.append(f"javascript: URL on <{tag}>")


def directives(header: str) -> dict[str, list[str]]:
    parsed = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


def assert_strict_page(client: Client, path: str, status: int = 200) -> None:
    response = client.get(path)
    assert response.status_code == status, path
    assert response["Content-Type"].startswith("text/html"), path
    policy = directives(response.get("Content-Security-Policy", ""))
    for directive in ("script-src", "style-src"):
        assert policy.get(directive) == ["'self'"], (path, directive, policy)
    assert policy.get("object-src") == ["'none'"], path
    assert policy.get("base-uri") == ["'none'"], path
    assert policy.get("frame-ancestors") == ["'none'"], path
    assert not InlineCode(response.content.decode()).found, (
        path,
        InlineCode(response.content.decode()).found,
    )


@pytest.fixture
def crash_urls(settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.crash_urls"
    settings.DEBUG = False


def test_signed_out_pages_and_error_pages(crash_urls: None) -> None:
    client = Client(raise_request_exception=False)
    for path in ("/login/", "/password-reset/", "/docs/", "/docs/problems/"):
        assert_strict_page(client, path)
    assert_strict_page(client, "/docs/problems/not_found")
    assert_strict_page(client, "/no-such-page/", 404)
    assert_strict_page(client, "/test-forbidden-page/", 403)
    assert_strict_page(client, "/test-crash-page/", 500)


def test_csrf_failure_page() -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": "someone@example.com", "password": "x"})
    assert response.status_code == 403
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert not InlineCode(response.content.decode()).found


def test_signed_in_pages(user: User, workspace: Any) -> None:
    from workspaces.services import invitation_create

    client = Client()
    client.force_login(user)
    for path in (
        "/settings/",
        "/settings/profile/",
        "/settings/password/",
        "/settings/developer/",
        "/logout/",
    ):
        assert_strict_page(client, path)
    _, raw = invitation_create(
        actor=Actor(user=user),
        workspace_id=workspace.pk,
        email="a.colleague@example.com",
        role="editor",
    )
    assert_strict_page(Client(), f"/invitations/{raw}/")


def test_admin_pages(make_user: Any) -> None:
    admin = make_user("root@example.com", is_staff=True, is_superuser=True)
    assert_strict_page(Client(), "/admin/login/")
    client = Client()
    client.force_login(admin)
    for path in (
        "/admin/",
        "/admin/workspaces/user/",
        "/admin/workspaces/user/add/",
        f"/admin/workspaces/user/{admin.pk}/change/",
        "/admin/workspaces/workspace/",
        "/admin/publishing/schedulerheartbeat/",
    ):
        assert_strict_page(client, path)


def test_served_files_keep_their_own_stricter_policy() -> None:
    """Media and theme assets bring a sandboxing policy of their own, which the page policy
    does not replace."""
    own = HttpResponse(b"x")
    own["Content-Security-Policy"] = "default-src 'none'; sandbox"
    middleware = ContentSecurityPolicyMiddleware(lambda request: own)
    assert middleware(HttpRequest())["Content-Security-Policy"] == "default-src 'none'; sandbox"
