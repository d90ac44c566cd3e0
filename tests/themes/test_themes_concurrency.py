"""Races the theme services must win (PostgreSQL: row locks; SQLite ignores ``select_for_update``
and serializes writers anyway)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from config.errors import DomainError
from tests.themes_support import image_bytes
from themes import services
from themes.builtins import built_in_manifest
from themes.models import Theme, ThemeAsset, ThemeAssetUse
from workspaces.access import Actor
from workspaces.models import User

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def race(*calls: Callable[[], Any]) -> list[str]:
    """Run the calls at once; each outcome is "ok" or the domain error's code."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> str:
        barrier.wait()
        try:
            call()
            return "ok"
        except DomainError as exc:
            return exc.code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def test_concurrent_creates_with_one_name_make_one_theme(user: User, organization: Any) -> None:
    actor = Actor(user=user)

    def create() -> None:
        services.theme_create(actor=actor, organization_id=organization.pk, name="Same name")

    outcomes = race(create, create, create)
    assert sorted(outcomes) == ["ok", "theme_name_taken", "theme_name_taken"]
    assert Theme.objects.filter(organization=organization, name="Same name").count() == 1


@pytest.mark.parametrize("attempt", range(3))
def test_an_asset_is_never_deleted_while_a_draft_starts_using_it(
    user: User, organization: Any, media_storage: Any, attempt: int
) -> None:
    actor = Actor(user=user)
    theme = services.theme_create(
        actor=actor, organization_id=organization.pk, name=f"Race {attempt}"
    )
    asset = services.theme_asset_upload(
        actor=actor,
        organization_id=organization.pk,
        kind="image",
        name="Texture",
        upload=SimpleUploadedFile("t.png", image_bytes(8, 8)),
    )
    manifest = copy.deepcopy(built_in_manifest("neutral"))
    manifest["assets"] = [
        {
            "id": "texture",
            "alt": "",
            "mimeType": "image/png",
            "slot": "background-texture",
            "sourceUrl": f"asset:{asset.pk}",
        }
    ]

    def use() -> None:
        services.theme_draft_replace(
            actor=actor,
            theme_id=theme.pk,
            organization_id=organization.pk,
            expected_revision=1,
            name="Race",
            manifest=manifest,
        )

    def delete() -> None:
        services.theme_asset_delete(actor=actor, asset_id=asset.pk, organization_id=organization.pk)

    used, deleted = race(use, delete)
    # Exactly one wins: the draft uses the asset (and the delete is refused), or the asset is
    # gone (and the draft is told so). Never a draft naming a deleted asset.
    assert (used, deleted) in {("ok", "theme_asset_in_use"), ("invalid", "ok")}
    exists = ThemeAsset.objects.filter(pk=asset.pk).exists()
    assert exists == (used == "ok")
    assert ThemeAssetUse.objects.filter(asset_id=asset.pk).exists() == exists
