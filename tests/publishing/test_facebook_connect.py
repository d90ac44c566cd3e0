"""Facebook Login through the API: the callback answers the candidates, the person chooses which
become accounts; and Meta's deauthorize and data-deletion callbacks, verified and audited."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from providers import PROVIDERS, credentials
from publishing.models import Account, ConnectionChoice, MetaDataDeletion
from tests.problem_asserts import assert_problem
from tests.providers.facebook.standin import PAGES, USER, FacebookStandIn
from tests.providers.meta.standin import signed_request
from tests.publishing_support import follow_authorization, ok
from workspaces.models import AccessAuditEvent

API = "/api/v1"
CALLBACK = f"{API}/accounts/oauth/callback"

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def facebook() -> Iterator[FacebookStandIn]:
    with FacebookStandIn() as server:
        yield server


@pytest.fixture(autouse=True)
def _providers(settings: Any, facebook: FacebookStandIn) -> None:
    facebook.reset()
    settings.HERALD_DISABLED_PROVIDERS = []
    settings.PROVIDER_OAUTH_APPS = {
        **settings.PROVIDER_OAUTH_APPS,
        "facebook": facebook.app_settings(),
        "instagram": facebook.app_settings(),
    }


def _choice(client: APIClient, workspace: Any, provider: str = "facebook") -> dict[str, Any]:
    started = ok(
        client.post(
            f"{API}/accounts/connect",
            {"workspace_id": str(workspace.pk), "provider": provider},
            format="json",
        )
    )
    assert started["account"] is None
    browser = APIClient()
    grant = follow_authorization(started["authorization_url"], browser)
    answer = ok(browser.get(CALLBACK, grant), 202)
    return dict(answer)


def test_connect_answers_the_candidates_and_the_choice_connects_them(
    owner_client: APIClient, workspace: Any
) -> None:
    choice = _choice(owner_client, workspace)
    keys = [c["key"] for c in choice["candidates"]]
    assert keys == [
        f"facebook:{PAGES[0]['id']}",
        "instagram:17841400000000001",
        f"facebook:{PAGES[1]['id']}",
    ]
    assert all(
        "credentials" not in c and "access_token" not in str(c) for c in choice["candidates"]
    )
    assert not Account.objects.filter(workspace=workspace).exists()  # nothing until chosen
    again = ok(owner_client.get(choice["choose_url"]))
    assert again["candidates"] == choice["candidates"]
    assert again["candidates"][1]["available"] is ("instagram" in PROVIDERS)

    made = ok(
        owner_client.post(choice["choose_url"], {"candidates": [keys[0], keys[2]]}, format="json"),
        201,
    )
    assert [a["provider"] for a in made["accounts"]] == ["facebook", "facebook"]
    page = Account.objects.get(workspace=workspace, external_id=PAGES[0]["id"])
    stored = credentials.decrypt(page.credentials_encrypted)
    assert stored["page_id"] == PAGES[0]["id"]
    assert stored["meta_user_id"] == USER["id"]
    assert page.account_kind == "page"
    assert page.token_expires_at is None
    assert "pages_manage_posts" in page.granted_scopes
    assert not ConnectionChoice.objects.exists()  # spent
    assert_problem(owner_client.get(choice["choose_url"]), 404, "not_found")


def test_instagram_through_facebook_login_offers_the_linked_accounts(
    owner_client: APIClient, workspace: Any
) -> None:
    choice = _choice(owner_client, workspace, provider="instagram")
    assert [c["key"] for c in choice["candidates"]] == ["instagram:17841400000000001"]
    made = ok(
        owner_client.post(
            choice["choose_url"], {"candidates": ["instagram:17841400000000001"]}, format="json"
        ),
        201,
    )
    assert made["accounts"][0]["provider"] == "instagram"
    account = Account.objects.get(workspace=workspace, provider="instagram")
    stored = credentials.decrypt(account.credentials_encrypted)
    assert stored["login"] == "facebook"
    assert stored["ig_user_id"] == "17841400000000001"
    assert stored["page_id"] == PAGES[0]["id"]
    assert "instagram_content_publish" in account.granted_scopes


def test_a_page_without_the_optional_permissions_is_still_ready(
    owner_client: APIClient, workspace: Any, facebook: FacebookStandIn
) -> None:
    from readiness import services as readiness

    facebook.declined = {"read_insights", "pages_manage_engagement"}
    choice = _choice(owner_client, workspace)
    ok(
        owner_client.post(
            choice["choose_url"], {"candidates": [f"facebook:{PAGES[0]['id']}"]}, format="json"
        ),
        201,
    )
    page = Account.objects.get(workspace=workspace, external_id=PAGES[0]["id"])
    assert "read_insights" not in page.granted_scopes
    decision = readiness.decide_account(
        account=page, operation="publish_immediate", profile="facebook.post"
    )
    assert "scope_missing" not in str(decision.as_dict())
    # Without a permission publishing needs, the scope evidence says so.
    page.granted_scopes = [s for s in page.granted_scopes if s != "pages_manage_posts"]
    page.save(update_fields=["granted_scopes"])
    lacking = readiness.decide_account(
        account=page, operation="publish_immediate", profile="facebook.post"
    )
    assert "scope_missing" in str(lacking.as_dict())
    facebook.declined = set()


def test_a_choice_refuses_unknown_keys_and_other_users(
    owner_client: APIClient, workspace: Any, bearer_client: Any, make_user: Any
) -> None:
    choice = _choice(owner_client, workspace)
    bad = owner_client.post(choice["choose_url"], {"candidates": ["facebook:999"]}, format="json")
    assert_problem(bad, 422, "invalid")
    if "instagram" not in PROVIDERS:
        missing = owner_client.post(
            choice["choose_url"], {"candidates": ["instagram:17841400000000001"]}, format="json"
        )
        assert_problem(missing, 422, "invalid")
    assert not Account.objects.filter(workspace=workspace).exists()
    stranger = bearer_client(make_user("stranger@example.com"))
    assert_problem(stranger.get(choice["choose_url"]), 404, "not_found")


def _connected_page(client: APIClient, workspace: Any) -> Account:
    choice = _choice(client, workspace)
    ok(
        client.post(
            choice["choose_url"], {"candidates": [f"facebook:{PAGES[0]['id']}"]}, format="json"
        ),
        201,
    )
    return Account.objects.get(workspace=workspace, external_id=PAGES[0]["id"])


def test_deauthorize_erases_the_credentials_and_audits(
    owner_client: APIClient, workspace: Any
) -> None:
    page = _connected_page(owner_client, workspace)
    anonymous = APIClient()
    forged = signed_request(
        {"user_id": USER["id"], "issued_at": int(time.time())}, "not the secret"
    )
    assert_problem(
        anonymous.post(f"{API}/meta/deauthorize", {"signed_request": forged}), 422, "invalid"
    )
    page.refresh_from_db()
    assert page.status == Account.Status.ACTIVE

    signed = signed_request({"user_id": USER["id"], "issued_at": int(time.time())})
    answer = anonymous.post(f"{API}/meta/deauthorize", {"signed_request": signed})
    assert answer.status_code == 204
    page.refresh_from_db()
    assert page.status == Account.Status.RECONNECT_REQUIRED
    assert page.credentials_encrypted == ""
    assert "deauthorized" in page.status_reason
    event = AccessAuditEvent.objects.get(workspace_id=workspace.pk, subject_account_id=str(page.pk))
    assert event.action == AccessAuditEvent.Action.CONNECTION_DEAUTHORIZED
    assert (event.previous_status, event.status) == ("active", "revoked")


def test_data_deletion_answers_a_status_url_and_code(
    owner_client: APIClient, workspace: Any
) -> None:
    page = _connected_page(owner_client, workspace)
    signed = signed_request({"user_id": USER["id"], "issued_at": int(time.time())})
    answer = ok(APIClient().post(f"{API}/meta/data-deletion", {"signed_request": signed}))
    code = answer["confirmation_code"]
    assert answer["url"].endswith(f"{API}/meta/data-deletion/{code}")
    status = ok(APIClient().get(f"{API}/meta/data-deletion/{code}"))
    assert status["status"] == "complete"
    assert status["accounts_erased"] == 1
    page.refresh_from_db()
    assert page.credentials_encrypted == ""
    assert MetaDataDeletion.objects.get(pk=code).meta_user_hash != USER["id"]
    assert AccessAuditEvent.objects.filter(
        action=AccessAuditEvent.Action.CONNECTION_DATA_DELETED, subject_account_id=str(page.pk)
    ).exists()
    assert_problem(APIClient().get(f"{API}/meta/data-deletion/unknown"), 404, "not_found")


# --- media by URL needs a public origin -----------------------------------------------------------


def _jpeg() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (100, 100), (10, 120, 200)).save(buffer, format="JPEG")
    return buffer.getvalue()


@pytest.mark.parametrize("provider", ["facebook", "instagram"])
def test_media_to_meta_without_a_public_origin_is_refused_at_create_time(
    owner_client: APIClient, workspace: Any, settings: Any, media_storage: Any, provider: str
) -> None:
    from tests.publishing_support import create_publication, make_account, upload

    settings.HERALD_PUBLIC_URL = ""
    settings.HERALD_S3_BUCKET = None
    account = make_account(workspace, provider, external_id="101000000000001")
    media_id = upload(owner_client, workspace, _jpeg(), name="square.jpg")["id"]
    refused = create_publication(
        owner_client, workspace, [str(account.pk)], media_ids=[media_id], status=422
    )
    body = assert_problem(refused, 422, "invalid")
    message = " ".join(e["message"] for e in body["errors"])
    assert "HERALD_PUBLIC_URL" in message
    assert "S3" in message
    if provider == "facebook":  # text alone needs no origin (an Instagram post needs media)
        create_publication(owner_client, workspace, [str(account.pk)], text="Text only")
    settings.HERALD_PUBLIC_URL = "https://herald.example"
    create_publication(owner_client, workspace, [str(account.pk)], media_ids=[media_id])
