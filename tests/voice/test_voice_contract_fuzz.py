"""Schemathesis against the served contract for the voice-profile and discovery operations,
through the WSGI app: generated requests (valid, invalid, and valid with the IDs of real
resources) never answer 500, and every answer uses a declared status code, content type and
schema. The discovery engine is the built-in one (no network); its per-user rate limit is
lifted so the generator reaches the engine rather than a 429.

``HERALD_FUZZ_EXAMPLES`` (default 15) sets the examples per operation and generation mode.
"""

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

EXPECTED_OPERATIONS = {
    "GET /api/v1/voice-profiles",
    "POST /api/v1/voice-profiles",
    "GET /api/v1/voice-profiles/{voice_profile_id}",
    "PUT /api/v1/voice-profiles/{voice_profile_id}",
    "DELETE /api/v1/voice-profiles/{voice_profile_id}",
    "POST /api/v1/voice-profiles/{voice_profile_id}/default",
    "PUT /api/v1/voice-profile-assignments/{account_id}",
    "POST /api/v1/publication-opportunities/discover",
}
MAX_EXAMPLES = max_examples(15)


OPERATIONS = operations_under(
    "/api/v1/voice-profiles",
    "/api/v1/voice-profile-assignments",
    "/api/v1/publication-opportunities",
)


@dataclass(frozen=True)
class World:
    authorization: str
    ids: dict[str, list[str]]


@pytest.fixture
def world(make_user: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    from discovery.throttling import DiscoveryRateThrottle
    from publishing.models import Account
    from voice import services as voice
    from workspaces.services import api_token_create, organization_create, workspace_create

    monkeypatch.setattr(DiscoveryRateThrottle, "allow_request", lambda self, request, view: True)
    owner = make_user("fuzz-voice@example.com")
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Fuzz Voice Org")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Fuzz Voice")
    _, token = api_token_create(user=owner, name="fuzz", permissions=["api:read", "api:write"])
    second = voice.voice_profile_create(
        actor=actor,
        workspace_id=workspace.pk,
        name="Second",
        definition={"expertise": ["Testing"], "forbidden_phrases": ["synergy"]},
    )
    default = workspace.voice_profiles.get(is_default=True)
    account = Account.objects.create(
        workspace=workspace,
        provider="mastodon",
        external_id="1",
        username="fuzz",
        instance_url="https://social.example",
    )
    return World(
        authorization=f"Bearer {token}",
        ids={
            "workspace_id": [str(workspace.pk)],
            "voice_profile_id": [str(second.pk), str(default.pk)],
            "account_id": [str(account.pk)],
        },
    )


def _with_real_values(case: Any, world: World, seed: int) -> Any:
    ids = world.ids
    if isinstance(case.query, dict) and "workspace_id" in case.query:
        case.query = {**case.query, "workspace_id": ids["workspace_id"][0]}
    if isinstance(case.body, dict):
        body = dict(case.body)
        if "workspace_id" in body:
            body["workspace_id"] = ids["workspace_id"][0]
        if "voice_profile_id" in body and (seed % 2 or body["voice_profile_id"] is not None):
            body["voice_profile_id"] = ids["voice_profile_id"][seed % 2]
        if "expected_revision" in body:
            body["expected_revision"] = 1
        if isinstance(body.get("platforms"), list):
            body["platforms"] = ["mastodon", "bluesky", "telegram"][: 1 + seed % 3]
        case.body = body
    return case


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    from schemathesis import GenerationMode

    names = [p.name for p in operation.path_parameters]
    fixed_paths = [
        {name: world.ids[name][index % len(world.ids[name])] for name in names}
        for index in range(max((len(world.ids[name]) for name in names), default=1))
    ]
    strategies = [
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    ]
    for fixed in fixed_paths:
        strategies.append(
            operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed or None)
        )
        strategies.append(
            st.tuples(
                operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed or None),
                st.integers(min_value=0, max_value=2**16),
            ).map(lambda pair: _with_real_values(pair[0], world, pair[1]))
        )
    return st.one_of(strategies)


def test_every_voice_and_discovery_operation_is_fuzzed() -> None:
    assert {operation_label(op) for op in OPERATIONS} == EXPECTED_OPERATIONS


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", OPERATIONS, ids=operation_label)
def test_operation_honours_its_contract(operation: Any, world: World) -> None:
    headers = {"Authorization": world.authorization}

    assert_contract_holds(_strategy(operation, world), headers=headers, examples=MAX_EXAMPLES * 2)
