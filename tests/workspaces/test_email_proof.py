"""Nobody owns an e-mail address they have not proven.

The attack: an inviter who receives the invitee's link creates the account of ``victim@corp``,
mints an API token on it and keeps it after the real person resets the password; when the real
person later joins another organization, the squatter's token reads and writes there. Here: the
link reaches only the mailbox when the instance sends e-mail; an account made from a link passed
on by hand stays unverified; proving the mailbox (an e-mailed invitation, a verification link, a
password reset) ends every session and revokes every earlier token, audited; the invitation page
says the same whether or not the address has an account; display names follow the names rule and
are quoted in e-mails; invitations are limited per day.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core import mail
from django.test import Client, TestCase
from rest_framework.test import APIClient

from config.errors import FieldValidationError
from tests.openapi_support import served_contract
from tests.problem_asserts import assert_problem
from workspaces import services
from workspaces.access import Actor
from workspaces.models import AccessAuditEvent, ApiToken, User, WorkspaceMembership

pytestmark = pytest.mark.django_db

VICTIM = "victim@corp.example"
SQUATTER_PASSWORD = "squatter passphrase 1"
OWNER_PASSWORD = "the real owner's passphrase 2"
LINK = re.compile(r"http://testserver(/invitations/[A-Za-z0-9_\-]+/)")


def csrf_of(response: Any) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode())
    assert match, response.content.decode()[:500]
    return match.group(1)


def get_then_post(client: Client, path: str, data: dict[str, Any]) -> Any:
    page = client.get(path)
    assert page.status_code == 200, page.status_code
    return client.post(path, {**data, "csrfmiddlewaretoken": csrf_of(page)})


def api_invite(client: APIClient, workspace: Any, email: str = VICTIM) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(
            f"/api/v1/workspaces/{workspace.pk}/invitations",
            {"email": email, "role": "editor"},
            format="json",
        )


def mailed_link(email: str = VICTIM) -> str:
    messages = [m for m in mail.outbox if m.to == [email]]
    assert messages, [m.to for m in mail.outbox]
    match = LINK.search(messages[-1].body)
    assert match, messages[-1].body
    return match.group(1)


def sign_up(path: str, password: str, name: str = "") -> tuple[Client, Any]:
    browser = Client(enforce_csrf_checks=True)
    response = get_then_post(
        browser, path, {"name": name, "password1": password, "password2": password}
    )
    return browser, response


@pytest.fixture
def squatted(owner_client: APIClient, workspace: Any, settings: Any) -> tuple[User, str, Client]:
    """An instance that could not send e-mail handed the link to its inviter, who made the
    victim's account with it, minted a token and kept a browser session."""
    settings.HERALD_EMAIL_ENABLED = False
    body = api_invite(owner_client, workspace).json()
    assert body.get("delivery", "manual") == "manual"
    browser, response = sign_up(f"/invitations/{body['accept_token']}/", SQUATTER_PASSWORD)
    assert response.status_code == 303
    account = User.objects.get(email=VICTIM)
    _, token = services.api_token_create(
        user=account, name="squat", permissions=["api:read", "api:write"]
    )
    settings.HERALD_EMAIL_ENABLED = True
    return account, token, browser


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def proof_events(account: User) -> list[AccessAuditEvent]:
    return list(
        AccessAuditEvent.objects.filter(
            action="account.email_verified", subject_user_id=str(account.pk)
        )
    )


# --- Unverified, and what proving the mailbox ends ---------------------------------------------


def test_an_account_made_from_a_hand_delivered_link_is_unverified(
    squatted: tuple[User, str, Client],
) -> None:
    account, token, _ = squatted
    assert account.email_verified_at is None
    me = bearer(token).get("/api/v1/me").json()
    assert me["user"]["email_verified"] is False


