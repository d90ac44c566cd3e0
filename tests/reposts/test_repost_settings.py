"""Repost automation settings over HTTP: the SettingsResponse shape, who may manage,
every rule bound at its 422 location, the revision check, and cross-workspace grants (audited)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from publishing.models import Account, Destination, Publication
from reposts.executions import executions_create
from reposts.models import RepostExecution, RepostGrant, RepostPolicy
from tests.endpoint_support import MEMBERS_ONLY, WorkspaceResourceTests
from tests.problem_asserts import assert_invalid, assert_problem
from tests.publishing_support import make_account
from tests.repost_support import API, policy, put_policies, settings_url
from workspaces.access import Actor
from workspaces.models import AccessAuditEvent, User, WorkspaceMembership
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db

ACCOUNT_FIELDS = {
    "id",
    "platform",
    "username",
    "avatar_url",
    "instance_url",
    "workspace_id",
    "workspace_name",
    "unavailable_reason",
    "cross_workspace",
    "grant_active",
    "grant_required",
    "supports_repost",
}
GRANT_FIELDS = {
    "$schema",
    "id",
    "created_at",
    "platform",
    "source_workspace_id",
    "source_workspace_name",
    "target_account_id",
    "target_username",
    "target_workspace_id",
    "target_workspace_name",
    "direction",
}
POLICY_FIELDS = {
    "id",
    "name",
    "created_at",
    "updated_at",
    "enabled",
    "source_account_ids",
    "target_account_ids",
    "rule",
}
RULE_FIELDS = {
    "delay_seconds",
    "evaluation_window_seconds",
    "min_comments",
    "min_likes",
    "min_reposts",
    "min_views",
    "plateau_checks",
    "require_plateau",
    "threshold_mode",
    "stages",
}


@pytest.fixture
def accounts(workspace: Any) -> dict[str, Account]:
    return {
        "mastodon": make_account(workspace, "mastodon", "1"),
        "mastodon2": make_account(workspace, "mastodon", "2"),
        "bluesky": make_account(workspace, "bluesky", "did:plc:a"),
        "telegram": make_account(workspace, "telegram", "7"),
    }


@pytest.fixture
def other(user: User, organization: Any) -> Any:
    """A second workspace the owner also administers."""
    return workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="Partner")


def member(workspace: Any, user: User, role: str) -> None:
    WorkspaceMembership.objects.update_or_create(
        workspace=workspace, user=user, defaults={"role": role}
    )


def grant(client: APIClient, source: Any, account: Account) -> Any:
    return client.post(
        f"{API}/repost-account-grants",
        {"source_workspace_id": str(source.pk), "target_account_id": str(account.pk)},
        format="json",
    )


# --- Reading ----------------------------------------------------------------------------------


def test_settings_response_has_the_spec_shape(
    owner_client: APIClient, workspace: Any, other: Any, accounts: dict[str, Account]
) -> None:
    partner_account = make_account(
        other, "bluesky", "did:plc:partner", avatar_url="https://img.example/a.png"
    )
    assert grant(owner_client, workspace, partner_account).status_code == 201
    response = put_policies(
        owner_client,
        workspace,
        [
            policy(
                [accounts["mastodon2"]],
                [accounts["mastodon"]],
                stages=[
                    {"delay_seconds": 3600, "unrepost_previous": False},
                    {"delay_seconds": 7200, "unrepost_previous": True},
                ],
            ),
            policy([partner_account], name="Partner boost"),
        ],
    )
    assert response.status_code == 200, response.content

    body = owner_client.get(settings_url(workspace)).json()

    assert set(body) == {
        "$schema",
        "workspace_id",
        "can_manage",
        "supported_platforms",
        "accounts",
        "grants",
        "policies",
        "revision",
        "executions",
    }
    assert body["$schema"].endswith("/api/v1/schemas/RepostSettings.json")
    assert body["workspace_id"] == str(workspace.pk)
    assert body["can_manage"] is True
    assert body["supported_platforms"] == ["mastodon", "bluesky"]
    assert body["revision"] == 1
    assert body["executions"] == []
    by_id = {a["id"]: a for a in body["accounts"]}
    assert all(set(a) == ACCOUNT_FIELDS for a in body["accounts"])
    own = by_id[str(accounts["mastodon"].pk)]
    assert (
        own["cross_workspace"],
        own["grant_required"],
        own["grant_active"],
        own["supports_repost"],
    ) == (
        False,
        False,
        False,
        True,
    )
    assert own["unavailable_reason"] == ""
    assert (own["workspace_id"], own["workspace_name"]) == (str(workspace.pk), "Main")
    telegram = by_id[str(accounts["telegram"].pk)]
    assert telegram["supports_repost"] is False
    assert telegram["unavailable_reason"]
    cross = by_id[str(partner_account.pk)]
    assert (cross["cross_workspace"], cross["grant_required"], cross["grant_active"]) == (
        True,
        True,
        True,
    )
    assert (cross["workspace_id"], cross["workspace_name"]) == (str(other.pk), "Partner")
    assert cross["avatar_url"] == "https://img.example/a.png"
    assert cross["unavailable_reason"] == ""
    (grant_body,) = body["grants"]
    assert set(grant_body) == GRANT_FIELDS
    assert grant_body["direction"] == "outbound"
    assert (grant_body["platform"], grant_body["target_username"]) == (
        "bluesky",
        partner_account.username,
    )
    assert (grant_body["source_workspace_name"], grant_body["target_workspace_name"]) == (
        "Main",
        "Partner",
    )
    first, second = body["policies"]
    assert set(first) == POLICY_FIELDS
    assert set(first["rule"]) == RULE_FIELDS
    assert first["source_account_ids"] == [str(accounts["mastodon"].pk)]
    assert first["target_account_ids"] == [str(accounts["mastodon2"].pk)]
    assert first["rule"]["stages"] == [
        {"delay_seconds": 3600, "unrepost_previous": False},
        {"delay_seconds": 7200, "unrepost_previous": True},
    ]
    assert second["source_account_ids"] == []  # every compatible source account
    # The partner workspace sees the same grant as inbound.
    inbound = owner_client.get(settings_url(other)).json()["grants"]
    assert [g["direction"] for g in inbound] == ["inbound"]


def test_defaults_fill_a_rule_that_is_left_out(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    body = {"name": "Defaults", "target_account_ids": [str(accounts["mastodon"].pk)]}
    response = put_policies(owner_client, workspace, [body], revision=0)
    assert response.status_code == 200, response.content
    rule = response.json()["policies"][0]["rule"]
    assert rule == {
        "delay_seconds": 86_400,
        "evaluation_window_seconds": 604_800,
        "threshold_mode": "all",
        "min_comments": 0,
        "min_likes": 0,
        "min_reposts": 0,
        "min_views": 0,
        "plateau_checks": 3,
        "require_plateau": False,
        "stages": [],
    }
    assert response.json()["policies"][0]["enabled"] is True


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_members_below_admin_read_but_cannot_manage(
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    accounts: dict[str, Account],
    role: str,
) -> None:
    someone = make_user()
    member(workspace, someone, role)
    client = bearer_client(someone)
    body = client.get(settings_url(workspace)).json()
    assert body["can_manage"] is False
    assert_problem(
        put_policies(client, workspace, [policy([accounts["mastodon"]])]), 403, "role_too_low"
    )


# --- Replacing the policy set -----------------------------------------------------------------


def _stages(n: int) -> list[dict[str, Any]]:
    return [{"delay_seconds": 60 * (i + 1), "unrepost_previous": i > 0} for i in range(n)]


BOUNDS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "delay below 0",
        lambda p: p["rule"].update(delay_seconds=-1),
        "body.policies[0].rule.delay_seconds",
    ),
    (
        "delay above 30 days",
        lambda p: p["rule"].update(delay_seconds=2_592_001),
        "body.policies[0].rule.delay_seconds",
    ),
    (
        "window below 900",
        lambda p: p["rule"].update(evaluation_window_seconds=899, delay_seconds=0),
        "body.policies[0].rule.evaluation_window_seconds",
    ),
    (
        "window above 30 days",
        lambda p: p["rule"].update(evaluation_window_seconds=2_592_001),
        "body.policies[0].rule.evaluation_window_seconds",
    ),
    (
        "window ends before the delay",
        lambda p: p["rule"].update(delay_seconds=7200, evaluation_window_seconds=7200),
        "body.policies[0].rule.evaluation_window_seconds",
    ),
    (
        "window ends before the last stage",
        lambda p: p["rule"].update(
            evaluation_window_seconds=3600,
            delay_seconds=0,
            stages=[{"delay_seconds": 3600, "unrepost_previous": False}],
        ),
        "body.policies[0].rule.evaluation_window_seconds",
    ),
    (
        "unknown threshold mode",
        lambda p: p["rule"].update(threshold_mode="most"),
        "body.policies[0].rule.threshold_mode",
    ),
    ("negative likes", lambda p: p["rule"].update(min_likes=-1), "body.policies[0].rule.min_likes"),
    (
        "comments above 10^12",
        lambda p: p["rule"].update(min_comments=10**12 + 1),
        "body.policies[0].rule.min_comments",
    ),
    (
        "reposts above 10^12",
        lambda p: p["rule"].update(min_reposts=10**12 + 1),
        "body.policies[0].rule.min_reposts",
    ),
    (
        "views above 10^12",
        lambda p: p["rule"].update(min_views=10**12 + 1),
        "body.policies[0].rule.min_views",
    ),
    (
        "plateau checks below 2",
        lambda p: p["rule"].update(plateau_checks=1),
        "body.policies[0].rule.plateau_checks",
    ),
    (
        "plateau checks above 12",
        lambda p: p["rule"].update(plateau_checks=13),
        "body.policies[0].rule.plateau_checks",
    ),
    (
        "more than 20 stages",
        lambda p: p["rule"].update(stages=_stages(21), evaluation_window_seconds=86_400),
        "body.policies[0].rule.stages",
    ),
    (
        "stage delays not increasing",
        lambda p: p["rule"].update(
            stages=[
                {"delay_seconds": 3600, "unrepost_previous": False},
                {"delay_seconds": 3600, "unrepost_previous": True},
            ]
        ),
        "body.policies[0].rule.stages[1].delay_seconds",
    ),
    (
        "first stage unreposts",
        lambda p: p["rule"].update(stages=[{"delay_seconds": 3600, "unrepost_previous": True}]),
        "body.policies[0].rule.stages[0].unrepost_previous",
    ),
    (
        "stage delay above 30 days",
        lambda p: p["rule"].update(stages=[{"delay_seconds": 2_592_001}]),
        "body.policies[0].rule.stages[0].delay_seconds",
    ),
    (
        "unknown stage field",
        lambda p: p["rule"].update(stages=[{"delay_seconds": 60, "boost": True}]),
        "body.policies[0].rule.stages[0].boost",
    ),
    ("empty name", lambda p: p.update(name=""), "body.policies[0].name"),
    ("name of 81 characters", lambda p: p.update(name="n" * 81), "body.policies[0].name"),
    ("no target", lambda p: p.update(target_account_ids=[]), "body.policies[0].target_account_ids"),
    (
        "51 targets",
        lambda p: p.update(target_account_ids=p["target_account_ids"] * 51),
        "body.policies[0].target_account_ids",
    ),
    (
        "51 sources",
        lambda p: p.update(source_account_ids=p["target_account_ids"] * 51),
        "body.policies[0].source_account_ids",
    ),
    (
        "a target listed twice",
        lambda p: p.update(target_account_ids=p["target_account_ids"] * 2),
        "body.policies[0].target_account_ids[1]",
    ),
    (
        "unknown rule field",
        lambda p: p["rule"].update(min_shares=3),
        "body.policies[0].rule.min_shares",
    ),
    ("unknown policy field", lambda p: p.update(colour="red"), "body.policies[0].colour"),
]


@pytest.mark.parametrize(
    ("mutation", "location"), [(m, loc) for _, m, loc in BOUNDS], ids=[b[0] for b in BOUNDS]
)
def test_every_rule_bound_is_rejected_at_its_location(
    owner_client: APIClient,
    workspace: Any,
    accounts: dict[str, Account],
    mutation: Callable[[dict[str, Any]], None],
    location: str,
) -> None:
    body = policy([accounts["mastodon"]])
    mutation(body)
    assert_invalid(put_policies(owner_client, workspace, [body], revision=0), location)
    assert not RepostPolicy.objects.exists()


def test_bounds_are_inclusive(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    lowest = policy(
        [accounts["mastodon"]], delay_seconds=0, evaluation_window_seconds=900, plateau_checks=2
    )
    highest = policy(
        [accounts["mastodon"]],
        name="High",
        delay_seconds=2_591_999,
        evaluation_window_seconds=2_592_000,
        min_likes=10**12,
        min_comments=10**12,
        min_reposts=10**12,
        plateau_checks=12,
        stages=_stages(20),
    )
    assert put_policies(owner_client, workspace, [lowest, highest], revision=0).status_code == 200
    # A delay of 30 days is within its own bound; the window then cannot end after it.
    longest = policy(
        [accounts["mastodon"]], delay_seconds=2_592_000, evaluation_window_seconds=2_592_000
    )
    assert_invalid(
        put_policies(owner_client, workspace, [longest]),
        "body.policies[0].rule.evaluation_window_seconds",
    )


def test_a_views_gate_is_refused_for_posts_that_report_no_views(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    """Neither Mastodon nor Bluesky reports views: a non-zero min_views could never be met,
    so it is refused at its location rather than saved as a policy that never fires."""
    for sources in ([], [accounts["mastodon"]], [accounts["bluesky"]]):
        for views in (1, 10**12):
            body = assert_invalid(
                put_policies(
                    owner_client,
                    workspace,
                    [
                        policy(
                            [accounts["mastodon2"]],
                            sources,
                            threshold_mode="any",
                            min_likes=3,
                            min_views=views,
                        )
                    ],
                    revision=0,
                ),
                "body.policies[0].rule.min_views",
            )
            assert "report no views" in body["errors"][0]["message"]
    assert not RepostPolicy.objects.exists()
    assert (
        put_policies(
            owner_client, workspace, [policy([accounts["mastodon2"]], min_views=0)], revision=0
        ).status_code
        == 200
    )


def test_stages_set_the_schedule_and_the_window_ends_after_the_last_stage(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    """With stages, each stage's delay is its time; delay_seconds (here its default, 1 day)
    plays no part, so a window that ends after the last stage is enough."""
    staged = policy(
        [accounts["mastodon"]],
        evaluation_window_seconds=3 * 3600,
        stages=[
            {"delay_seconds": 3600, "unrepost_previous": False},
            {"delay_seconds": 2 * 3600, "unrepost_previous": True},
        ],
    )
    del staged["rule"]["delay_seconds"]
    response = put_policies(owner_client, workspace, [staged], revision=0)
    assert response.status_code == 200, response.content
    assert response.json()["policies"][0]["rule"]["delay_seconds"] == 86_400
    staged["rule"]["evaluation_window_seconds"] = 2 * 3600
    assert_invalid(
        put_policies(owner_client, workspace, [staged], revision=1),
        "body.policies[0].rule.evaluation_window_seconds",
    )


def test_policy_set_bounds(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    many = [policy([accounts["mastodon"]], name=f"P{i}") for i in range(51)]
    assert_invalid(put_policies(owner_client, workspace, many, revision=0), "body.policies")
    fifty = many[:50]
    assert put_policies(owner_client, workspace, fifty, revision=0).status_code == 200
    twins = [
        policy([accounts["mastodon"]], name="Same"),
        policy([accounts["mastodon"]], name="same"),
    ]
    assert_invalid(put_policies(owner_client, workspace, twins), "body.policies[1].name")
    assert_invalid(
        owner_client.put(
            f"{API}/repost-automation",
            {"workspace_id": str(workspace.pk), "policies": []},
            format="json",
        ),
        "body.expected_revision",
    )


def test_accounts_the_workspace_may_not_name(
    owner_client: APIClient, workspace: Any, other: Any, accounts: dict[str, Account]
) -> None:
    partner = make_account(other, "mastodon", "9")
    body = policy(
        [accounts["mastodon"], partner, accounts["telegram"], "not-an-id"],
        [accounts["bluesky"], partner],
    )
    assert_invalid(
        put_policies(owner_client, workspace, [body], revision=0),
        "body.policies[0].target_account_ids[1]",  # another workspace, no grant
        "body.policies[0].target_account_ids[2]",  # telegram cannot repost
        "body.policies[0].target_account_ids[3]",  # unknown
        "body.policies[0].source_account_ids[1]",  # sources are the workspace's own
    )


def test_cross_workspace_target_needs_an_active_outbound_grant(
    owner_client: APIClient, workspace: Any, other: Any
) -> None:
    partner = make_account(other, "mastodon", "9")
    assert_invalid(
        put_policies(owner_client, workspace, [policy([partner])], revision=0),
        "body.policies[0].target_account_ids[0]",
    )
    # A grant the other way round (the partner may use ours) does not help.
    ours = make_account(workspace, "mastodon", "1")
    assert grant(owner_client, other, ours).status_code == 201
    assert_invalid(
        put_policies(owner_client, workspace, [policy([partner])], revision=0),
        "body.policies[0].target_account_ids[0]",
    )
    assert grant(owner_client, workspace, partner).status_code == 201
    assert put_policies(owner_client, workspace, [policy([partner])], revision=0).status_code == 200


def test_stale_revision_is_a_conflict(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    assert (
        put_policies(
            owner_client, workspace, [policy([accounts["mastodon"]])], revision=0
        ).status_code
        == 200
    )
    body = assert_problem(
        put_policies(
            owner_client, workspace, [policy([accounts["bluesky"]], name="Other")], revision=0
        ),
        409,
        "revision_conflict",
    )
    assert body["current_revision"] == 1
    assert list(RepostPolicy.objects.values_list("name", flat=True)) == ["Best posts"]
    assert put_policies(owner_client, workspace, [], revision=1).json()["revision"] == 2
    assert not RepostPolicy.objects.exists()


def test_replacing_keeps_policies_by_id_and_swaps_names(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    first = put_policies(
        owner_client,
        workspace,
        [
            policy([accounts["mastodon"]], name="A"),
            policy([accounts["bluesky"]], name="B"),
        ],
        revision=0,
    ).json()["policies"]
    a, b = copy.deepcopy(first)  # sent back as read, timestamps included
    a["name"], b["name"] = "B", "A"
    response = put_policies(owner_client, workspace, [b, a], revision=1)
    assert response.status_code == 200, response.content
    after = response.json()["policies"]
    assert [(p["id"], p["name"]) for p in after] == [(first[1]["id"], "A"), (first[0]["id"], "B")]
    assert after[1]["created_at"] == first[0]["created_at"]
    assert after[1]["updated_at"] > first[0]["updated_at"]
    unknown = dict(b, id="00000000-0000-0000-0000-000000000000")
    assert_invalid(
        put_policies(owner_client, workspace, [unknown], revision=2), "body.policies[0].id"
    )


def test_replacing_costs_one_query_per_policy_at_most(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    def replace(count: int) -> int:
        current = owner_client.get(settings_url(workspace)).json()
        kept = current["policies"][:count]
        new = [
            policy([accounts["mastodon"]], [accounts["mastodon2"]], name=f"P{i}")
            for i in range(len(kept), count)
        ]
        with CaptureQueriesContext(connection) as captured:
            response = put_policies(
                owner_client, workspace, kept + new, revision=current["revision"]
            )
        assert response.status_code == 200, response.content
        return len(captured)

    replace(5)
    replace(20)
    few, many = replace(5), replace(20)  # 5 kept (15 deleted), then 5 kept + 15 new
    assert many - few <= 15, (few, many)


def test_disabling_a_policy_skips_its_pending_executions(
    owner_client: APIClient, workspace: Any, accounts: dict[str, Account]
) -> None:
    put_policies(
        owner_client, workspace, [policy([accounts["mastodon2"]], min_likes=1)], revision=0
    )
    (saved,) = owner_client.get(settings_url(workspace)).json()["policies"]
    publication = Publication.objects.create(workspace=workspace, status="published", text="x")
    destination = Destination.objects.create(
        publication=publication,
        account=accounts["mastodon"],
        profile="mastodon.post",
        status="published",
        idempotency_key="k",
        external_id="1",
        published_at=saved["created_at"],
    )

    assert executions_create(now=timezone.now()) == 1
    saved["enabled"] = False
    assert put_policies(owner_client, workspace, [saved], revision=1).status_code == 200
    execution = RepostExecution.objects.get(destination=destination)
    assert (execution.status, execution.skip_reason) == ("skipped", "policy_disabled")
    assert executions_create(now=timezone.now()) == 0  # a disabled policy creates nothing


# --- Grants -----------------------------------------------------------------------------------


def test_grant_needs_an_admin_of_both_workspaces_and_is_audited(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    user: User,
    workspace: Any,
    other: Any,
) -> None:
    partner = make_account(other, "bluesky", "did:plc:partner")
    half = make_user()
    member(workspace, half, "admin")
    member(other, half, "editor")
    assert_problem(grant(bearer_client(half), workspace, partner), 403, "role_too_low")
    bound = bearer_client(user, workspace=workspace)  # a token bound to the source workspace
    assert_problem(grant(bound, workspace, partner), 403, "token_workspace_scope")
    assert not RepostGrant.objects.exists()

    response = grant(owner_client, workspace, partner)

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == GRANT_FIELDS
    assert response["Location"] == f"/api/v1/repost-account-grants/{body['id']}"
    assert (body["direction"], body["target_account_id"]) == ("outbound", str(partner.pk))
    assert_problem(grant(owner_client, workspace, partner), 409, "repost_grant_exists")
    events = AccessAuditEvent.objects.filter(action="repost_grant.created")
    assert sorted(str(e.workspace_id) for e in events) == sorted([str(workspace.pk), str(other.pk)])
    assert {(e.actor_user_id, e.status) for e in events} == {(str(user.pk), "active")}
    audit = owner_client.get(f"{API}/workspaces/{other.pk}/access-audit").json()
    assert audit[0]["action"] == "repost_grant.created"


def test_grant_input_is_checked(
    owner_client: APIClient, workspace: Any, other: Any, accounts: dict[str, Account]
) -> None:
    assert_invalid(
        grant(owner_client, workspace, accounts["mastodon"]), "body.target_account_id"
    )  # own account
    telegram = make_account(other, "telegram", "5")
    assert_invalid(grant(owner_client, workspace, telegram), "body.target_account_id")
    missing = owner_client.post(
        f"{API}/repost-account-grants",
        {
            "source_workspace_id": str(workspace.pk),
            "target_account_id": "00000000-0000-0000-0000-000000000000",
        },
        format="json",
    )
    assert_problem(missing, 404, "not_found")
    assert_invalid(
        owner_client.post(f"{API}/repost-account-grants", {"extra": 1}, format="json"),
        "body.source_workspace_id",
        "body.target_account_id",
        "body.extra",
    )


def test_revoking_a_grant(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    make_user: Callable[..., User],
    workspace: Any,
    other: Any,
) -> None:
    partner = make_account(other, "mastodon", "9")
    grant_id = grant(owner_client, workspace, partner).json()["id"]
    assert put_policies(owner_client, workspace, [policy([partner])], revision=0).status_code == 200
    editor = make_user()
    member(other, editor, "editor")
    assert_problem(
        bearer_client(editor).delete(f"{API}/repost-account-grants/{grant_id}"), 403, "role_too_low"
    )
    assert_problem(
        bearer_client(make_user()).delete(f"{API}/repost-account-grants/{grant_id}"),
        404,
        "not_found",
    )

    response = owner_client.delete(f"{API}/repost-account-grants/{grant_id}")

    assert response.status_code == 204
    assert_problem(owner_client.delete(f"{API}/repost-account-grants/{grant_id}"), 404, "not_found")
    assert_problem(owner_client.delete(f"{API}/repost-account-grants/nope"), 404, "not_found")
    revoked = AccessAuditEvent.objects.filter(action="repost_grant.revoked")
    assert {(str(e.workspace_id), e.previous_status, e.status) for e in revoked} == {
        (str(workspace.pk), "active", "revoked"),
        (str(other.pk), "active", "revoked"),
    }
    body = owner_client.get(settings_url(workspace)).json()
    assert body["grants"] == []
    (listed,) = [
        a for a in body["accounts"] if a["id"] == str(partner.pk)
    ]  # still named by the policy
    assert (listed["cross_workspace"], listed["grant_required"], listed["grant_active"]) == (
        True,
        True,
        False,
    )
    assert listed["unavailable_reason"]
    # The policy can be saved again only without the ungranted target.
    assert_invalid(
        put_policies(owner_client, workspace, body["policies"], revision=1),
        "body.policies[0].target_account_ids[0]",
    )


def test_workspace_deletion_names_the_repost_data_and_keeps_the_grant_audit(
    owner_client: APIClient,
    make_session_client: Callable[..., APIClient],
    csrf_headers: Callable[[Any], dict[str, str]],
    user: User,
    workspace: Any,
    other: Any,
    accounts: dict[str, Account],
) -> None:
    partner = make_account(other, "mastodon", "9")
    assert grant(owner_client, workspace, partner).status_code == 201
    assert (
        put_policies(
            owner_client, workspace, [policy([accounts["mastodon"], partner])], revision=0
        ).status_code
        == 200
    )
    session = make_session_client(user)

    preview = session.get(f"{API}/workspaces/{other.pk}/deletion-preview").json()
    assert preview["data_loss"]["repost_grants"] == 1
    assert preview["data_loss"]["repost_policies"] == 0
    assert (
        session.get(f"{API}/workspaces/{workspace.pk}/deletion-preview").json()["data_loss"][
            "repost_policies"
        ]
        == 1
    )

    response = session.delete(
        f"{API}/workspaces/{other.pk}",
        {"confirm_name": "Partner"},
        format="json",
        **csrf_headers(session),
    )
    assert response.status_code == 204, response.content
    assert not RepostGrant.objects.exists()
    (kept,) = (
        RepostPolicy.objects.all()
    )  # the policy stays, without the deleted workspace's account
    assert list(kept.account_links.values_list("account_id", flat=True)) == [
        accounts["mastodon"].pk
    ]
    assert AccessAuditEvent.objects.filter(
        workspace_id=other.pk, action="repost_grant.created"
    ).exists()


def test_reading_the_settings_costs_the_same_queries_for_more_accounts(
    owner_client: APIClient, workspace: Any, other: Any, accounts: dict[str, Account]
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert owner_client.get(settings_url(workspace)).status_code == 200
        return len(captured)

    put_policies(owner_client, workspace, [policy([accounts["mastodon"]])], revision=0)
    before = queries()
    for n in range(3):
        make_account(workspace, "mastodon", f"more-{n}")
        make_account(workspace, "bluesky", f"did:plc:more-{n}")
        assert (
            grant(
                owner_client, workspace, make_account(other, "mastodon", f"theirs-{n}")
            ).status_code
            == 201
        )
    put_policies(
        owner_client,
        workspace,
        [policy([accounts["mastodon"]]), policy([accounts["bluesky"]], name="B")],
    )
    assert len(owner_client.get(settings_url(workspace)).json()["accounts"]) == 13
    assert queries() == before


# --- The standard endpoint tests (tests/endpoint_support.py) ----------------------------------


class TestRepostSettingsEndpoint(WorkspaceResourceTests):
    url = f"{API}/repost-automation"
    schema = "RepostSettings"
    foreign_answer = MEMBERS_ONLY
    not_allowed = (("post", "detail"), ("delete", "detail"))
