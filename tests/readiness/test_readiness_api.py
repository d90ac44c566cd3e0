"""Readiness over HTTP: the one projection (``GET /provider-readiness``, the catalogue,
capability resolution), the three admin appends (superuser browser session + CSRF only), the
``certification_test`` intent on schedule/publish-now and in the worker, and the admin pages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from providers import PROVIDERS
from publishing.models import Account, Destination, Publication
from publishing.services import delivery
from readiness import ledgers
from readiness.models import (
    LEDGER_MODELS,
    OPERATIONS,
    ApprovalReview,
    CertificationRun,
    RuntimeControl,
)
from readiness.projection import provider_readiness_projection
from tests.endpoint_support import MEMBERS_ONLY, WorkspaceResourceTests
from tests.problem_asserts import assert_invalid, assert_problem
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.publishing_support import API, connect, create_publication, ok
from tests.readiness_support import (  # noqa: F401  (scan_ledgers: autouse fixture)
    FORBIDDEN,
    SECRET_TOKEN,
    approve_and_enable,
    checks_for,
    enforce,
    ledger_values,
    make_account,
    run_form_fields,
    scan_ledgers,
)

pytestmark = pytest.mark.django_db
ADMIN = f"{API}/admin/provider-readiness"


@pytest.fixture
def admin_user(make_user: Any) -> Any:
    return make_user("root@example.com", is_superuser=True, is_staff=True)


@pytest.fixture
def admin_session(
    make_session_client: Callable[..., APIClient],
    admin_user: Any,
    csrf_headers: Callable[[Any], dict[str, str]],
) -> tuple[APIClient, dict[str, str]]:
    client = make_session_client(admin_user)
    return client, csrf_headers(client)


# --- The projection -------------------------------------------------------------------------------


def test_projection_shape(owner_client: APIClient, workspace: Any, settings: Any) -> None:
    # The operator's OAuth apps (X, LinkedIn, Threads) configured: every provider is healthy.
    settings.PROVIDER_OAUTH_APPS = {
        name: {**app, "client_id": f"{name}-id", "client_secret": f"{name}-secret"}
        for name, app in settings.PROVIDER_OAUTH_APPS.items()
    }
    hook = make_account(workspace)
    bot = make_account(workspace, "telegram")
    body = ok(owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}))
    assert body["$schema"].endswith("/schemas/ProviderReadiness.json")
    assert (body["workspace_id"], body["deployment"], body["enforced"]) == (
        str(workspace.pk),
        "self_hosted",
        False,
    )
    entries = {e["provider"]: e for e in body["providers"]}
    assert list(entries) == list(PROVIDERS)
    for entry in entries.values():
        assert {
            "provider",
            "state",
            "connectable",
            "advertisable",
            "facts",
            "configured_app_state",
            "connected_accounts",
            "blocking_issues",
            "profiles",
        } <= set(entry)
        assert entry["state"] == "healthy"
        assert entry["connectable"] is True
        assert entry["advertisable"] is False  # the claims file claims nothing
        assert set(entry["facts"]) == {
            "configuration",
            "local_test",
            "live_certification",
            "approval",
            "authorization",
            "policy",
            "control",
        }
        assert entry["blocking_issues"] == []
    assert entries["mastodon"]["configured_app_state"] == "dynamic"
    assert entries["bluesky"]["configured_app_state"] == "builtin"
    assert entries["discord_webhook"]["connected_accounts"] == 1
    profile = entries["discord_webhook"]["profiles"][0]
    assert (profile["account_id"], profile["output_profile"]) == (
        str(hook.pk),
        "discord_webhook.message",
    )
    for key in ("immediate", "scheduled"):
        decision = profile[key]
        assert decision["state"] == "healthy"
        assert decision["executable"]
        assert decision["publishable"]
        assert decision["blockers"] == []
        assert decision["contract_digest"].startswith("sha256:")
    assert profile["immediate"]["subject"]["operation"] == "publish_immediate"
    assert profile["scheduled"]["subject"]["operation"] == "publish_scheduled"
    assert [p["output_profile"] for p in entries["telegram"]["profiles"]] == [
        "telegram.message",
        "telegram.photo",
    ]
    assert all(p["account_id"] == str(bot.pk) for p in entries["telegram"]["profiles"])
    assert SECRET_TOKEN not in str(body)


def test_projection_reports_blocking_issues(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    make_account(workspace, status="reconnect_required")
    make_account(workspace, status="reconnect_required")
    settings.HERALD_DISABLED_PROVIDERS = ["bluesky"]
    entries = {
        e["provider"]: e
        for e in ok(
            owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)})
        )["providers"]
    }
    hook = entries["discord_webhook"]
    assert hook["state"] == "healthy"  # connecting is fine; the accounts need a reconnect
    assert hook["blocking_issues"] == [
        {"code": "grant_invalid", "detail": hook["blocking_issues"][0]["detail"], "count": 4}
    ]
    assert entries["bluesky"]["state"] == "disabled"
    assert entries["bluesky"]["connectable"] is False
    assert [i["code"] for i in entries["bluesky"]["blocking_issues"]] == ["provider_disabled"]


def test_projection_counts_issues_per_provider_connect_first(workspace: Any, settings: Any) -> None:
    """Each provider's blocking issues: every blocker of its connect decision and of its accounts'
    immediate and scheduled decisions, counted by code (sorted), each with the first detail
    seen: the connect decision's."""
    settings.HERALD_DISABLED_PROVIDERS = ["mastodon"]
    make_account(workspace, "x")  # no operator app: the connect and every account decision
    make_account(workspace, "mastodon", app=None)
    entries = {
        e["provider"]: e
        for e in provider_readiness_projection(workspace_id=workspace.pk)["providers"]
    }
    assert entries["x"]["blocking_issues"] == [
        {"code": "app_missing", "detail": "The provider app is not configured.", "count": 5}
    ]
    assert entries["linkedin"]["blocking_issues"] == [
        {"code": "app_missing", "detail": "The provider app is not configured.", "count": 1}
    ]
    assert entries["mastodon"]["blocking_issues"] == [
        {
            "code": "app_missing",
            "detail": "The account's provider app registration is missing.",
            "count": 2,
        },
        {
            "code": "provider_disabled",
            "detail": "mastodon is disabled on this instance.",
            "count": 3,
        },
    ]
    assert list(entries["x"]) == [
        "provider",
        "display_name",
        "state",
        "executable",
        "connectable",
        "publishable",
        "advertisable",
        "intent",
        "facts",
        "blockers",
        "contract_digest",
        "subject_digest",
        "subject",
        "configured_app_state",
        "connected_accounts",
        "blocking_issues",
        "profiles",
    ]


