"""Schemathesis against the served contract of the repost automation operations, through the
WSGI app: generated requests (valid, with the IDs of real workspaces, accounts and grants, and
deliberately invalid) never answer 500 and always answer a declared status, content type and
schema.

The caller is a bearer token of a user who administers two workspaces, each with connected
accounts, one grant between them and a saved policy set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import strategies as st

from tests.contract_fuzz_support import (
    assert_contract_holds,
    max_examples,
    operation_label,
    operations_under,
)
from workspaces.access import Actor

MAX_EXAMPLES = max_examples(25)
EXPECTED = {
    "GET /api/v1/repost-automation",
    "PUT /api/v1/repost-automation",
    "POST /api/v1/repost-account-grants",
    "DELETE /api/v1/repost-account-grants/{grant_id}",
}


OPERATIONS = operations_under("/api/v1/repost-automation", "/api/v1/repost-account-grants")


@dataclass(frozen=True)
class World:
    authorization: str
    values: dict[str, str]


@pytest.fixture
def world(make_user: Any) -> World:
    from reposts import services
    from tests.publishing_support import make_account
    from workspaces.services import api_token_create, organization_create, workspace_create

    owner = make_user("fuzz-owner@example.com")
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Fuzz Org")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Fuzz WS")
    partner = workspace_create(actor=actor, organization_id=organization.pk, name="Partner WS")
    own = make_account(workspace, "mastodon", "1")
    theirs = make_account(partner, "bluesky", "did:plc:fuzz")
    other = make_account(partner, "mastodon", "2")
    grant = services.repost_grant_create(
        actor=actor, source_workspace_id=workspace.pk, target_account_id=theirs.pk
    )
    services.repost_settings_replace(
        actor=actor,
        workspace_id=workspace.pk,
        expected_revision=0,
        policies=[
            {
                "name": "Fuzz",
                "enabled": True,
                "source_account_ids": [str(own.pk)],
                "target_account_ids": [str(theirs.pk)],
                "rule": {
                    "delay_seconds": 0,
                    "evaluation_window_seconds": 900,
                    "threshold_mode": "all",
                    "min_comments": 0,
                    "min_likes": 1,
                    "min_reposts": 0,
                    "min_views": 0,
                    "plateau_checks": 2,
                    "require_plateau": False,
                    "stages": [],
                },
            }
        ],
    )
    _, full = api_token_create(user=owner, name="fuzz", permissions=["api:read", "api:write"])
    return World(
        authorization=f"Bearer {full}",
        values={
            "workspace_id": str(workspace.pk),
            "source_workspace_id": str(workspace.pk),
            "target_account_id": str(other.pk),
            "grant_id": str(grant.pk),
            "expected_revision": "1",
        },
    )


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    from schemathesis import GenerationMode

    names = [p.name for p in operation.path_parameters]
    fixed = {name: world.values[name] for name in names} or None
    query = (
        {"workspace_id": world.values["workspace_id"]}
        if operation.method.upper() == "GET"
        else None
    )
    strategies = [
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
        operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed, query=query).map(
            lambda case: _with_real_values(case, world)
        ),
        operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed),
    ]
    return st.one_of(strategies)


def _with_real_values(case: Any, world: World) -> Any:
    if isinstance(case.body, dict):
        real: dict[str, Any] = {
            name: world.values[name]
            for name in ("workspace_id", "source_workspace_id", "target_account_id")
            if isinstance(case.body.get(name), str)
        }
        if isinstance(case.body.get("expected_revision"), int):
            real["expected_revision"] = int(world.values["expected_revision"])
        case.body = {**case.body, **real}
    return case


def test_every_repost_operation_is_fuzzed() -> None:
    assert {operation_label(op) for op in OPERATIONS} == EXPECTED


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", OPERATIONS, ids=operation_label)
def test_repost_operation_honours_its_contract(operation: Any, world: World) -> None:
    headers = {"Authorization": world.authorization}

    assert_contract_holds(_strategy(operation, world), headers=headers, examples=MAX_EXAMPLES * 2)
