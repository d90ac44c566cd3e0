"""Schemathesis against the served contract, for the theme API, through
the WSGI app: generated requests (valid ones, ones that use the IDs of real resources, and
deliberately invalid ones) must never answer 500, and every answer must use a declared status
code, a declared content type and the declared schema.

The world, made afresh for each operation (``transaction=True``): an organization owned by the
bearer token's user, a workspace, a theme with a published revision and an image asset. It runs
on both databases: on SQLite, ``flushable_revisions`` lets Django empty the tables afterwards
(the immutability triggers refuse the ``DELETE`` of a flush; PostgreSQL flushes with
``TRUNCATE``, which row triggers do not see).

``HERALD_FUZZ_EXAMPLES`` (default 10) sets the examples per operation and generation mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import strategies as st

from tests.contract_fuzz_support import (
    assert_contract_holds,
    max_examples,
    operation_label,
    operations_under,
)
from tests.themes_support import flushable_revisions, image_bytes
from workspaces.access import Actor

FUZZED_PATHS = (
    "/api/v1/themes",
    "/api/v1/theme-settings",
    "/api/v1/theme-assignments",
    "/api/v1/theme-assets",
)
MAX_EXAMPLES = max_examples(10)


OPERATIONS = operations_under(*FUZZED_PATHS)


@dataclass(frozen=True)
class World:
    authorization: str
    ids: dict[str, str]


__all__ = ["flushable_revisions"]  # a fixture (imported for pytest)


@pytest.fixture
def world(make_user: Any, media_storage: Any, flushable_revisions: None) -> World:
    from themes import services
    from workspaces.services import api_token_create, organization_create, workspace_create

    owner = make_user("fuzz-themes@example.com")
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Fuzz Org")
    workspace = workspace_create(actor=actor, organization_id=organization.pk, name="Fuzz WS")
    theme = services.theme_create(actor=actor, organization_id=organization.pk, name="Fuzz theme")
    services.theme_publish(
        actor=actor,
        theme_id=theme.pk,
        organization_id=organization.pk,
        expected_draft_revision=1,
        expected_published_revision=None,
    )
    asset = services.theme_asset_upload(
        actor=actor,
        organization_id=organization.pk,
        kind="image",
        name="Texture",
        upload=SimpleUploadedFile("t.png", image_bytes(8, 8)),
    )
    _, full = api_token_create(user=owner, name="fuzz", permissions=["api:read", "api:write"])
    return World(
        authorization=f"Bearer {full}",
        ids={
            "organization_id": str(organization.pk),
            "workspace_id": str(workspace.pk),
            "theme_id": str(theme.pk),
            "asset_id": str(asset.pk),
            "revision": "1",
        },
    )


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    from schemathesis import GenerationMode

    names = [p.name for p in operation.path_parameters]
    fixed = {name: world.ids[name] for name in names} or None
    query = {p.name: world.ids[p.name] for p in operation.query if p.name in world.ids}
    strategies = [
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
        operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed),
        operation.as_strategy(
            GenerationMode.POSITIVE, path_parameters=fixed, query=query or None
        ).map(lambda case: _with_real_body_ids(case, world)),
    ]
    return st.one_of(strategies)


def _with_real_body_ids(case: Any, world: World) -> Any:
    if isinstance(case.body, dict):
        real = {
            name: world.ids[name]
            for name in ("organization_id",)
            if isinstance(case.body.get(name), str)
        }
        case.body = {**case.body, **real}
    return case


def test_every_theme_operation_is_fuzzed() -> None:
    assert len(OPERATIONS) == 18


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", OPERATIONS, ids=operation_label)
def test_theme_operation_honours_its_contract(operation: Any, world: World) -> None:
    headers = {"Authorization": world.authorization}

    assert_contract_holds(_strategy(operation, world), headers=headers, examples=MAX_EXAMPLES * 2)