def test_projection_narrows_to_the_given_accounts_and_one_profile(workspace: Any) -> None:
    """Capability resolution: every provider's connect decision, and profiles (and account
    counts) of the given accounts only, in one output profile when one is named."""
    bot = make_account(workspace, "telegram")
    other_bot = make_account(workspace, "telegram")
    hook = make_account(workspace)
    entries = {
        e["provider"]: e
        for e in provider_readiness_projection(
            workspace_id=workspace.pk, accounts=[bot, hook], content_profile="telegram.photo"
        )["providers"]
    }
    assert list(entries) == list(PROVIDERS)
    telegram = entries["telegram"]
    assert [(p["account_id"], p["output_profile"]) for p in telegram["profiles"]] == [
        (str(bot.pk), "telegram.photo")
    ]
    assert telegram["connected_accounts"] == 1
    assert entries["discord_webhook"]["profiles"] == []  # no telegram.photo there
    assert entries["discord_webhook"]["connected_accounts"] == 1
    every = {
        e["provider"]: e
        for e in provider_readiness_projection(workspace_id=workspace.pk)["providers"]
    }
    assert [(p["account_id"], p["output_profile"]) for p in every["telegram"]["profiles"]] == [
        (str(account.pk), profile)
        for account in sorted((bot, other_bot), key=lambda a: (a.created_at, a.pk))
        for profile in ("telegram.message", "telegram.photo")
    ]


def test_projection_under_enforcement(
    owner_client: APIClient, workspace: Any, settings: Any
) -> None:
    enforce(settings)
    make_account(workspace)
    body = ok(owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}))
    assert body["enforced"] is True
    decision = next(e for e in body["providers"] if e["provider"] == "discord_webhook")["profiles"][
        0
    ]["immediate"]
    assert decision["executable"] is False
    assert {b["code"] for b in decision["blockers"]} >= {
        "control_missing",
        "approval_missing",
        "local_test_missing",
        "live_certification_missing",
    }


