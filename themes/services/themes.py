"""Theme writes: create, replace the draft, publish, delete; the organization default and
workspace assignments. Each service owns its transaction and locks the theme row it changes."""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, RevisionConflictError, field_error
from config.types import ModelId
from themes.builtins import BUILT_INS_BY_ID
from themes.errors import ThemeInUseError, ThemeNameTakenError
from themes.models import (
    OrganizationThemeSettings,
    PublishedRevision,
    ReferenceKind,
    Theme,
    ThemeAsset,
    ThemeAssetUse,
    ThemeAssignment,
)
from themes.references import HERALD_DEFAULT, Reference, reference_check
from workspaces.access import Actor, parse_id, require_organization, require_workspace
from workspaces.models import WorkspaceMembership

ASSET_SOURCE = re.compile(r"^asset:(?P<id>.+)$")


def _actor_id(actor: Actor) -> str:
    return str(actor.user.pk)


def _locked_theme(*, theme_id: ModelId, organization_id: ModelId) -> Theme:
    pk = parse_id(theme_id, what="theme")
    theme = (
        Theme.objects.select_for_update()
        .filter(pk=pk, organization_id=organization_id, deleted_at__isnull=True)
        .first()
    )
    if theme is None:
        raise NotFoundError(f"No theme with ID {pk}.")
    return theme


def _check_name(name: str, location: str = "body.name") -> str:
    cleaned = name.strip()
    if not 1 <= len(cleaned) <= 80:
        raise FieldValidationError.at(location, "1 to 80 characters.", value=name[:100])
    return cleaned


def _manifest_asset_ids(
    manifest: dict[str, Any], *, organization_id: ModelId, location: str = "body.manifest"
) -> list[Any]:
    """The theme assets the manifest names, checked against the organization's assets: each
    exists, fonts are font assets and images are image assets of the declared type."""
    wanted: list[tuple[str, int, dict[str, Any], str]] = []
    for collection in ("fonts", "assets"):
        for index, item in enumerate(manifest.get(collection, [])):
            match = ASSET_SOURCE.match(item["sourceUrl"])
            if match:
                wanted.append((collection, index, item, match["id"].lower()))
    # Locked until the draft's asset uses are written: a concurrent delete of one of these assets
    # waits, then finds the use and answers 409 (or went first, and the asset is reported missing).
    found = {
        str(asset.pk): asset
        for asset in ThemeAsset.objects.select_for_update().filter(
            organization_id=organization_id, pk__in=[_uuid(asset_id) for *_, asset_id in wanted]
        )
    }
    errors: list[dict[str, Any]] = []
    for collection, index, item, asset_id in wanted:
        where = f"{location}.{collection}[{index}]"
        asset = found.get(asset_id)
        expected_kind = ThemeAsset.Kind.FONT if collection == "fonts" else ThemeAsset.Kind.IMAGE
        if asset is None:
            errors.append(
                field_error(
                    f"{where}.sourceUrl",
                    "No theme asset of this organization has this ID.",
                    value=item["sourceUrl"],
                )
            )
        elif asset.kind != expected_kind:
            errors.append(
                field_error(
                    f"{where}.sourceUrl",
                    f"The asset is a {asset.kind}, not a {expected_kind}.",
                    value=item["sourceUrl"],
                )
            )
        elif collection == "assets" and asset.media_type != item["mimeType"]:
            errors.append(
                field_error(
                    f"{where}.mimeType", f"The asset is {asset.media_type}.", value=item["mimeType"]
                )
            )
    if errors:
        raise FieldValidationError(errors)
    return sorted({found[asset_id].pk for *_, asset_id in wanted})


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _record_uses(theme: Theme, asset_ids: Sequence[ModelId], revision: int | None) -> None:
    ThemeAssetUse.objects.bulk_create(
        [ThemeAssetUse(theme=theme, asset_id=asset_id, revision=revision) for asset_id in asset_ids]
    )


def _base_manifest(
    base: Reference | None, *, organization_id: ModelId
) -> tuple[dict[str, Any], list[Any]]:
    reference = base or HERALD_DEFAULT
    theme = reference_check(
        reference, organization_id=organization_id, location="body.base_reference"
    )
    if theme is None:
        return copy.deepcopy(BUILT_INS_BY_ID[reference.id].manifest), []
    revision = PublishedRevision.objects.get(
        theme=theme, revision=reference.version or theme.published_revision
    )
    uses = ThemeAssetUse.objects.filter(theme=theme, revision=revision.revision)
    return copy.deepcopy(revision.manifest), sorted(uses.values_list("asset_id", flat=True))


def theme_create(
    *,
    actor: Actor,
    organization_id: ModelId,
    name: str,
    description: str | None = None,
    base_reference: Reference | None = None,
) -> Theme:
    """A new theme whose draft (revision 1) is a copy of ``base_reference`` (default: Herald's
    default built-in), renamed."""
    organization, _ = require_organization(actor, organization_id)
    name = _check_name(name)
    manifest, asset_ids = _base_manifest(base_reference, organization_id=organization.pk)
    now = timezone.now()
    theme = Theme(
        organization=organization,
        name=name,
        created_at=now,
        updated_at=now,
        draft_updated_at=now,
        draft_updated_by=_actor_id(actor),
    )
    manifest.update({"id": str(theme.pk), "name": name, "revision": "1"})
    if description is not None:
        manifest["description"] = description
    theme.draft_manifest = manifest
    try:
        with transaction.atomic():
            theme.save(force_insert=True)
            _record_uses(theme, asset_ids, None)
    except IntegrityError as exc:
        raise ThemeNameTakenError() from exc
    return theme


