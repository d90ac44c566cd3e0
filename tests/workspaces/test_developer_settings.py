"""Sign-in, the developer settings page, the create_api_token command and the admin revoke
action."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib import messages
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.problem_asserts import assert_problem
from workspaces.models import ApiToken, User
from workspaces.web_session import SESSION_AUTHENTICATED_AT

pytestmark = pytest.mark.django_db

PAGE = "/settings/developer/"
PASSWORD = "correct horse battery"
TOKEN_RE = re.compile(r"hrld_[0-9a-f]{8}_[A-Za-z0-9_\-]{43}")


def secret_of(full: str) -> str:
    """The secret part of ``hrld_<id>_<secret>`` (the secret itself may contain ``_``)."""
    return full.split("_", 2)[2]


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def csrf_client() -> Client:
    return Client(enforce_csrf_checks=True)


def csrf_token(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode())
    assert match
    return match.group(1)


def sign_in(client: Client, email: str, password: str = PASSWORD) -> Any:
    token = csrf_token(client, "/login/")
    return client.post(
        "/login/", {"username": email, "password": password, "csrfmiddlewaretoken": token}
    )


@pytest.fixture
def browser(user: User) -> Client:
    client = csrf_client()
    assert sign_in(client, user.email).status_code == 302
    return client


def post_form(client: Client, data: dict[str, Any]) -> Any:
    return client.post(PAGE, {**data, "csrfmiddlewaretoken": csrf_token(client, PAGE)})


# --- Sign-in --------------------------------------------------------------------------------


def test_page_needs_login() -> None:
    response = Client().get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert "next=/settings/developer/" in response["Location"]


def test_sign_in_records_the_authentication_time(user: User) -> None:
    client = csrf_client()
    before = timezone.now().timestamp()
    response = sign_in(client, user.email)
    assert response.status_code == 302
    assert response["Location"] == PAGE
    assert before <= client.session[SESSION_AUTHENTICATED_AT] <= timezone.now().timestamp()


def test_failed_sign_in_starts_no_session(user: User) -> None:
    client = csrf_client()
    response = sign_in(client, user.email, "wrong password")
    assert response.status_code == 200
    assert SESSION_AUTHENTICATED_AT not in client.session
    assert client.get(PAGE).status_code == 302


@time_machine.travel("2030-01-01 12:00:05+00:00", tick=False)
def test_failed_sign_ins_spend_the_password_budget_of_the_account(
    user: User, settings: Any
) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    client = csrf_client()
    assert sign_in(client, user.email, "wrong").status_code == 200
    assert sign_in(client, user.email, "wrong").status_code == 200
    response = sign_in(client, user.email)  # even the right password
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert client.get(PAGE).status_code == 302
    # Bad bearer tokens have their own budget: wrong passwords spend none of it.
    api = APIClient(REMOTE_ADDR="127.0.0.1")
    response = api.get("/api/v1/me", HTTP_AUTHORIZATION="Bearer " + "hrld_00000000_" + "A" * 43)
    assert_problem(response, 401, "not_authenticated")


def test_sign_in_needs_csrf(user: User) -> None:
    response = csrf_client().post("/login/", {"username": user.email, "password": PASSWORD})
    assert response.status_code == 403


def test_signed_in_session_can_call_the_api(browser: Client) -> None:
    assert browser.get("/api/v1/me").status_code == 200


def test_sign_out(browser: Client) -> None:
    token = csrf_token(browser, PAGE)
    assert browser.post("/logout/", {"csrfmiddlewaretoken": token}).status_code == 302
    assert browser.get(PAGE).status_code == 302


# --- The page -------------------------------------------------------------------------------


def test_page_creates_a_token_shown_once(browser: Client, user: User, workspace: Any) -> None:
    created = post_form(
        browser,
        {
            "action": "create",
            "name": "laptop",
            "can_write": "on",
            "workspace": str(workspace.pk),
            "expires_in_days": "30",
        },
    )
    assert created.status_code == 303  # post/redirect/get
    assert created["Location"] == PAGE
    assert not TOKEN_RE.search(created.content.decode())
    response = browser.get(PAGE)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    shown = TOKEN_RE.findall(response.content.decode())
    assert len(set(shown)) == 1
    full = shown[0]

    token = ApiToken.objects.get(user=user)
    assert token.name == "laptop"
    assert token.permissions == ["api:read", "api:write"]
    assert token.workspace_id == workspace.pk
    assert token.expires_at is not None
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)

    again = browser.get(PAGE).content.decode()
    assert not TOKEN_RE.search(again)
    assert secret_of(full) not in again
    assert f"hrld_{token.pk}_" in again
    assert "laptop" in again

    assert bearer(full).get(f"/api/v1/workspaces/{workspace.pk}").status_code == 200


def test_page_tokens_are_read_only_unless_writes_are_allowed(browser: Client, user: User) -> None:
    response = post_form(browser, {"action": "create", "name": "reader", "workspace": ""})
    assert response.status_code == 303
    full = TOKEN_RE.search(browser.get(PAGE).content.decode())
    assert full
    token = ApiToken.objects.get(user=user)
    assert token.permissions == ["api:read"]
    assert token.workspace_id is None
    assert token.expires_at is None
    client = bearer(full.group(0))
    assert client.get("/api/v1/me").status_code == 200
    response = client.post("/api/v1/organizations", {"name": "X"}, format="json")
    assert_problem(response, 403, "token_permission")


def test_invalid_form_creates_nothing(browser: Client) -> None:
    response = post_form(browser, {"action": "create", "name": "", "expires_in_days": "400"})
    assert response.status_code == 200
    assert not TOKEN_RE.search(response.content.decode())
    assert not ApiToken.objects.exists()


def test_page_refuses_a_token_name_with_invisible_characters(browser: Client) -> None:
    response = post_form(browser, {"action": "create", "name": "lap\u202etop"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "U+202E" in page
    assert 'aria-invalid="true"' in page  # the error is the name field's
    assert not TOKEN_RE.search(page)
    assert not ApiToken.objects.exists()


def test_page_lists_only_my_tokens(
    browser: Client, user: User, make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    mine = make_token(user)
    theirs = make_token(make_user())
    page = browser.get(PAGE).content.decode()
    assert f"hrld_{mine.split('_')[1]}_" in page
    assert f"hrld_{theirs.split('_')[1]}_" not in page
    assert mine not in page


def test_page_revokes_a_token(browser: Client, user: User, make_token: Callable[..., str]) -> None:
    full = make_token(user)
    token = ApiToken.objects.get()
    response = post_form(browser, {"action": "revoke", "token_id": token.pk})
    assert response.status_code == 303
    assert "Token revoked." in browser.get(PAGE).content.decode()
    token.refresh_from_db()
    assert token.status == "revoked"
    assert_problem(bearer(full).get("/api/v1/me"), 401, "not_authenticated")


def test_page_cannot_revoke_someone_elses_token(
    browser: Client, make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    full = make_token(make_user())
    token = ApiToken.objects.get()
    post_form(browser, {"action": "revoke", "token_id": token.pk})
    token.refresh_from_db()
    assert token.revoked_at is None
    assert bearer(full).get("/api/v1/me").status_code == 200


def test_page_follows_post_redirect_get(browser: Client, user: User) -> None:
    """Creating answers 303; the next GET shows the secret once; reloading neither creates a
    second token nor shows the secret again; the secret does not stay in the session."""
    created = post_form(browser, {"action": "create", "name": "ci", "workspace": ""})
    assert created.status_code == 303
    assert ApiToken.objects.filter(user=user).count() == 1
    first = browser.get(PAGE)
    shown = set(TOKEN_RE.findall(first.content.decode()))
    assert len(shown) == 1
    full = shown.pop()
    assert full.split("_")[1] == str(ApiToken.objects.get(user=user).pk)
    assert not any(full in str(value) for value in browser.session.values())
    reloaded = browser.get(PAGE)
    assert reloaded.status_code == 200
    assert not TOKEN_RE.search(reloaded.content.decode())
    assert secret_of(full) not in reloaded.content.decode()
    assert ApiToken.objects.filter(user=user).count() == 1


def test_admin_messages_do_not_show_on_the_page(
    make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    """The admin's flash message ("… revoked") is not shown on the developer settings page when
    the admin's redirect is not followed (the messages list is this page's own)."""
    root = make_user("root@example.com", is_staff=True, is_superuser=True)
    full = make_token(root)
    client = Client()
    client.force_login(root)
    response = client.post(
        "/admin/workspaces/apitoken/",
        {"action": "revoke_tokens", "_selected_action": [full.split("_")[1]]},
    )
    assert response.status_code == 302
    stored = [str(m) for m in messages.get_messages(response.wsgi_request)]  # the admin wrote one
    assert stored
    page = client.get(PAGE).content.decode()
    for text in stored:
        assert text not in page
    assert 'class="ok"' not in page
    assert 'class="error"' not in page
    # Consumed, not deferred: the admin's next page does not show it either (the page read it).
    later = client.get("/admin/workspaces/apitoken/").content.decode()
    assert all(text not in later for text in stored)


def test_page_post_needs_csrf(browser: Client) -> None:
    response = browser.post(PAGE, {"action": "create", "name": "x"})
    assert response.status_code == 403
    assert not ApiToken.objects.exists()


# --- create_api_token -----------------------------------------------------------------------


def run_create(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=err)
    assert not TOKEN_RE.search(err.getvalue())
    return out.getvalue().strip()


def test_command_prints_a_working_token(user: User, workspace: Any) -> None:
    full = run_create("--user", "OWNER@example.com")
    assert TOKEN_RE.fullmatch(full)
    client = bearer(full)
    assert client.get("/api/v1/me").json()["user"]["email"] == user.email
    assert client.post("/api/v1/organizations", {"name": "Ops"}, format="json").status_code == 201


def test_command_options(user: User, workspace: Any) -> None:
    full = run_create(
        "--user",
        user.email,
        "--workspace",
        str(workspace.pk),
        "--permission",
        "api:read",
        "--expires-in-days",
        "7",
        "--name",
        "ci",
    )
    token = ApiToken.objects.get(pk=full.split("_")[1])
    assert (token.name, token.permissions, token.workspace_id) == ("ci", ["api:read"], workspace.pk)
    assert token.expires_at is not None
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    response = bearer(full).post("/api/v1/organizations", {"name": "X"}, format="json")
    assert_problem(response, 403, "token_permission")


@pytest.mark.parametrize(
    "args",
    [
        ("--user", "nobody@example.com"),
        ("--user", "owner@example.com", "--expires-in-days", "366"),
        ("--user", "owner@example.com", "--expires-in-days", "0"),
        ("--user", "owner@example.com", "--workspace", "00000000-0000-4000-8000-000000000000"),
    ],
)
def test_command_refuses_bad_input(user: User, args: tuple[str, ...]) -> None:
    with pytest.raises(CommandError):
        run_create(*args)
    assert not ApiToken.objects.exists()


def test_command_refuses_a_name_with_invisible_characters(user: User) -> None:
    with pytest.raises(CommandError, match="U\\+200B"):
        run_create("--user", user.email, "--name", "c\u200bi")
    assert not ApiToken.objects.exists()


# --- Django admin ---------------------------------------------------------------------------


def test_admin_revoke_action(
    make_user: Callable[..., User], user: User, make_token: Callable[..., str]
) -> None:
    first, second, untouched = make_token(user), make_token(user), make_token(user)
    admin = Client()
    admin.force_login(make_user("root@example.com", is_staff=True, is_superuser=True))
    selected = [first.split("_")[1], second.split("_")[1]]
    response = admin.post(
        "/admin/workspaces/apitoken/",
        {"action": "revoke_tokens", "_selected_action": selected},
    )
    assert response.status_code == 302
    assert set(
        ApiToken.objects.filter(revoked_at__isnull=False).values_list("pk", flat=True)
    ) == set(selected)
    assert_problem(bearer(first).get("/api/v1/me"), 401, "not_authenticated")
    assert_problem(bearer(second).get("/api/v1/me"), 401, "not_authenticated")
    assert bearer(untouched).get("/api/v1/me").status_code == 200


def test_admin_token_pages_never_show_a_secret(
    make_user: Callable[..., User], user: User, make_token: Callable[..., str]
) -> None:
    full = make_token(user)
    admin = Client()
    admin.force_login(make_user("root@example.com", is_staff=True, is_superuser=True))
    listing = admin.get("/admin/workspaces/apitoken/")
    detail = admin.get(f"/admin/workspaces/apitoken/{full.split('_')[1]}/change/")
    for response in (listing, detail):
        assert response.status_code == 200
        assert secret_of(full) not in response.content.decode()