def test_projection_shows_only_the_workspace_own_accounts(
    owner_client: APIClient,
    user: Any,
    organization: Any,
    workspace: Any,
    bearer_client: Callable[..., APIClient],
) -> None:
    """Another workspace's accounts (even the caller's own) never appear, and capability
    resolution refuses an account of another workspace."""
    from workspaces.access import Actor
    from workspaces.services import workspace_create

    mine = make_account(workspace)
    other_workspace = workspace_create(
        actor=Actor(user=user), organization_id=organization.pk, name="Other"
    )
    theirs = make_account(other_workspace)
    make_account(other_workspace, "telegram")
    body = ok(owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}))
    listed = {p["account_id"] for e in body["providers"] for p in e["profiles"]}
    assert listed == {str(mine.pk)}
    assert sum(e["connected_accounts"] for e in body["providers"]) == 1
    assert str(theirs.pk) not in str(body)
    response = owner_client.get(
        f"{API}/capabilities", {"workspace_id": str(workspace.pk), "account_ids": str(theirs.pk)}
    )
    assert_problem(response, 403, "account_not_in_workspace")
    bound = bearer_client(user, workspace=other_workspace)  # a token bound to the other workspace
    assert_problem(
        bound.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)}),
        403,
        "token_workspace_scope",
    )


def _projection_queries(workspace: Any) -> int:
    with CaptureQueriesContext(connection) as captured:
        provider_readiness_projection(workspace_id=workspace.pk)
    return len(captured)


def test_projection_queries_do_not_grow_with_accounts(
    owner_client: APIClient, workspace: Any, django_assert_max_num_queries: Any
) -> None:
    from providers import credentials

    make_account(workspace)
    small = _projection_queries(workspace)
    sealed = credentials.encrypt({"access_token": SECRET_TOKEN})
    Account.objects.bulk_create(
        Account(
            workspace=workspace,
            provider=PROVIDERS[i % len(PROVIDERS)],
            external_id=f"bulk-{i}",
            username=f"user{i}",
            instance_url=f"https://i{i % 7}.example"
            if PROVIDERS[i % len(PROVIDERS)] == "mastodon"
            else "",
            credentials_encrypted=sealed,
            granted_scopes=[],
        )
        for i in range(299)
    )
    assert Account.objects.filter(workspace=workspace).count() == 300
    assert _projection_queries(workspace) == small
    with django_assert_max_num_queries(
        small + 12
    ):  # + authentication, workspace access, throttling
        body = ok(
            owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)})
        )
    assert sum(e["connected_accounts"] for e in body["providers"]) == 300


def test_catalogue_and_capabilities_embed_the_same_projection(
    owner_client: APIClient, workspace: Any
) -> None:
    hook = make_account(workspace)
    projection = ok(
        owner_client.get(f"{API}/provider-readiness", {"workspace_id": str(workspace.pk)})
    )
    by_provider = {e["provider"]: e for e in projection["providers"]}
    catalogue = ok(
        owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)})
    )
    for entry in catalogue["providers"]:
        assert entry["readiness"] == by_provider[entry["provider"]]
    resolved = ok(owner_client.get(f"{API}/capabilities", {"workspace_id": str(workspace.pk)}))
    assert resolved["provider_readiness"] == [by_provider["discord_webhook"]]
    item = resolved["items"][0]
    assert item["account_id"] == str(hook.pk)
    profile = by_provider["discord_webhook"]["profiles"][0]
    assert item["readiness"]["discord_webhook.message"] == {
        "immediate": profile["immediate"],
        "scheduled": profile["scheduled"],
    }


def test_unsupported_and_never_advertised_providers(
    owner_client: APIClient, workspace: Any
) -> None:
    from readiness import services as readiness

    decision = readiness.decide_provider(provider="discord")
    assert decision.state == "unsupported"
    assert not decision.advertisable
    # Pinterest has an adapter now: configurable, and still never advertised.
    decision = readiness.decide_provider(provider="pinterest")
    assert decision.state != "unsupported"
    assert not decision.advertisable
    body = ok(owner_client.get(f"{API}/account-providers", {"workspace_id": str(workspace.pk)}))
    providers = {e["provider"]: e for e in body["providers"]}
    assert "discord" not in providers
    assert providers["telegram"]["readiness"]["advertisable"] is False
    assert providers["pinterest"]["readiness"]["advertisable"] is False
    assert (
        providers["discord_webhook"]["readiness"]["state"] == "healthy"
    )  # webhooks stay supported


