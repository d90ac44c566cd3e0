"""Theme references ``{kind, id, version}`` and the error paths of the theme API that the other
theme tests do not walk: which built-ins and organization themes a reference may name (and at
which version), forged and foreign cursors, paging past the built-ins, and the asset content
endpoint's organization and token checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from config.api.pagination import encode_cursor
from config.errors import FieldValidationError, NotFoundError
from tests.problem_asserts import assert_invalid, assert_problem
from tests.themes_support import create_theme, image_bytes, manifest, replace_draft, upload_asset
from themes.builtins import BUILT_INS
from themes.errors import ThemeNotPublishedError
from themes.references import HERALD_DEFAULT, Reference, reference_check, reference_from_input
from themes.services import theme_create, theme_delete, theme_publish
from workspaces.access import Actor
from workspaces.models import User

pytestmark = pytest.mark.django_db

WHERE = "body.reference"


def check(reference: Reference, organization: Any) -> Any:
    return reference_check(reference, organization_id=organization.pk, location=WHERE)


def invalid(reference: Reference, organization: Any) -> list[dict[str, Any]]:
    with pytest.raises(FieldValidationError) as excinfo:
        check(reference, organization)
    return excinfo.value.errors


def published_theme(user: User, organization: Any, name: str, revisions: int = 1) -> Any:
    actor = Actor(user=user)
    theme = theme_create(actor=actor, organization_id=organization.pk, name=name)
    for number in range(revisions):
        theme_publish(
            actor=actor,
            theme_id=theme.pk,
            organization_id=organization.pk,
            expected_draft_revision=1,
            expected_published_revision=number or None,
        )
    theme.refresh_from_db()
    return theme


# --- Built-ins ------------------------------------------------------------------------------


def test_a_built_in_reference_names_a_built_in_at_its_version(organization: Any) -> None:
    for built_in in BUILT_INS:
        assert check(Reference("built_in", built_in.id), organization) is None
        assert check(Reference("built_in", built_in.id, 1), organization) is None
    assert Reference("built_in", "neutral", None) == HERALD_DEFAULT


def test_an_unknown_built_in_is_reported_at_the_id_with_a_short_value(organization: Any) -> None:
    assert invalid(Reference("built_in", "n" * 200), organization) == [
        {"location": f"{WHERE}.id", "message": "No built-in theme has this ID.", "value": "n" * 64}
    ]


def test_a_built_in_at_another_version_is_reported_at_the_version(organization: Any) -> None:
    assert invalid(Reference("built_in", "paper", 2), organization) == [
        {
            "location": f"{WHERE}.version",
            "message": "The built-in paper is at version 1.",
            "value": 2,
        }
    ]


# --- Organization themes ----------------------------------------------------------------------


def test_an_organization_reference_names_a_published_revision(
    user: User, organization: Any
) -> None:
    theme = published_theme(user, organization, "Brand", revisions=2)
    for version in (None, 1, 2):
        assert check(Reference("organization", str(theme.pk), version), organization) == theme
    for version in (0, 3):
        assert invalid(Reference("organization", str(theme.pk), version), organization) == [
            {
                "location": f"{WHERE}.version",
                "message": "The theme has published revisions 1 to 2.",
                "value": version,
            }
        ]


def test_a_draft_only_theme_cannot_be_referenced(user: User, organization: Any) -> None:
    theme = theme_create(actor=Actor(user=user), organization_id=organization.pk, name="Draft")
    with pytest.raises(ThemeNotPublishedError):
        check(Reference("organization", str(theme.pk)), organization)


def test_unknown_foreign_and_deleted_themes_are_not_found(user: User, organization: Any) -> None:
    from workspaces.services import organization_create

    other = organization_create(actor=Actor(user=user), name="Other")
    foreign = published_theme(user, other, "Foreign")
    deleted = published_theme(user, organization, "Gone")
    theme_delete(actor=Actor(user=user), theme_id=deleted.pk, organization_id=organization.pk)
    for theme_id in ("not-a-uuid", str(foreign.pk), str(deleted.pk)):
        with pytest.raises(NotFoundError):
            check(Reference("organization", theme_id), organization)


def test_a_reference_from_input_keeps_its_three_parts() -> None:
    assert reference_from_input({"kind": "built_in", "id": "paper"}) == Reference(
        "built_in", "paper", None
    )
    reference = reference_from_input({"kind": "organization", "id": "x", "version": 3})
    assert reference.as_dict() == {"kind": "organization", "id": "x", "version": 3}


def test_the_api_reports_reference_errors_at_the_field(
    owner_client: APIClient, organization: Any, workspace: Any
) -> None:
    response = owner_client.put(
        f"/api/v1/theme-assignments/{workspace.pk}",
        {"reference": {"kind": "built_in", "id": "neutral", "version": 7}},
        format="json",
    )
    assert_invalid(response, "body.reference.version")
    draft = create_theme(owner_client, organization, "Unpublished")
    response = owner_client.put(
        "/api/v1/theme-settings/organization",
        {
            "organization_id": str(organization.pk),
            "default_reference": {"kind": "organization", "id": draft["draft"]["theme_id"]},
        },
        format="json",
    )
    assert_problem(response, 409, "theme_not_published")


# --- Pages and cursors ------------------------------------------------------------------------


def test_the_available_page_continues_past_the_built_ins_through_published_themes(
    owner_client: APIClient, user: User, organization: Any, workspace: Any
) -> None:
    themes = [published_theme(user, organization, f"Brand {n}") for n in range(3)]
    query = {"workspace_id": str(workspace.pk), "limit": len(BUILT_INS) + 1}
    first = owner_client.get("/api/v1/themes/available", query).json()
    assert [i["reference"]["id"] for i in first["items"]][-1] == str(themes[-1].pk)  # newest
    second = owner_client.get(
        "/api/v1/themes/available", {**query, "cursor": first["next_cursor"]}
    ).json()
    assert [i["reference"]["id"] for i in second["items"]] == [str(t.pk) for t in themes[1::-1]]
    assert second["next_cursor"] is None
    # From the last built-in, a page of two ends inside the organization's themes.
    last_built_in = encode_cursor(f"themes-available:{workspace.pk}", ["built_in", 5])
    query["limit"] = 2
    page = owner_client.get("/api/v1/themes/available", {**query, "cursor": last_built_in}).json()
    assert [i["reference"]["id"] for i in page["items"]] == [BUILT_INS[6].id, str(themes[2].pk)]
    after = owner_client.get(
        "/api/v1/themes/available", {**query, "cursor": page["next_cursor"]}
    ).json()
    assert [i["reference"]["id"] for i in after["items"]] == [str(t.pk) for t in themes[1::-1]]
    assert after["next_cursor"] is None


@pytest.mark.parametrize(
    "values", [["elsewhere", 1], ["built_in", "three"], ["organization"], "not a list"]
)
def test_a_signed_available_cursor_of_the_wrong_shape_is_invalid(
    owner_client: APIClient, workspace: Any, values: Any
) -> None:
    cursor = encode_cursor(f"themes-available:{workspace.pk}", values)
    response = owner_client.get(
        "/api/v1/themes/available", {"workspace_id": str(workspace.pk), "cursor": cursor}
    )
    assert_invalid(response, "query.cursor")


def test_revision_pages_go_newest_first_and_refuse_a_wrong_cursor(
    owner_client: APIClient, user: User, organization: Any
) -> None:
    theme = published_theme(user, organization, "Brand", revisions=3)
    path = f"/api/v1/themes/{theme.pk}/revisions"
    query = {"organization_id": str(organization.pk), "limit": 2}
    first = owner_client.get(path, query).json()
    assert [item["revision"] for item in first["items"]] == [3, 2]
    rest = owner_client.get(path, {**query, "cursor": first["next_cursor"]}).json()
    assert ([item["revision"] for item in rest["items"]], rest["next_cursor"]) == ([1], None)
    for values in (["two"], [2, 1]):
        forged = encode_cursor(f"theme-revisions:{theme.pk}", values)
        assert_invalid(owner_client.get(path, {**query, "cursor": forged}), "query.cursor")
    other = published_theme(user, organization, "Other", revisions=2)
    foreign = owner_client.get(
        f"/api/v1/themes/{other.pk}/revisions", {**query, "limit": 1}
    ).json()["next_cursor"]
    assert_invalid(owner_client.get(path, {**query, "cursor": foreign}), "query.cursor")


# --- Asset content ----------------------------------------------------------------------------


def test_asset_content_of_an_unknown_organization_is_not_found(
    owner_client: APIClient, organization: Any, media_storage: Any
) -> None:
    record = upload_asset(owner_client, organization, image_bytes()).json()
    path = f"/api/v1/theme-assets/{record['id']}/content"
    unknown = "00000000-0000-4000-8000-000000000000"
    assert_problem(owner_client.get(path, {"organization_id": unknown}), 404, "not_found")
    assert owner_client.get(path, {"organization_id": str(organization.pk)}).status_code == 200


def test_a_token_bound_to_another_organizations_workspace_cannot_read_content(
    owner_client: APIClient,
    bearer_client: Callable[..., APIClient],
    user: User,
    organization: Any,
    media_storage: Any,
) -> None:
    from workspaces.services import organization_create, workspace_create

    other = organization_create(actor=Actor(user=user), name="Other")
    elsewhere = workspace_create(actor=Actor(user=user), organization_id=other.pk, name="There")
    record = upload_asset(owner_client, organization, image_bytes()).json()
    bound = bearer_client(user, workspace=elsewhere)
    response = bound.get(
        f"/api/v1/theme-assets/{record['id']}/content", {"organization_id": str(organization.pk)}
    )
    assert_problem(response, 403, "token_workspace_scope")


# --- Draft names ------------------------------------------------------------------------------


def test_renaming_a_draft_to_another_themes_name_is_a_conflict(
    owner_client: APIClient, organization: Any
) -> None:
    create_theme(owner_client, organization, "Taken")
    theme = create_theme(owner_client, organization, "Mine")
    response = replace_draft(owner_client, organization, theme, manifest(), name="Taken")
    assert_problem(response, 409, "theme_name_taken")
    renamed = replace_draft(owner_client, organization, theme, manifest(), name="  Renamed  ")
    assert renamed.status_code == 200, renamed.content[:300]
    assert renamed.json()["summary"]["name"] == "Renamed"