def test_a_password_reset_revokes_the_squatters_token_and_sessions(
    squatted: tuple[User, str, Client],
) -> None:
    account, token, squatter_browser = squatted
    assert bearer(token).get("/api/v1/me").status_code == 200
    assert squatter_browser.get("/settings/").status_code == 200

    owner = Client(enforce_csrf_checks=True)
    get_then_post(owner, "/password-reset/", {"email": VICTIM})
    link = re.search(r"http://testserver(/password-reset/[^/\s]+/[^/\s]+/)", mail.outbox[-1].body)
    assert link
    form_path = owner.get(link.group(1))["Location"]
    done = get_then_post(
        owner, form_path, {"new_password1": OWNER_PASSWORD, "new_password2": OWNER_PASSWORD}
    )
    assert done["Location"] == "/password-reset/done/"
    assert "revoked" in owner.get("/password-reset/done/").content.decode()

    assert bearer(token).get("/api/v1/me").status_code == 401
    assert squatter_browser.get("/settings/").status_code == 302  # signed out
    account.refresh_from_db()
    assert account.email_verified_at is not None
    [event] = proof_events(account)
    assert (event.previous_status, event.status) == ("unverified", "verified")

    # Signed in again, the owner sees the tokens the account had (now revoked).
    browser = Client(enforce_csrf_checks=True)
    get_then_post(browser, "/login/", {"username": VICTIM, "password": OWNER_PASSWORD})
    page = browser.get("/settings/").content.decode()
    token_id = token.split("_")[1]
    assert f"hrld_{token_id}_" in page
    assert "revoked" in page


def test_an_emailed_invitation_takes_a_squatted_account_back(
    squatted: tuple[User, str, Client],
    user: User,
    organization: Any,
    make_user: Callable[..., User],
    bearer_client: Callable[..., APIClient],
) -> None:
    """The real person, invited to another workspace by e-mail, chooses a password from the
    link (they never knew the squatter's): the account becomes theirs, and the squatter's token
    never reaches the new workspace."""
    account, token, squatter_browser = squatted
    other_admin = make_user("other-admin@example.com")
    other_org = services.organization_create(actor=Actor(user=other_admin), name="Other")
    other_ws = services.workspace_create(
        actor=Actor(user=other_admin), organization_id=other_org.pk, name="Other"
    )
    response = api_invite(bearer_client(other_admin), other_ws)
    assert response.json()["delivery"] == "email"
    path = mailed_link()

    browser, joined = sign_up(path, OWNER_PASSWORD)
    assert joined.status_code == 303
    assert WorkspaceMembership.objects.filter(workspace=other_ws, user=account).exists()
    assert bearer(token).get(f"/api/v1/workspaces/{other_ws.pk}").status_code == 401
    assert ApiToken.objects.get(user=account).revoked_at is not None
    assert squatter_browser.get("/settings/").status_code == 302
    assert browser.get("/settings/").status_code == 200  # the owner is signed in
    account.refresh_from_db()
    assert account.check_password(OWNER_PASSWORD)
    assert account.email_verified_at is not None
    assert {e.workspace_id for e in proof_events(account)} >= {other_ws.pk}


def test_accepting_an_emailed_invitation_signed_in_verifies_and_keeps_this_session(
    owner_client: APIClient,
    workspace: Any,
    make_user: Callable[..., User],
    make_token: Callable[..., str],
) -> None:
    person = make_user(VICTIM, password=OWNER_PASSWORD)
    old_token = make_token(person)
    elsewhere = Client()
    elsewhere.force_login(person)
    api_invite(owner_client, workspace)
    path = mailed_link()

    browser = Client(enforce_csrf_checks=True)
    get_then_post(browser, "/login/", {"username": VICTIM, "password": OWNER_PASSWORD})
    accepted = get_then_post(browser, path, {})
    assert accepted.status_code == 303
    assert browser.get("/settings/").status_code == 200  # the session that proved it stays
    assert elsewhere.get("/settings/").status_code == 302  # every other one ended
    assert bearer(old_token).get("/api/v1/me").status_code == 401
    person.refresh_from_db()
    assert person.email_verified_at is not None
    assert [e.workspace_id for e in proof_events(person)] == [workspace.pk]