# --- Admin appends ----------------------------------------------------------------------------------

APPENDS = {
    "approval-reviews": {
        "provider": "discord_webhook",
        "outcome": "approved",
        "review_reference": "https://review.example/ticket/42 by ops@example.com",
    },
    "runtime-controls": {"provider": "discord_webhook", "mode": "enabled", "reason": "rollout"},
    "certifications": None,  # needs an account: built in the test
}


def _body(route: str, account: Any) -> dict[str, Any]:
    if route != "certifications":
        return dict(APPENDS[route] or {})
    return {
        "kind": "live",
        "provider": "discord_webhook",
        "operation": "publish_immediate",
        "output_profile": "discord_webhook.message",
        "account_id": str(account.pk),
        "checks": checks_for("discord_webhook", "publish_immediate"),
        "external_result_reference": f"https://discord.com/channels/1/2/{SECRET_TOKEN}",
    }


@pytest.mark.parametrize("route", sorted(APPENDS))
def test_admin_append_accepts_only_a_superuser_browser_session_with_csrf(
    route: str,
    workspace: Any,
    admin_user: Any,
    user: Any,
    bearer_client: Callable[..., APIClient],
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    admin_session: tuple[APIClient, dict[str, str]],
) -> None:
    account = make_account(workspace)
    url = f"{ADMIN}/{route}"
    body = _body(route, account)
    for permissions in (("api:read",), ("api:write",), ("api:read", "api:write")):
        for holder in (admin_user, user):
            response = bearer_client(holder, permissions=permissions).post(url, body, format="json")
            assert_problem(response, 403, "session_required")
    member = make_session_client(user)
    assert_problem(
        member.post(url, body, format="json", **csrf_headers(member)),
        403,
        "instance_admin_required",
    )
    client, csrf = admin_session
    assert_problem(client.post(url, body, format="json"), 403, "csrf_failed")  # no CSRF token
    assert not any(model.objects.exists() for model in LEDGER_MODELS)
    response = client.post(url, body, format="json", **csrf)
    created = ok(response, 201)
    assert created["$schema"].endswith(".json")
    assert response["Location"].startswith("/admin/readiness/")
    assert created["operator_fingerprint"].startswith("operator:sha256:")
    text = response.content.decode()
    assert SECRET_TOKEN not in text
    assert "review.example" not in text
    assert str(account.pk) not in text


def test_certification_append_fills_the_subject(
    admin_session: tuple[APIClient, dict[str, str]], workspace: Any
) -> None:
    client, csrf = admin_session
    account = make_account(workspace, "mastodon")
    body = {
        "kind": "live",
        "provider": "mastodon",
        "operation": "publish_scheduled",
        "output_profile": "mastodon.post",
        "account_id": str(account.pk),
        "checks": checks_for("mastodon", "publish_scheduled"),
        "external_result_reference": "https://mastodon.example/@someone/1",
    }
    run = ok(client.post(f"{ADMIN}/certifications", body, format="json", **csrf), 201)
    assert run["outcome"] == "passed"
    assert run["instance_fingerprint"].startswith("instance:sha256:")
    assert run["account_fingerprint"].startswith("account:sha256:")
    assert run["account_kind"] == "user"
    assert run["policy_mode"] == "standard"
    assert run["required_scopes"]
    assert run["required_scopes"] == run["granted_scopes"]
    assert {c["name"] for c in run["checks"]} == {c["name"] for c in body["checks"]}
    stored = CertificationRun.objects.get(pk=run["id"])
    assert stored.subject_digest == run["subject_digest"]
    assert stored.tested_revision == run["tested_revision"]


