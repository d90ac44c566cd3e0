"""People join and manage themselves: the invitation page for people
with or without an account, the invitation e-mail, /settings/ (profile, password) and the
password reset by e-mail. Browser pages through Django's test client with CSRF enforced."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.core import mail
from django.test import Client, TestCase
from django.utils import timezone
from rest_framework.test import APIClient

from config.email_url import parse_email_url
from config.env import ImproperlyConfiguredEnv
from workspaces import services
from workspaces.access import Actor
from workspaces.models import AccessAuditEvent, Invitation, User, WorkspaceMembership
from workspaces.web_session import SESSION_AUTHENTICATED_AT

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase 42"
INVITEE = "new.person@example.com"


def csrf_of(response: Any) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode())
    assert match, response.content.decode()[:500]
    return match.group(1)


def get_then_post(client: Client, path: str, data: dict[str, Any]) -> Any:
    """A browser: GET the page (CSRF cookie and token), then POST its form."""
    page = client.get(path)
    assert page.status_code == 200, page.status_code
    return client.post(path, {**data, "csrfmiddlewaretoken": csrf_of(page)})


def signed_in(user: User) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


LINK = re.compile(r"https?://[^/\s]+/invitations/([A-Za-z0-9_\-]+)/")


def invite(
    owner_client: APIClient, workspace: Any, email: str = INVITEE, role: str = "editor"
) -> Any:
    """Invite through the API. With e-mail (the tests' default) the answer carries no link: it
    is read from the invitee's mailbox, as the invitee would, into ``accept_url`` and
    ``accept_token`` of the returned body (the API's own answer is checked where it matters)."""
    before = len(mail.outbox)
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = owner_client.post(
            f"/api/v1/workspaces/{workspace.pk}/invitations",
            {"email": email, "role": role},
            format="json",
        )
    assert response.status_code == 201, response.content
    body = response.json()
    if body["delivery"] == "email":
        assert "accept_url" not in body
        assert "accept_token" not in body
        [message] = mail.outbox[before:]
        match = LINK.search(message.body)
        assert match, message.body
        body["accept_url"], body["accept_token"] = match.group(0), match.group(1)
    return body


def page_path(body: dict[str, Any]) -> str:
    return "/invitations/" + str(body["accept_token"]) + "/"


# --- accept_url and the invitation e-mail --------------------------------------------------


def test_create_and_resend_email_the_link_and_never_answer_it(
    owner_client: APIClient,
    workspace: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The instance sends e-mail: the link goes to the invitee's mailbox alone; the inviter's
    answer says so (delivery email) and carries neither the token nor the link."""
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            f"/api/v1/workspaces/{workspace.pk}/invitations",
            {"email": INVITEE, "role": "editor"},
            format="json",
        )
    body = response.json()
    assert response.status_code == 201
    assert body["delivery"] == "email"
    assert "accept_token" not in body
    assert "accept_url" not in body
    [message] = mail.outbox
    assert message.to == [INVITEE]
    first = LINK.search(message.body)
    assert first
    assert first.group(0).startswith("http://testserver/invitations/")
    assert first.group(1) not in response.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        resent = owner_client.post(f"/api/v1/invitations/{body['id']}/resend")
    assert resent.status_code == 200
    again = resent.json()
    assert again["delivery"] == "email"
    assert "accept_token" not in again
    assert "accept_url" not in again
    second = LINK.search(mail.outbox[1].body)
    assert second
    assert second.group(1) != first.group(1)
    assert second.group(1) not in resent.content.decode()


def test_without_email_the_answer_carries_the_link_to_pass_on(
    owner_client: APIClient,
    workspace: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.HERALD_EMAIL_ENABLED = False
    with django_capture_on_commit_callbacks(execute=True):
        body = invite(owner_client, workspace)
    assert body["delivery"] == "manual"
    assert body["accept_url"] == f"http://testserver/invitations/{body['accept_token']}/"
    assert mail.outbox == []
    assert Invitation.objects.get(pk=body["id"]).delivery == "manual"
    resent = owner_client.post(f"/api/v1/invitations/{body['id']}/resend").json()
    assert resent["delivery"] == "manual"
    assert resent["accept_url"] == f"http://testserver/invitations/{resent['accept_token']}/"
    assert resent["accept_token"] != body["accept_token"]


def test_accept_url_uses_the_public_url(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_PUBLIC_URL = "https://herald.example.org"
    body = invite(owner_client, workspace)
    assert body["accept_url"] == (f"https://herald.example.org/invitations/{body['accept_token']}/")
    settings.HERALD_EMAIL_ENABLED = False
    body = invite(owner_client, workspace, email="other@example.com")
    assert body["accept_url"] == (f"https://herald.example.org/invitations/{body['accept_token']}/")


def test_email_failure_is_logged_without_the_token_and_not_fatal(
    owner_client: APIClient,
    workspace: Any,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # A real SMTP backend pointed at a closed port: the connection is refused.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(
            f"/api/v1/workspaces/{workspace.pk}/invitations",
            {"email": INVITEE, "role": "editor"},
            format="json",
        )
    assert response.status_code == 201
    body = response.json()
    warnings = [r for r in caplog.records if r.name == "workspaces.mail"]
    assert warnings, caplog.text
    assert "/invitations/" not in caplog.text
    assert Invitation.objects.filter(pk=body["id"], status="pending").exists()


# --- The invitation page ---------------------------------------------------------------------


def test_invitation_page_shows_the_expiry_as_the_email_does(
    owner_client: APIClient, workspace: Any
) -> None:
    """One sentence, one final full stop: "valid until 9 December 2026, 09:27 UTC." (Django's
    default date format ended it "9:27 a.m..")."""
    with time_machine.travel("2026-11-25 09:27:00+00:00", tick=False):
        body = invite(owner_client, workspace)
        text = Client().get(page_path(body)).content.decode()
    assert "The invitation is valid until 9 December 2026, 09:27 UTC." in text
    assert ".." not in text


def test_signed_out_newcomer_creates_an_account_and_joins(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    body = invite(owner_client, workspace, email="New.Person@Example.com", role="viewer")
    path = page_path(body)
    client = Client(enforce_csrf_checks=True)
    page = client.get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Main" in text
    assert "owner@example.com" in text
    assert "viewer" in text
    assert "Choose a password" in text

    response = client.post(
        path,
        {
            "name": "New Person",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "csrfmiddlewaretoken": csrf_of(page),
        },
    )
    assert response.status_code == 303
    assert response["Location"] == "/settings/"

    created = User.objects.get(email__iexact=INVITEE)
    assert created.email == INVITEE  # exactly the invited address (stored lower-case)
    assert created.name == "New Person"
    assert created.check_password(NEW_PASSWORD)
    membership = WorkspaceMembership.objects.get(workspace=workspace, user=created)
    assert (membership.role, membership.status) == ("viewer", "active")
    invitation = Invitation.objects.get(pk=body["id"])
    assert (invitation.status, invitation.accepted_by_id) == ("accepted", created.pk)
    event = AccessAuditEvent.objects.get(
        workspace_id=workspace.pk, action=AccessAuditEvent.Action.INVITATION_ACCEPTED
    )
    assert (event.actor_user_id, event.subject_user_id) == (str(created.pk), str(created.pk))
    assert (event.role, event.status, event.invitation_id) == ("viewer", "active", body["id"])

    settings_page = client.get("/settings/")
    assert settings_page.status_code == 200  # signed in
    assert settings_page.wsgi_request.user == created
    assert SESSION_AUTHENTICATED_AT in client.session
    assert "You joined Main as viewer." in settings_page.content.decode()

    used = client.get(path)  # the link is spent
    assert used.status_code == 410
    assert "already been used" in used.content.decode()


def test_sign_up_form_errors_are_tied_to_their_fields(
    owner_client: APIClient, workspace: Any
) -> None:
    path = page_path(invite(owner_client, workspace))
    response = get_then_post(
        Client(enforce_csrf_checks=True),
        path,
        {"name": "", "password1": "short", "password2": "different"},
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert 'id="id_password2_error"' in text
    assert re.search(r'<input[^>]+name="password2"[^>]+aria-describedby="id_password2_error"', text)
    assert not User.objects.filter(email=INVITEE).exists()

    response = get_then_post(
        Client(enforce_csrf_checks=True), path, {"password1": "short", "password2": "short"}
    )
    text = response.content.decode()
    assert 'id="id_password1_error"' in text
    assert re.search(
        r'<input[^>]+name="password1"[^>]+aria-describedby="id_password1_helptext id_password1_error"',
        text,
    )
    assert not User.objects.filter(email=INVITEE).exists()
    assert Invitation.objects.get().status == "pending"


def test_sign_up_post_needs_csrf(owner_client: APIClient, workspace: Any) -> None:
    path = page_path(invite(owner_client, workspace))
    client = Client(enforce_csrf_checks=True)
    response = client.post(path, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 403
    assert not User.objects.filter(email=INVITEE).exists()


def test_signed_out_existing_user_signs_in_through_the_page(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User], settings: Any
) -> None:
    """A link passed on by hand (no e-mail) proves no mailbox: posting a password for an
    existing account changes nothing; signing in through the page's link accepts."""
    settings.HERALD_EMAIL_ENABLED = False
    existing = make_user(INVITEE)
    path = page_path(invite(owner_client, workspace))
    client = Client(enforce_csrf_checks=True)
    page = client.get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert f'href="/login/?next={path.replace("/", "%2F")}"' in text
    response = client.post(
        path,
        {
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "csrfmiddlewaretoken": csrf_of(page),
        },
    )
    assert response.status_code == 200
    assert "No account was created" in response.content.decode()
    existing.refresh_from_db()
    assert existing.check_password(PASSWORD)
    assert not WorkspaceMembership.objects.filter(user=existing).exists()

    # Signing in through the link's next= comes back to the page, now one "Accept" button.
    login = client.get(f"/login/?next={path}")
    signed = client.post(
        "/login/",
        {
            "username": INVITEE,
            "password": PASSWORD,
            "next": path,
            "csrfmiddlewaretoken": csrf_of(login),
        },
    )
    assert signed.status_code == 302
    assert signed["Location"] == path


def test_signed_in_invitee_accepts_with_one_button(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    invitee = make_user(INVITEE)
    body = invite(owner_client, workspace, role="admin")
    path = page_path(body)
    client = signed_in(invitee)
    page = client.get(path)
    assert page.status_code == 200
    assert ">Accept</button>" in page.content.decode()
    assert "password1" not in page.content.decode()
    response = client.post(path, {"csrfmiddlewaretoken": csrf_of(page)})
    assert response.status_code == 303
    assert response["Location"] == "/settings/"
    membership = WorkspaceMembership.objects.get(workspace=workspace, user=invitee)
    assert (membership.role, membership.status) == ("admin", "active")
    assert AccessAuditEvent.objects.filter(
        action=AccessAuditEvent.Action.INVITATION_ACCEPTED, subject_user_id=str(invitee.pk)
    ).exists()


def test_signed_in_as_someone_else_is_told_so(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    other = make_user("someone.else@example.com")
    path = page_path(invite(owner_client, workspace))
    client = signed_in(other)
    page = client.get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert "someone.else@example.com" in text
    assert INVITEE in text
    assert 'action="/logout/"' in text
    assert "Sign out" in text
    assert ">Accept</button>" not in text
    response = client.post(path, {"csrfmiddlewaretoken": csrf_of(page)})
    assert response.status_code == 403
    assert not WorkspaceMembership.objects.filter(user=other, workspace=workspace).exists()
    assert Invitation.objects.get().status == "pending"


def test_unknown_revoked_and_expired_links(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    unknown = Client().get("/invitations/not-a-real-token/")
    assert unknown.status_code == 404
    assert "not valid" in unknown.content.decode()

    revoked = invite(owner_client, workspace, email="revoked@example.com")
    services.invitation_revoke(actor=Actor(user=user), invitation_id=revoked["id"])
    response = Client().get(page_path(revoked))
    assert response.status_code == 410
    assert "withdrawn" in response.content.decode()

    expiring = invite(owner_client, workspace, email="late@example.com")
    with time_machine.travel(timezone.now() + timedelta(days=15)):
        response = Client().get(page_path(expiring))
        assert response.status_code == 410
        assert "expired" in response.content.decode()
        page = Client(enforce_csrf_checks=True).get(page_path(revoked))
        assert page.status_code == 410
    assert not User.objects.filter(email__in=["revoked@example.com", "late@example.com"]).exists()


def test_not_found_log_line_does_not_carry_the_token(
    owner_client: APIClient, workspace: Any, user: User, caplog: pytest.LogCaptureFixture
) -> None:
    from config.logging import redact

    body = invite(owner_client, workspace)
    services.invitation_revoke(actor=Actor(user=user), invitation_id=body["id"])
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert Client().get(page_path(body)).status_code == 410
    lines = [redact(r.getMessage()) for r in caplog.records if r.name == "django.request"]
    assert lines
    assert all(body["accept_token"] not in line for line in lines)


# --- /settings/ ------------------------------------------------------------------------------


def test_settings_page_links_profile_password_and_developer(user: User) -> None:
    assert Client().get("/settings/")["Location"].startswith("/login/?next=/settings/")
    page = signed_in(user).get("/settings/").content.decode()
    for href in ("/settings/profile/", "/settings/password/", "/settings/developer/"):
        assert f'href="{href}"' in page
    assert user.email in page


def test_profile_edits_the_display_name(user: User) -> None:
    client = signed_in(user)
    response = get_then_post(client, "/settings/profile/", {"name": "Ada Lovelace"})
    assert response.status_code == 303
    assert response["Location"] == "/settings/"
    user.refresh_from_db()
    assert user.name == "Ada Lovelace"
    page = client.get("/settings/").content.decode()
    assert "Ada Lovelace" in page
    assert "Display name saved." in page
    too_long = get_then_post(client, "/settings/profile/", {"name": "x" * 151})
    assert too_long.status_code == 200
    assert re.search(r'<input[^>]+aria-describedby="id_name_error"', too_long.content.decode())


def change_password(client: Client, old: str) -> Any:
    return get_then_post(
        client,
        "/settings/password/",
        {"old_password": old, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )


def test_password_change(user: User) -> None:
    client = signed_in(user)
    response = change_password(client, PASSWORD)
    assert response.status_code == 303
    assert response["Location"] == "/settings/"
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    page = client.get("/settings/")
    assert page.status_code == 200  # still signed in
    assert "Password changed." in page.content.decode()


def test_wrong_old_password_counts_against_the_budget(user: User, settings: Any) -> None:
    settings.HERALD_AUTH_FAILURES_PER_MINUTE = 2
    client = signed_in(user)
    wrong = change_password(client, "not my password")
    assert wrong.status_code == 200
    text = wrong.content.decode()
    assert 'id="id_old_password_error"' in text
    assert re.search(
        r'<input[^>]+name="old_password"[^>]+aria-describedby="id_old_password_error"', text
    )
    assert change_password(client, "still not it").status_code == 200
    # The budget is spent: the right password is refused too, and the password is unchanged.
    refused = change_password(client, PASSWORD)
    assert refused.status_code == 429
    assert refused["Retry-After"]
    assert "Too many failed" in refused.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    # The same budget as the sign-in page (the address and the account), not bearer tokens'.
    assert (
        Client().post("/login/", {"username": user.email, "password": PASSWORD}).status_code == 429
    )
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION="Bearer hrld_00000000_nope")
    assert bearer.get("/api/v1/me").status_code == 401


# --- Password reset --------------------------------------------------------------------------


def test_password_reset_end_to_end(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    assert 'href="/password-reset/"' in client.get("/login/").content.decode()
    response = get_then_post(client, "/password-reset/", {"email": user.email})
    assert response.status_code == 302
    assert response["Location"] == "/password-reset/sent/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [user.email]
    link = re.search(r"http://testserver(/password-reset/[^/\s]+/[^/\s]+/)", message.body)
    assert link, message.body

    opened = client.get(link.group(1))
    assert opened.status_code == 302  # Django moves the token out of the URL
    form_path = opened["Location"]
    done = get_then_post(
        client, form_path, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert done.status_code == 302
    assert done["Location"] == "/password-reset/done/"
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)

    # The link is spent.
    again = Client().get(link.group(1), follow=True)
    assert "not valid" in again.content.decode()
    # And the new password signs in.
    browser = Client(enforce_csrf_checks=True)
    signed = get_then_post(browser, "/login/", {"username": user.email, "password": NEW_PASSWORD})
    assert signed.status_code == 302


def test_password_reset_never_reveals_whether_an_account_exists(user: User) -> None:
    known = get_then_post(
        Client(enforce_csrf_checks=True), "/password-reset/", {"email": user.email}
    )
    unknown = get_then_post(
        Client(enforce_csrf_checks=True), "/password-reset/", {"email": "nobody@example.com"}
    )
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"])
    assert [m.to for m in mail.outbox] == [[user.email]]


def test_password_reset_is_rate_limited_per_client_address(user: User, settings: Any) -> None:
    settings.HERALD_PASSWORD_RESETS_PER_HOUR = 2
    for _ in range(2):
        response = get_then_post(
            Client(enforce_csrf_checks=True), "/password-reset/", {"email": user.email}
        )
        assert response.status_code == 302
    limited = get_then_post(
        Client(enforce_csrf_checks=True), "/password-reset/", {"email": user.email}
    )
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert "Too many password reset requests" in limited.content.decode()
    assert len(mail.outbox) == 2
    # Another address has its own budget.
    other = Client(enforce_csrf_checks=True, REMOTE_ADDR="192.0.2.7")
    assert get_then_post(other, "/password-reset/", {"email": user.email}).status_code == 302


def test_password_reset_without_email(user: User, settings: Any) -> None:
    settings.HERALD_EMAIL_ENABLED = False
    client = Client(enforce_csrf_checks=True)
    page = client.get("/password-reset/")
    assert "does not send e-mail" in page.content.decode()
    token = csrf_of(client.get("/login/"))
    response = client.post("/password-reset/", {"email": user.email, "csrfmiddlewaretoken": token})
    assert response.status_code == 503
    assert mail.outbox == []


# --- HERALD_EMAIL_URL ------------------------------------------------------------------------


def test_email_url_parser() -> None:
    smtp = parse_email_url("smtp+tls://mailer%40example.com:p%40ss@mail.example.com:2525")
    assert smtp == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "mail.example.com",
        "EMAIL_PORT": 2525,
        "EMAIL_HOST_USER": "mailer@example.com",
        "EMAIL_HOST_PASSWORD": "p@ss",
        "EMAIL_USE_TLS": True,
        "EMAIL_USE_SSL": False,
        "EMAIL_TIMEOUT": 30.0,
    }
    assert parse_email_url("smtps://h")["EMAIL_PORT"] == 465
    assert parse_email_url("smtps://h")["EMAIL_USE_SSL"] is True
    assert parse_email_url("smtp://h?tls=1&timeout=5")["EMAIL_USE_TLS"] is True
    assert parse_email_url("smtp://h?timeout=5")["EMAIL_TIMEOUT"] == 5.0
    assert parse_email_url("smtp://h")["EMAIL_PORT"] == 25
    assert parse_email_url("console://") == {
        "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"
    }
    for bad in (
        "http://h",
        "smtp://",
        "smtp://h:notaport",
        "smtps://h?tls=1",
        "smtp://h?timeout=x",
    ):
        with pytest.raises(ImproperlyConfiguredEnv) as caught:
            parse_email_url(bad.replace("h", "u:secretpw@h", 1) if "://h" in bad else bad)
        assert "secretpw" not in str(caught.value)


_SETTINGS_PROBE = """
import json
from django.conf import settings
names = ["EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD",
         "EMAIL_USE_TLS", "EMAIL_USE_SSL", "HERALD_EMAIL_ENABLED", "DEFAULT_FROM_EMAIL"]
print(json.dumps({name: getattr(settings, name) for name in names}))
"""


def email_settings(tmp_path: Any, **env: str) -> dict[str, Any]:
    """config.settings read in a fresh interpreter with ``env`` (and nothing of the shell's
    e-mail configuration)."""
    import json
    import os
    import subprocess
    import sys

    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HERALD_", "EMAIL_", "DEFAULT_FROM")) and key != "SECRET_KEY"
    }
    base.update(DJANGO_SETTINGS_MODULE="config.settings", HERALD_DATA_DIR=str(tmp_path), **env)
    result = subprocess.run(
        [sys.executable, "-c", _SETTINGS_PROBE],
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return dict(json.loads(result.stdout))


def test_email_settings_follow_the_environment(tmp_path: Any) -> None:
    production = {"HERALD_ENVIRONMENT": "production", "SECRET_KEY": "x" * 50}
    smtp = email_settings(
        tmp_path,
        **production,
        HERALD_EMAIL_URL="smtp+tls://mailer:s%3Acret@mail.example.com:2525",
        HERALD_PUBLIC_URL="https://herald.example.com",
    )
    assert smtp["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (smtp["EMAIL_HOST"], smtp["EMAIL_PORT"]) == ("mail.example.com", 2525)
    assert (smtp["EMAIL_HOST_USER"], smtp["EMAIL_HOST_PASSWORD"]) == ("mailer", "s:cret")
    assert (smtp["EMAIL_USE_TLS"], smtp["EMAIL_USE_SSL"]) == (True, False)
    assert smtp["HERALD_EMAIL_ENABLED"] is True
    assert smtp["DEFAULT_FROM_EMAIL"] == "Herald <herald@herald.example.com>"

    unset = email_settings(tmp_path, **production, DEFAULT_FROM_EMAIL="ops@example.org")
    assert unset["EMAIL_BACKEND"] == "django.core.mail.backends.dummy.EmailBackend"
    assert unset["HERALD_EMAIL_ENABLED"] is False
    assert unset["DEFAULT_FROM_EMAIL"] == "ops@example.org"

    local = email_settings(tmp_path, HERALD_ENVIRONMENT="local")
    assert local["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"
    assert local["HERALD_EMAIL_ENABLED"] is True


def test_django_email_settings_from_the_environment(tmp_path: Any) -> None:
    """Without HERALD_EMAIL_URL, Django's own EMAIL_* variables configure the e-mail:
    the instance then sends invitations and password resets; HERALD_EMAIL_URL wins."""
    production = {"HERALD_ENVIRONMENT": "production", "SECRET_KEY": "x" * 50}
    password_file = tmp_path / "smtp-password"
    password_file.write_text("from a file\n", encoding="utf-8")
    smtp = email_settings(
        tmp_path,
        **production,
        EMAIL_HOST="mail.example.com",
        EMAIL_PORT="587",
        EMAIL_HOST_USER="mailer",
        EMAIL_HOST_PASSWORD_FILE=str(password_file),
        EMAIL_USE_TLS="true",
    )
    assert smtp["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (smtp["EMAIL_HOST"], smtp["EMAIL_PORT"]) == ("mail.example.com", 587)
    assert (smtp["EMAIL_HOST_USER"], smtp["EMAIL_HOST_PASSWORD"]) == ("mailer", "from a file")
    assert (smtp["EMAIL_USE_TLS"], smtp["EMAIL_USE_SSL"]) == (True, False)
    assert smtp["HERALD_EMAIL_ENABLED"] is True

    defaults = email_settings(tmp_path, **production, EMAIL_HOST="relay.internal")
    assert defaults["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (defaults["EMAIL_HOST"], defaults["EMAIL_PORT"]) == ("relay.internal", 25)
    assert defaults["HERALD_EMAIL_ENABLED"] is True

    backend = email_settings(
        tmp_path, **production, EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"
    )
    assert backend["EMAIL_BACKEND"] == "django.core.mail.backends.locmem.EmailBackend"
    assert backend["HERALD_EMAIL_ENABLED"] is True

    both = email_settings(
        tmp_path, **production, HERALD_EMAIL_URL="smtps://h.example.com", EMAIL_HOST="other"
    )
    assert (both["EMAIL_HOST"], both["EMAIL_PORT"]) == ("h.example.com", 465)

    local = email_settings(tmp_path, HERALD_ENVIRONMENT="local", EMAIL_HOST="mail.example.com")
    assert local["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"


def test_django_email_settings_refuse_tls_with_ssl(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "EMAIL_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        HERALD_DATA_DIR=str(tmp_path),
        EMAIL_HOST="mail.example.com",
        EMAIL_HOST_PASSWORD="never-printed",
        EMAIL_USE_TLS="true",
        EMAIL_USE_SSL="true",
    )
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.EMAIL_HOST"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "EMAIL_USE_TLS" in result.stderr
    assert "never-printed" not in result.stderr
