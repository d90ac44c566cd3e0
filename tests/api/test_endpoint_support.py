"""The endpoint mixins of tests/endpoint_support.py catch an endpoint that does not answer what
its class declares (a mixin whose tests cannot fail would cover nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from publishing.models import Media
from tests.endpoint_support import (
    MEMBERS_ONLY,
    DetailTests,
    EndpointCase,
    Scene,
    WorkspaceListTests,
)
from tests.publishing_support import make_media
from workspaces.models import User, Workspace

pytestmark = pytest.mark.django_db


class MediaEndpoint(WorkspaceListTests, DetailTests):
    """Media as it is: editors delete, another workspace's item is refused with 403."""

    list_url = "/api/v1/media"
    schema = "Media"
    write_role = "editor"
    foreign_answer = MEMBERS_ONLY

    def make(self, workspace: Workspace, owner: User) -> str:
        return str(make_media(workspace).pk)

    def detail_url(self, obj: str) -> str:
        return f"/api/v1/media/{obj}"


class TestTheMixinsCatchADeviation(EndpointCase):
    """Media's own class (tests/publishing/test_publishing_media.py) passes; each false claim
    about media here must fail."""

    def test_a_foreign_object_declared_unknown_fails(self, scene: Scene) -> None:
        claim = MediaEndpoint()
        claim.foreign_answer = DetailTests.foreign_answer  # the standard: 404, like an unknown ID
        with pytest.raises(AssertionError):
            claim.test_foreign_unknown_ids_and_methods_not_allowed(scene)

    def test_a_role_declared_too_high_fails(self, scene: Scene) -> None:
        claim = MediaEndpoint()
        claim.write_role = "admin"  # an editor may delete media: the refusal never comes
        with pytest.raises(AssertionError, match=r"\(204, "):
            claim.test_refused_without_credentials_scope_or_role(scene)

    def test_a_list_declared_newest_first_in_the_wrong_order_fails(
        self, scene: Scene, monkeypatch: Any
    ) -> None:
        claim = MediaEndpoint()
        made: list[str] = []

        def make_then_age(workspace: Workspace, owner: User) -> str:
            """Each new item is made older than the last: the list's order is then reversed."""
            from datetime import timedelta

            obj = MediaEndpoint.make(claim, workspace, owner)
            if workspace == scene.workspace:
                made.append(obj)
                older = Media.objects.order_by("created_at").first()
                assert older is not None
                Media.objects.filter(pk=obj).update(created_at=older.created_at - timedelta(1))
            return obj

        monkeypatch.setattr(claim, "make", make_then_age)
        with pytest.raises(AssertionError, match="newest first"):
            claim.test_list_pages_the_callers_workspace_only(scene)
