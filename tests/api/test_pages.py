"""Pages a person meets, without a browser: the HTML error pages (problem+json stays for /api/),
the slash redirects, the sign-out confirmation on GET /logout/, and form errors tied to their
fields. The same pages in a real browser: tests/api/test_pages_in_browser.py."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from tests.crash_urls import SECRET_INTERNAL
from workspaces.models import User

PASSWORD = "correct horse battery"
PROBLEM = "application/problem+json"
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the text inside each element id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text_by_id: dict[str, str] = {}
        self._open: list[tuple[str, str | None]] = []  # (tag, id) of the elements we are in
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.tags.append((tag, attributes))
        if "id" in attributes:
            self.text_by_id.setdefault(attributes["id"], "")
        if tag not in VOID:
            self._open.append((tag, attributes.get("id")))

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        for _, element_id in self._open:
            if element_id:
                self.text_by_id[element_id] += data

    def find(self, tag: str, **attrs: str) -> dict[str, str]:
        for name, attributes in self.tags:
            if name == tag and all(attributes.get(k) == v for k, v in attrs.items()):
                return attributes
        raise AssertionError(f"no <{tag} {attrs}>")


def assert_error_tied(page: Elements, name: str, message: str) -> None:
    """The field ``name`` is marked invalid and described by an element saying ``message``."""
    field = page.find("input", name=name)
    assert field.get("aria-invalid") == "true", field
    described_by = field.get("aria-describedby", "").split()
    assert described_by, field
    assert all(element_id in page.text_by_id for element_id in described_by), described_by
    assert any(message in page.text_by_id[element_id] for element_id in described_by)


@pytest.fixture
def crash_urls(settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.crash_urls"
    settings.DEBUG = False


@pytest.fixture
def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- Error pages ----------------------------------------------------------------------------


def assert_html_page(response: Any, status: int, heading: str) -> str:
    assert response.status_code == status
    assert response["Content-Type"] == "text/html; charset=utf-8"
    text = response.content.decode()
    assert f"<h2>{heading}</h2>" in text
    assert "/static/herald/herald.css" in text
    assert "<header>" in text
    assert SECRET_INTERNAL not in text
    return text


@pytest.mark.django_db
def test_unknown_page_is_an_html_404(crash_urls: None) -> None:
    assert_html_page(Client().get("/no-such-page/"), 404, "Page not found")


@pytest.mark.django_db
def test_refused_page_is_an_html_403(crash_urls: None) -> None:
    assert_html_page(Client().get("/test-forbidden-page/"), 403, "Access denied")


@pytest.mark.django_db
def test_crashing_page_is_an_html_500(crash_urls: None) -> None:
    response = Client(raise_request_exception=False).get("/test-crash-page/")
    assert_html_page(response, 500, "Something went wrong")


@pytest.mark.django_db
def test_form_without_csrf_token_is_an_html_403(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": user.email, "password": PASSWORD})
    assert_html_page(response, 403, "This form has expired")
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/v1/no-such-thing", 404, "not_found"),
        ("/api/v1/test-forbidden", 403, "permission_denied"),
        ("/api/v1/test-missing", 404, "not_found"),  # Http404 from a plain view: not a crash
        ("/api/v1/test-crash-plain", 500, "internal_error"),
    ],
)
def test_api_paths_keep_problem_json(crash_urls: None, path: str, status: int, code: str) -> None:
    response = Client(raise_request_exception=False).get(path)
    assert response.status_code == status
    assert response["Content-Type"] == PROBLEM
    assert response.json()["code"] == code
    assert SECRET_INTERNAL not in response.content.decode()


@pytest.mark.django_db
def test_csrf_failure_under_api_is_problem_json(crash_urls: None) -> None:
    response = Client(enforce_csrf_checks=True).post("/api/v1/test-plain-post")
    assert response.status_code == 403
    assert response["Content-Type"] == PROBLEM
    assert response.json()["code"] == "csrf_failed"
    assert "CSRF" in response.json()["detail"]


# --- Redirects to the slash form ------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/login",
        "/admin",
        "/docs",
        "/logout",
        "/settings",
        "/settings/profile",
        "/settings/password",
        "/settings/developer",
        "/password-reset",
    ],
)
def test_pages_without_the_trailing_slash_redirect(path: str) -> None:
    response = Client().get(path, {"next": "/settings/developer/"})
    assert response.status_code == 301
    assert response["Location"] == f"{path}/?next=%2Fsettings%2Fdeveloper%2F"


def test_api_paths_do_not_gain_a_slash() -> None:
    response = Client().get("/api/v1/me/")
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM


# --- Sign-out -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_get_logout_asks_to_confirm_and_keeps_the_session(signed_in: Client, user: User) -> None:
    response = signed_in.get("/logout/")
    assert response.status_code == 200
    page = Elements(response.content.decode())
    forms = [
        attrs for tag, attrs in page.tags if tag == "form" and attrs.get("action") == "/logout/"
    ]
    assert forms
    assert all(form["method"] == "post" for form in forms)
    assert "<h2>Sign out</h2>" in response.content.decode()
    assert user.email in response.content.decode()
    assert signed_in.get("/settings/developer/").status_code == 200  # still signed in


@pytest.mark.django_db
def test_the_confirmation_form_signs_out(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = Elements(client.get("/logout/").content.decode())
    token = page.find("input", name="csrfmiddlewaretoken")["value"]
    response = client.post("/logout/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert client.get("/settings/developer/").status_code == 302


@pytest.mark.django_db
def test_get_logout_when_signed_out_offers_sign_in() -> None:
    response = Client().get("/logout/")
    assert response.status_code == 200
    assert 'href="/login/"' in response.content.decode()


# --- Form errors tied to their fields -------------------------------------------------------


@pytest.mark.django_db
def test_sign_in_error_is_tied_to_the_fields(user: User) -> None:
    response = Client().post("/login/", {"username": user.email, "password": "wrong"})
    assert response.status_code == 200
    page = Elements(response.content.decode())
    for name in ("username", "password"):
        assert_error_tied(page, name, "didn't match")
    assert page.find("input", name="username")["value"] == user.email  # kept for a retry


@pytest.mark.django_db
def test_sign_in_page_without_errors_has_no_error_attributes() -> None:
    page = Elements(Client().get("/login/").content.decode())
    field = page.find("input", name="username")
    assert "aria-invalid" not in field
    assert "aria-describedby" not in field


@pytest.mark.django_db
def test_developer_settings_errors_are_tied_to_their_fields(signed_in: Client) -> None:
    response = signed_in.post(
        "/settings/developer/", {"action": "create", "name": "", "expires_in_days": "999"}
    )
    assert response.status_code == 200
    page = Elements(response.content.decode())
    assert_error_tied(page, "name", "This field is required.")
    assert_error_tied(page, "expires_in_days", "less than or equal to 365")


def assert_every_error_is_tied(html: str) -> int:
    """Every field error list (``ul.errorlist`` with an id, not the form-wide ``nonfield`` one)
    describes an input, select or textarea marked ``aria-invalid="true"``; and every field so
    marked is described by an element that exists. Returns how many errors were checked."""
    page = Elements(html)
    fields = [attrs for tag, attrs in page.tags if tag in {"input", "select", "textarea"}]
    error_lists = [
        attrs
        for tag, attrs in page.tags
        if tag == "ul"
        and "errorlist" in attrs.get("class", "").split()
        and "nonfield" not in attrs.get("class", "").split()
    ]
    for error_list in error_lists:
        assert error_list.get("id"), f"error list without an id: {error_list}"
        described = [
            field
            for field in fields
            if error_list["id"] in field.get("aria-describedby", "").split()
        ]
        assert len(described) == 1, f"{error_list['id']} describes {described}"
        assert described[0].get("aria-invalid") == "true", described[0]
    for field in fields:
        if field.get("aria-invalid") == "true":
            ids = field.get("aria-describedby", "").split()
            assert ids, field
            assert all(element_id in page.text_by_id for element_id in ids), field
    return len(error_lists)


@pytest.mark.django_db
def test_errors_are_tied_to_fields_on_the_people_pages(
    signed_in: Client, user: User, workspace: Any
) -> None:
    from workspaces.access import Actor
    from workspaces.services import invitation_create

    _, raw = invitation_create(
        actor=Actor(user=user), workspace_id=workspace.pk, email="new@example.com", role="editor"
    )
    pages = {
        "/settings/developer/": (signed_in, {"action": "create"}),
        "/settings/password/": (signed_in, {"old_password": "wrong"}),
        "/settings/profile/": (signed_in, {"name": "x" * 500}),
        "/password-reset/": (Client(), {"email": "not an address"}),
        f"/invitations/{raw}/": (Client(), {"password1": "x"}),
    }
    for path, (client, data) in pages.items():
        response = client.post(path, data)
        assert response.status_code in {200, 400, 422}, (path, response.status_code)
        assert assert_every_error_is_tied(response.content.decode()) > 0, path