def test_admin_append_validation(
    admin_session: tuple[APIClient, dict[str, str]], workspace: Any
) -> None:
    client, csrf = admin_session
    response = client.post(
        f"{ADMIN}/runtime-controls",
        {"provider": "myspace", "mode": "on", "reason": "x", "extra": 1},
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.mode", "body.reason", "body.extra")
    response = client.post(
        f"{ADMIN}/runtime-controls",
        {"provider": "myspace", "mode": "enabled", "reason": "rollout"},
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.provider")
    response = client.post(
        f"{ADMIN}/runtime-controls",
        {
            "provider": "discord_webhook",
            "mode": "disabled",
            "reason": "security",
            "operation": "connect",
            "output_profile": "discord_webhook.message",
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.output_profile")  # it would cover nothing
    response = client.post(
        f"{ADMIN}/certifications",
        {
            "kind": "live",
            "provider": "discord_webhook",
            "operation": "publish_immediate",
            "output_profile": "discord_webhook.message",
            "external_result_reference": "message 1",
            "checks": checks_for("discord_webhook", "publish_immediate"),
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.account_id")
    response = client.post(
        f"{ADMIN}/certifications",
        {
            "kind": "local",
            "provider": "discord_webhook",
            "operation": "connect",
            "account_kind": "ops@example.com",
            "checks": [
                {"name": "connect", "outcome": "maybe"},
                {"name": "whatever", "outcome": "passed"},
            ],
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.account_kind", "body.checks[0].outcome", "body.checks[1].name")
    response = client.post(
        f"{ADMIN}/certifications",
        {
            "kind": "local",
            "provider": "discord_webhook",
            "operation": "publish_immediate",
            "output_profile": "discord_webhook.poll",
            "external_result_reference": "message 1",
            "checks": checks_for("discord_webhook", "publish_immediate"),
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.output_profile")
    response = client.post(
        f"{ADMIN}/certifications",
        {
            "kind": "local",
            "provider": "discord_webhook",
            "operation": "publish_immediate",
            "output_profile": "discord_webhook.message",
            "external_result_reference": "message 1",
            "checks": checks_for("discord_webhook", "publish_immediate")[:-1],
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.checks")
    response = client.post(
        f"{ADMIN}/certifications",
        {
            "kind": "local",
            "provider": "discord_webhook",
            "operation": "publish_immediate",
            "output_profile": "discord_webhook.message",
            "checks": checks_for("discord_webhook", "publish_immediate"),
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.external_result_reference")
    response = client.post(
        f"{ADMIN}/approval-reviews",
        {
            "provider": "discord_webhook",
            "outcome": "approved",
            "operations": ["connect", "delete"],
            "reviewed_at": "2026-01-02T00:00:00Z",
            "expires_at": "2026-01-01T00:00:00Z",
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.operations[1]")
    response = client.post(
        f"{ADMIN}/approval-reviews",
        {
            "provider": "discord_webhook",
            "outcome": "approved",
            "reviewed_at": "2026-01-02T00:00:00Z",
            "expires_at": "2026-01-01T00:00:00Z",
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.expires_at")
    response = client.post(
        f"{ADMIN}/approval-reviews",
        {
            "provider": "discord_webhook",
            "outcome": "approved",
            "reviewed_at": (timezone.now() + timedelta(days=1)).isoformat(),
        },
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.reviewed_at")
    response = client.post(
        f"{ADMIN}/approval-reviews",
        {"provider": "discord_webhook", "outcome": "approved", "operations": []},
        format="json",
        **csrf,
    )
    assert_invalid(response, "body.operations")  # an empty list never means "everything"
    assert not ApprovalReview.objects.exists()
    assert not RuntimeControl.objects.exists()
    assert not CertificationRun.objects.exists()


def test_the_ledger_scan_catches_what_must_never_be_stored(workspace: Any) -> None:
    """The autouse scan is not vacuous: raw inputs of the tests above would all be caught."""
    account = make_account(workspace)
    for raw in (
        SECRET_TOKEN,
        "https://discord.com/api/webhooks/1/x",
        str(account.pk),
        "ops@example.com",
        "hrld_0123abcd_secret",
    ):
        assert FORBIDDEN.search(raw), raw
    assert list(ledger_values()) == []


# --- certification_test ---------------------------------------------------------------------------


def test_only_a_superuser_selects_certification_test(
    owner_client: APIClient,
    workspace: Any,
    bearer_client: Callable[..., APIClient],
    admin_user: Any,
) -> None:
    from workspaces.models import WorkspaceMembership

    hook = make_account(workspace)
    body = create_publication(owner_client, workspace, [str(hook.pk)])
    url = f"{API}/publications/{body['id']}"
    intent = {"execution_intent": "certification_test"}
    assert_problem(
        owner_client.post(f"{url}/publish-now", intent, format="json"),
        403,
        "certification_test_forbidden",
    )
    later = (timezone.now() + timedelta(hours=1)).isoformat()
    assert_problem(
        owner_client.post(f"{url}/schedule", {"scheduled_at": later, **intent}, format="json"),
        403,
        "certification_test_forbidden",
    )
    assert_invalid(
        owner_client.post(f"{url}/publish-now", {"execution_intent": "yolo"}, format="json"),
        "body.execution_intent",
    )
    WorkspaceMembership.objects.create(workspace=workspace, user=admin_user, role="admin")
    root = bearer_client(admin_user)
    # strict whatever the flag (here: self-hosted, not enforced): no approval, no control
    refused = assert_problem(
        root.post(f"{url}/schedule", {"scheduled_at": later, **intent}, format="json"),
        409,
        "readiness_blocked",
    )
    assert {b["code"] for b in refused["destinations"][0]["blockers"]} == {
        "approval_missing",
        "control_missing",
    }
    approve_and_enable(admin_user, "discord_webhook", outcome="trial")
    scheduled = ok(root.post(f"{url}/schedule", {"scheduled_at": later, **intent}, format="json"))
    assert scheduled["execution_intent"] == "certification_test"  # queued work keeps it
    assert Publication.objects.get(pk=body["id"]).execution_intent == "certification_test"
    # A non-superuser cannot ride on queued certification-test work: no edit (new text or other
    # destinations would run with the bypass) and no requeue.
    other = make_account(workspace, "telegram")
    replace = {
        "expected_revision": scheduled["revision"],
        "text": "changed",
        "destinations": [{"account_id": str(hook.pk)}, {"account_id": str(other.pk)}],
    }
    assert_problem(
        owner_client.put(url, replace, format="json"), 403, "certification_test_forbidden"
    )
    assert_problem(
        owner_client.post(f"{url}/retry-failed", {}, format="json"),
        403,
        "certification_test_forbidden",
    )
    stored = Publication.objects.get(pk=body["id"])
    assert (stored.text, stored.destinations.count()) == (body["text"], 1)
    assert (
        ok(root.put(url, replace, format="json"))["revision"] == scheduled["revision"] + 1
    )  # the admin may


def test_worker_redecides_with_the_intent_before_each_provider_call(
    settings: Any,
    owner_client: APIClient,
    workspace: Any,
    admin_user: Any,
    discord: DiscordWebhookStandIn,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from publishing.services import publications
    from workspaces.access import Actor
    from workspaces.models import WorkspaceMembership

    WorkspaceMembership.objects.create(workspace=workspace, user=admin_user, role="admin")
    hook = connect(owner_client, workspace, "discord_webhook", discord)
    enforce(settings)
    ledgers.runtime_control_append(
        operator=admin_user, provider="discord_webhook", mode="enabled", reason="rollout"
    )
    ledgers.approval_review_append(operator=admin_user, provider="discord_webhook", outcome="trial")
    root = Actor(user=admin_user)

    def queue(intent: str) -> Destination:
        publication = publications.publication_create(
            actor=root,
            workspace_id=workspace.pk,
            text=f"{intent} run",
            destinations=[{"account_id": hook["id"]}],
        )
        with django_capture_on_commit_callbacks(execute=True):
            publications.publication_publish_now(
                actor=root, publication_id=publication.pk, expected_revision=1, intent=intent
            )
        return Destination.objects.get(publication=publication)

    # normal work is refused at queue time (no evidence, trial approval) ...
    from config.errors import DomainError

    with pytest.raises(DomainError) as refused:
        queue("normal")
    assert refused.value.code == "readiness_blocked"
    # ... a certification test is queued and delivered: evidence gaps are bypassed
    first = queue("certification_test")
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=first.pk)
    first.refresh_from_db()
    assert first.status == "published"
    assert discord.posts_accepted == 1
    # a control disabled after queueing blocks at send time: the worker re-decides
    second = queue("certification_test")
    ledgers.runtime_control_append(
        operator=admin_user, provider="discord_webhook", mode="disabled", reason="security"
    )
    with django_capture_on_commit_callbacks(execute=True):
        delivery.delivery_send(destination_id=second.pk)
    second.refresh_from_db()
    assert second.status == "blocked"
    assert second.readiness["state"] == "disabled"
    assert second.readiness["intent"] == "certification_test"
    assert discord.posts_accepted == 1


# --- Django admin ----------------------------------------------------------------------------------


def test_admin_pages_are_add_only(admin_user: Any, workspace: Any) -> None:
    from django.test import Client

    client = Client()
    client.force_login(admin_user)
    response = client.post(
        "/admin/readiness/runtimecontrol/add/",
        {
            "provider": "discord_webhook",
            "output_profile": "",
            "operation": "",
            "mode": "disabled",
            "reason": "security",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    control = RuntimeControl.objects.get()
    assert control.mode == "disabled"
    assert control.operator_fingerprint.startswith("operator:sha256:")
    page = client.get(f"/admin/readiness/runtimecontrol/{control.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content  # view only
    assert (
        client.post(
            f"/admin/readiness/runtimecontrol/{control.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert RuntimeControl.objects.filter(pk=control.pk).exists()
    response = client.post(
        "/admin/readiness/approvalreview/add/",
        {
            "provider": "discord_webhook",
            "outcome": "approved",
            "operations": ["connect", "publish_immediate"],
            "review_reference": "ticket 7",
        },
    )
    assert response.status_code == 302
    assert ApprovalReview.objects.get().operations == ["connect", "publish_immediate"]
    response = client.post(
        "/admin/readiness/approvalreview/add/", {"provider": "bluesky", "outcome": "trial"}
    )
    assert response.status_code == 302
    assert ApprovalReview.objects.latest("id").operations == sorted(
        OPERATIONS
    )  # none selected: all
    fields = run_form_fields(make_account(workspace))
    response = client.post("/admin/readiness/certificationrun/add/", fields)
    assert response.status_code == 302, response.content.decode()[:3000]
    run = CertificationRun.objects.get()
    assert run.outcome == "passed"
    assert run.checks.count() == len(checks_for("discord_webhook", "publish_immediate"))
    # an incomplete run is shown as a form error, nothing is stored
    fields.pop("check_connect")
    response = client.post("/admin/readiness/certificationrun/add/", fields)
    assert response.status_code == 200
    assert b"connect check is missing" in response.content
    assert CertificationRun.objects.count() == 1
    assert client.get("/admin/readiness/certificationcheck/add/").status_code == 403


# --- The contract ----------------------------------------------------------------------------------


def test_responses_validate_against_their_served_json_schemas(
    settings: Any,
    owner_client: APIClient,
    workspace: Any,
    admin_user: Any,
    admin_session: tuple[APIClient, dict[str, str]],
) -> None:
    from tests.openapi_support import SchemaChecker

    settings.HERALD_PUBLIC_URL = ""  # $schema URLs from the request origin (http://testserver)
    checker = SchemaChecker()
    hook = make_account(workspace)
    make_account(workspace, "mastodon")
    client, csrf = admin_session
    for route in sorted(APPENDS):
        assert checker.validate(
            ok(client.post(f"{ADMIN}/{route}", _body(route, hook), format="json", **csrf), 201)
        ).endswith(("ApprovalReview", "RuntimeControl", "CertificationRun"))
    for enforced in (False, True):
        settings.SERVICE_PROVIDER_CERTIFICATION_ENFORCED = enforced
        settings.HERALD_DEPLOYMENT = "cloud" if enforced else "self_hosted"
        query = {"workspace_id": str(workspace.pk)}
        assert (
            checker.validate(ok(owner_client.get(f"{API}/provider-readiness", query)))
            == "ProviderReadiness"
        )
        assert (
            checker.validate(ok(owner_client.get(f"{API}/account-providers", query)))
            == "ProviderCatalogue"
        )
        assert (
            checker.validate(ok(owner_client.get(f"{API}/capabilities", query))) == "Capabilities"
        )
    problem = owner_client.post(f"{ADMIN}/runtime-controls", {}, format="json")
    assert checker.validate(problem.json()) == "ErrorModel"


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestProviderReadinessEndpoint(WorkspaceResourceTests):
    url = f"{API}/provider-readiness"
    schema = "ProviderReadiness"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("post", "detail"), ("put", "detail"), ("delete", "detail"))