def test_a_verification_link_proves_the_mailbox_once(
    make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    person = make_user(VICTIM, password=OWNER_PASSWORD)
    token = make_token(person)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    settings_page = browser.get("/settings/")
    assert "not confirmed" in settings_page.content.decode()
    sent = browser.post("/settings/verify-email/", {"csrfmiddlewaretoken": csrf_of(settings_page)})
    assert sent.status_code == 303
    link = re.search(r"http://testserver(/verify-email/[^/\s]+/)", mail.outbox[-1].body)
    assert link, mail.outbox[-1].body

    opener = Client(enforce_csrf_checks=True)
    confirm = opener.get(link.group(1))
    assert confirm.status_code == 200
    assert bearer(token).get("/api/v1/me").status_code == 200  # a GET proves nothing
    done = opener.post(link.group(1), {"csrfmiddlewaretoken": csrf_of(confirm)})
    assert done.status_code == 200
    assert "confirmed" in done.content.decode()
    assert bearer(token).get("/api/v1/me").status_code == 401
    assert browser.get("/settings/").status_code == 302
    person.refresh_from_db()
    assert person.email_verified_at is not None
    assert opener.get(link.group(1)).status_code == 404  # used


def test_asking_for_verification_links_is_limited(
    make_user: Callable[..., User], settings: Any
) -> None:
    settings.HERALD_VERIFICATION_EMAILS_PER_HOUR = 1
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_user(VICTIM))
    token = csrf_of(browser.get("/settings/"))
    assert (
        browser.post("/settings/verify-email/", {"csrfmiddlewaretoken": token}).status_code == 303
    )
    limited = browser.post("/settings/verify-email/", {"csrfmiddlewaretoken": token})
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert len(mail.outbox) == 1


def test_a_password_change_ends_the_other_sessions(make_user: Callable[..., User]) -> None:
    person = make_user(VICTIM, password=OWNER_PASSWORD)
    elsewhere = Client()
    elsewhere.force_login(person)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    changed = get_then_post(
        browser,
        "/settings/password/",
        {
            "old_password": OWNER_PASSWORD,
            "new_password1": "a different passphrase 3",
            "new_password2": "a different passphrase 3",
        },
    )
    assert changed.status_code == 303
    assert browser.get("/settings/").status_code == 200
    assert elsewhere.get("/settings/").status_code == 302


# --- The link goes to the mailbox only; the page reveals no account --------------------------