def theme_draft_replace(
    *,
    actor: Actor,
    theme_id: ModelId,
    organization_id: ModelId,
    expected_revision: int,
    name: str,
    manifest: dict[str, Any],
) -> Theme:
    """Replace the draft (name and manifest) if it is still at ``expected_revision``."""
    organization, _ = require_organization(actor, organization_id)
    name = _check_name(name)
    try:
        with transaction.atomic():
            theme = _locked_theme(theme_id=theme_id, organization_id=organization.pk)
            if theme.draft_revision != expected_revision:
                raise RevisionConflictError(
                    f"The draft is at revision {theme.draft_revision}, not {expected_revision}; "
                    "reload it and try again.",
                    current_revision=theme.draft_revision,
                )
            asset_ids = _manifest_asset_ids(manifest, organization_id=organization.pk)
            now = timezone.now()
            theme.name = name
            theme.draft_manifest = manifest
            theme.draft_revision += 1
            theme.draft_updated_at = theme.updated_at = now
            theme.draft_updated_by = _actor_id(actor)
            theme.save(
                update_fields=[
                    "name",
                    "draft_manifest",
                    "draft_revision",
                    "draft_updated_at",
                    "draft_updated_by",
                    "updated_at",
                ]
            )
            ThemeAssetUse.objects.filter(theme=theme, revision__isnull=True).delete()
            _record_uses(theme, asset_ids, None)
    except IntegrityError as exc:
        raise ThemeNameTakenError() from exc
    return theme


def theme_publish(
    *,
    actor: Actor,
    theme_id: ModelId,
    organization_id: ModelId,
    expected_draft_revision: int,
    expected_published_revision: int | None,
) -> PublishedRevision:
    """Publish the draft as the next immutable revision, recording the draft revision it came
    from. Both revision numbers must be what the caller last saw (else 409)."""
    organization, _ = require_organization(actor, organization_id)
    with transaction.atomic():
        theme = _locked_theme(theme_id=theme_id, organization_id=organization.pk)
        current_published = theme.published_revision or None
        if (
            theme.draft_revision != expected_draft_revision
            or current_published != expected_published_revision
        ):
            raise RevisionConflictError(
                "The theme changed since you loaded it: the draft is at revision "
                f"{theme.draft_revision} and the latest published revision is {current_published}.",
                current_draft_revision=theme.draft_revision,
                current_published_revision=current_published,
            )
        asset_ids = sorted(
            ThemeAssetUse.objects.filter(theme=theme, revision__isnull=True).values_list(
                "asset_id", flat=True
            )
        )
        now = timezone.now()
        revision = PublishedRevision.objects.create(
            theme=theme,
            revision=theme.published_revision + 1,
            source_revision=theme.draft_revision,
            manifest=theme.draft_manifest,
            published_at=now,
            published_by=_actor_id(actor),
        )
        _record_uses(theme, asset_ids, revision.revision)
        theme.published_revision = revision.revision
        theme.updated_at = now
        theme.save(update_fields=["published_revision", "updated_at"])
    return revision


def theme_delete(*, actor: Actor, theme_id: ModelId, organization_id: ModelId) -> None:
    """Delete a theme that is neither the organization default nor assigned to a workspace.
    Its published revisions stay (immutable); the theme disappears from every listing."""
    organization, _ = require_organization(actor, organization_id)
    with transaction.atomic():
        theme = _locked_theme(theme_id=theme_id, organization_id=organization.pk)
        reference = {"reference_kind": ReferenceKind.ORGANIZATION, "reference_id": str(theme.pk)}
        is_default = OrganizationThemeSettings.objects.filter(
            organization=organization, **reference
        ).exists()
        assigned = ThemeAssignment.objects.filter(organization=organization, **reference).count()
        if is_default or assigned:
            raise ThemeInUseError(
                "The theme is "
                + " and ".join(
                    part
                    for part in (
                        "the organization default" if is_default else "",
                        f"assigned to {assigned} workspace(s)" if assigned else "",
                    )
                    if part
                )
                + "; choose another theme there first.",
                is_organization_default=is_default,
                assigned_workspace_count=assigned,
            )
        now = timezone.now()
        theme.deleted_at = theme.updated_at = now
        theme.save(update_fields=["deleted_at", "updated_at"])
        ThemeAssetUse.objects.filter(theme=theme).delete()


def organization_theme_default_set(
    *, actor: Actor, organization_id: ModelId, reference: Reference | None
) -> OrganizationThemeSettings | None:
    """Set the organization default theme; ``None`` goes back to Herald's default built-in."""
    organization, _ = require_organization(actor, organization_id)
    with transaction.atomic():
        if reference is None:
            OrganizationThemeSettings.objects.filter(organization=organization).delete()
            return None
        reference_check(
            reference, organization_id=organization.pk, location="body.default_reference", lock=True
        )
        settings_row = OrganizationThemeSettings(
            organization=organization, updated_at=timezone.now(), updated_by=_actor_id(actor)
        )
        reference.store(settings_row)
        settings_row.save()  # insert or replace the organization's one row
    return settings_row


def workspace_theme_assign(
    *, actor: Actor, workspace_id: ModelId, reference: Reference | None
) -> ThemeAssignment | None:
    """Assign a theme to a workspace (workspace admin); ``None`` returns it to the default."""
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
    workspace = access.workspace
    with transaction.atomic():
        if reference is None:
            ThemeAssignment.objects.filter(workspace=workspace).delete()
            return None
        reference_check(
            reference,
            organization_id=workspace.organization_id,
            location="body.reference",
            lock=True,
        )
        assignment = ThemeAssignment(
            workspace=workspace,
            organization_id=workspace.organization_id,
            assigned_at=timezone.now(),
            assigned_by=_actor_id(actor),
        )
        reference.store(assignment)
        assignment.save()
    return assignment