def test_the_invitation_page_is_the_same_whether_or_not_the_address_has_an_account(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    make_user(VICTIM)
    api_invite(owner_client, workspace, VICTIM)
    api_invite(owner_client, workspace, "nobody@corp.example")

    def normalized(email: str) -> str:
        path = mailed_link(email)
        text = Client().get(path).content.decode()
        for variable in (path, email, *re.findall(r'value="[^"]+"', text)):
            text = text.replace(variable, "")
        return re.sub(r"next=[^\"]+", "", text)

    assert normalized(VICTIM) == normalized("nobody@corp.example")


def test_the_instance_admin_never_sees_the_link(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    api_invite(owner_client, workspace)
    token = mailed_link().split("/")[2]
    admin = Client()
    admin.force_login(make_user("root@example.com", is_staff=True, is_superuser=True))
    invitation = workspace.invitations.get()
    page = admin.get(f"/admin/workspaces/invitation/{invitation.pk}/change/")
    assert page.status_code == 200
    assert token not in page.content.decode()
    assert "email" in page.content.decode()  # its delivery is shown


# --- Display names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["Eve\u202eevil", "zero\u200bwidth", "two\nlines", "x" * 81],
    ids=["bidi", "zero-width", "newline", "too-long"],
)
def test_display_names_follow_the_names_rule_everywhere(
    name: str,
    owner_client: APIClient,
    workspace: Any,
    make_user: Callable[..., User],
) -> None:
    # Sign-up from the invitation page: a form error, no account.
    api_invite(owner_client, workspace)
    _, response = sign_up(mailed_link(), OWNER_PASSWORD, name=name)
    assert response.status_code == 200
    assert not User.objects.filter(email=VICTIM).exists()
    # The profile page.
    person = make_user("someone@example.com")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    refused = get_then_post(browser, "/settings/profile/", {"name": name})
    assert refused.status_code == 200
    person.refresh_from_db()
    assert person.name == ""
    # The Django admin's user form.
    admin = Client()
    admin.force_login(make_user("root@example.com", is_staff=True, is_superuser=True))
    url = f"/admin/workspaces/user/{person.pk}/change/"
    page = admin.get(url)
    form = {
        "email": person.email,
        "name": name,
        "is_active": "on",
        "csrfmiddlewaretoken": csrf_of(page),
    }
    assert admin.post(url, form).status_code == 200  # the form again, with its error
    person.refresh_from_db()
    assert person.name == ""
    # The service every path uses.
    with pytest.raises(FieldValidationError):
        services.account_rename(user=person, name=name)


def test_names_are_quoted_in_the_invitation_email(
    owner_client: APIClient, workspace: Any, user: User
) -> None:
    # A name stored before the rule (set behind the services' back): still quoted, controls out.
    User.objects.filter(pk=user.pk).update(name='Security team". Reset your password at evil\u202e')
    api_invite(owner_client, workspace)
    body = mail.outbox[-1].body
    assert 'Invited by: "Security team\\". Reset your password at evil" <owner@example.com>' in body
    assert "\u202e" not in body
    assert 'Workspace:  "Main"' in body
    assert mail.outbox[-1].subject == 'Invitation to the workspace "Main" on Herald'


# --- Daily limits ------------------------------------------------------------------------------


def test_invitations_are_limited_per_recipient_per_day(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_INVITATIONS_PER_RECIPIENT_PER_DAY = 2
    created = api_invite(owner_client, workspace).json()
    with TestCase.captureOnCommitCallbacks(execute=True):
        resent = owner_client.post(f"/api/v1/invitations/{created['id']}/resend")
        limited = owner_client.post(f"/api/v1/invitations/{created['id']}/resend")
    assert resent.status_code == 200
    assert_problem(limited, 429, "rate_limited")
    assert 0 < int(limited["Retry-After"]) <= 86400
    assert len(mail.outbox) == 2
    # Another address has its own quota.
    assert api_invite(owner_client, workspace, "someone-else@example.com").status_code == 201


def test_invitations_are_limited_per_inviter_and_per_workspace(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    settings.HERALD_INVITATIONS_PER_USER_PER_DAY = 2
    for n in range(2):
        assert api_invite(owner_client, workspace, f"p{n}@example.com").status_code == 201
    limited = api_invite(owner_client, workspace, "p9@example.com")
    assert_problem(limited, 429, "rate_limited")
    assert limited["Retry-After"]

    settings.HERALD_INVITATIONS_PER_USER_PER_DAY = 100
    settings.HERALD_INVITATIONS_PER_WORKSPACE_PER_DAY = 3
    # The refused attempt counted too: the workspace has had 3.
    assert_problem(api_invite(owner_client, workspace, "q@example.com"), 429, "rate_limited")
    assert not workspace.invitations.filter(email="q@example.com").exists()


# --- The instance administrator ---------------------------------------------------------------


def test_the_admin_shows_unverified_users_and_may_vouch_for_them(
    workspace: Any, make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    person = make_user(VICTIM)
    WorkspaceMembership.objects.create(workspace=workspace, user=person, role="viewer")
    token = make_token(person)
    root = make_user("root@example.com", is_staff=True, is_superuser=True)
    admin = Client()
    admin.force_login(root)
    unverified = admin.get("/admin/workspaces/user/?email_verified_at__isempty=1")
    assert VICTIM in unverified.content.decode()
    assert "E-mail verified" in unverified.content.decode()

    response = admin.post(
        "/admin/workspaces/user/",
        {"action": "vouch_for_mailboxes", "_selected_action": [person.pk]},
    )
    assert response.status_code == 302
    person.refresh_from_db()
    assert person.email_verified_at is not None
    assert bearer(token).get("/api/v1/me").status_code == 401
    [event] = proof_events(person)
    assert (event.actor_user_id, event.workspace_id) == (str(root.pk), workspace.pk)


# --- The OpenAPI document ------------------------------------------------------------------------


def test_the_openapi_document_shows_the_link_only_when_no_email_can_be_sent() -> None:
    """The invitation answer documents ``delivery`` as always present and ``accept_token`` and
    ``accept_url`` as optional, present only when the instance cannot send e-mail; creating and
    resending document the daily limits' 429 with ``Retry-After``."""
    contract = served_contract()
    schema = contract["components"]["schemas"]["InvitationWithToken"]
    assert "delivery" in schema["required"]
    assert contract["components"]["schemas"]["InvitationDeliveryEnum"]["enum"] == [
        "email",
        "manual",
    ]
    for field in ("accept_token", "accept_url"):
        assert field not in schema["required"]
        assert "Present only when delivery is manual" in schema["properties"][field]["description"]
        assert "cannot send e-mail" in schema["properties"][field]["description"]
    for path in (
        "/api/v1/workspaces/{workspace_id}/invitations",
        "/api/v1/invitations/{invitation_id}/resend",
    ):
        operation = contract["paths"][path]["post"]
        assert "InvitationWithToken" in str(operation["responses"]), path
        assert "Retry-After" in operation["responses"]["429"]["headers"], path
