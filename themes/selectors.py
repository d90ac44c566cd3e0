"""Theme reads: built-ins, one theme, summaries, the themes available to a workspace, published
revisions, the organization default, workspace assignments and theme assets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q

from config.api.pagination import Page, decode_cursor, encode_cursor, keyset_page
from config.api.problems import RequestValidationError
from config.errors import NotFoundError, PermissionDeniedError
from config.types import ModelId
from themes.builtins import BUILT_INS, BUILT_INS_BY_ID, DEFAULT_BUILT_IN_ID, BuiltIn
from themes.models import (
    OrganizationThemeSettings,
    PublishedRevision,
    ReferenceKind,
    Theme,
    ThemeAsset,
    ThemeAssetUse,
    ThemeAssignment,
)
from themes.references import HERALD_DEFAULT, Reference
from workspaces.access import (
    ORG_ADMIN_ROLES,
    Actor,
    parse_id,
    require_organization,
    require_workspace,
)
from workspaces.models import Organization, OrganizationMembership, WorkspaceMembership


@dataclass(frozen=True)
class ThemeSummary:
    """A theme's summary. Description, icon pack and schemes describe the latest published
    revision, or the draft while nothing is published; ``name`` is the theme's name (unique in
    its organization, set when the draft is written)."""

    assigned_workspace_count: int
    built_in: bool
    created_at: datetime
    description: str
    draft_revision: int | None
    icon_pack: str
    is_organization_default: bool
    name: str
    organization_id: str | None
    published_revision: int | None
    reference: dict[str, Any]
    supported_schemes: list[str]
    updated_at: datetime


@dataclass(frozen=True)
class SummaryPage:
    items: list[ThemeSummary]
    next_cursor: str | None


@dataclass(frozen=True)
class ThemeDetail:
    theme: Theme
    latest_published: PublishedRevision | None
    summary: ThemeSummary

    @property
    def draft(self) -> dict[str, Any]:
        return {
            "manifest": self.theme.draft_manifest,
            "revision": self.theme.draft_revision,
            "theme_id": str(self.theme.pk),
            "updated_at": self.theme.draft_updated_at,
            "updated_by": self.theme.draft_updated_by,
        }


@dataclass(frozen=True)
class Usage:
    default: Reference
    assigned: Counter[tuple[str, str]]

    def count(self, kind: str, ref_id: str) -> int:
        return self.assigned[(kind, ref_id)]

    def is_default(self, kind: str, ref_id: str) -> bool:
        return self.default.kind == kind and self.default.id == ref_id


def _usage(organization_id: ModelId, *, themes: Iterable[tuple[str, str]] | None = None) -> Usage:
    settings_row = OrganizationThemeSettings.objects.filter(organization_id=organization_id).first()
    default = Reference.of(settings_row) if settings_row is not None else HERALD_DEFAULT
    assignments = ThemeAssignment.objects.filter(organization_id=organization_id)
    if themes is not None:
        wanted = list(themes)
        if not wanted:
            return Usage(default, Counter())
        assignments = assignments.filter(reference_id__in=[ref_id for _, ref_id in wanted])
    counted = Counter(
        (kind, ref_id) for kind, ref_id in assignments.values_list("reference_kind", "reference_id")
    )
    return Usage(default, counted)


def built_in_summary(built_in: BuiltIn, usage: Usage | None = None) -> ThemeSummary:
    manifest = built_in.manifest
    kind = ReferenceKind.BUILT_IN.value
    return ThemeSummary(
        assigned_workspace_count=usage.count(kind, built_in.id) if usage else 0,
        built_in=True,
        created_at=built_in.released_at,
        description=built_in.description,
        draft_revision=None,
        icon_pack=built_in.icon_pack,
        is_organization_default=usage.is_default(kind, built_in.id) if usage else False,
        name=built_in.name,
        organization_id=None,
        published_revision=built_in.version,
        reference={"kind": kind, "id": built_in.id, "version": built_in.version},
        supported_schemes=list(manifest["supportedSchemes"]),
        updated_at=built_in.released_at,
    )


def _theme_summary(
    theme: Theme, manifest: dict[str, Any], usage: Usage, *, with_draft: bool = True
) -> ThemeSummary:
    kind = ReferenceKind.ORGANIZATION.value
    return ThemeSummary(
        assigned_workspace_count=usage.count(kind, str(theme.pk)),
        built_in=False,
        created_at=theme.created_at,
        description=str(manifest.get("description", "")),
        draft_revision=theme.draft_revision if with_draft else None,
        icon_pack=str(manifest["iconPack"]),
        is_organization_default=usage.is_default(kind, str(theme.pk)),
        name=theme.name,
        organization_id=str(theme.organization_id),
        published_revision=theme.published_revision or None,
        reference={"kind": kind, "id": str(theme.pk), "version": theme.published_revision or None},
        supported_schemes=list(manifest["supportedSchemes"]),
        updated_at=theme.updated_at,
    )


def _latest_revisions(themes: list[Theme]) -> dict[Any, PublishedRevision]:
    published = [theme for theme in themes if theme.published_revision]
    if not published:
        return {}
    condition = Q()
    for theme in published:
        condition |= Q(theme_id=theme.pk, revision=theme.published_revision)
    return {revision.theme_id: revision for revision in PublishedRevision.objects.filter(condition)}


def built_in_list() -> list[BuiltIn]:
    return list(BUILT_INS)


def _theme_in(organization: Organization, theme_id: ModelId) -> Theme:
    pk = parse_id(theme_id, what="theme")
    theme = Theme.objects.filter(pk=pk, organization=organization, deleted_at__isnull=True).first()
    if theme is None:
        raise NotFoundError(f"No theme with ID {pk}.")
    return theme


def theme_get(*, actor: Actor, theme_id: ModelId, organization_id: ModelId) -> ThemeDetail:
    organization, _ = require_organization(actor, organization_id)
    return theme_detail(_theme_in(organization, theme_id))


def theme_detail(theme: Theme) -> ThemeDetail:
    latest = _latest_revisions([theme]).get(theme.pk)
    usage = _usage(theme.organization_id, themes=[(ReferenceKind.ORGANIZATION, str(theme.pk))])
    manifest = latest.manifest if latest is not None else theme.draft_manifest
    return ThemeDetail(
        theme=theme, latest_published=latest, summary=_theme_summary(theme, manifest, usage)
    )


def theme_summary_page(
    *, actor: Actor, organization_id: ModelId, limit: int, cursor: str | None
) -> SummaryPage:
    organization, _ = require_organization(actor, organization_id)
    page = keyset_page(
        Theme.objects.filter(organization=organization, deleted_at__isnull=True),
        list_key=f"themes:{organization.pk}",
        limit=limit,
        cursor=cursor,
    )
    latest = _latest_revisions(page.items)
    usage = _usage(
        organization.pk, themes=[(ReferenceKind.ORGANIZATION, str(t.pk)) for t in page.items]
    )
    items = [
        _theme_summary(t, latest[t.pk].manifest if t.pk in latest else t.draft_manifest, usage)
        for t in page.items
    ]
    return SummaryPage(items=items, next_cursor=page.next_cursor)


def theme_available_page(
    *, actor: Actor, workspace_id: ModelId, limit: int, cursor: str | None
) -> SummaryPage:
    """Built-ins first (in their fixed order), then the organization's published themes, newest
    first; summaries only (no drafts, manifests or assets). For workspace administrators."""
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.ADMIN)
    organization_id = access.workspace.organization_id
    list_key = f"themes-available:{access.workspace.pk}"
    position: list[Any] = ["built_in", -1]
    if cursor:
        position = decode_cursor(list_key, cursor)
        if not (
            isinstance(position, list)
            and len(position) in (2, 3)
            and position[0] in ("built_in", "organization")
        ):
            raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query")
    if position[0] == "built_in" and not isinstance(position[1], int):
        raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query")
    usage = _usage(organization_id)
    published = Theme.objects.filter(
        organization_id=organization_id, deleted_at__isnull=True, published_revision__gt=0
    )
    items: list[ThemeSummary] = []
    organization_cursor = None
    if position[0] == "built_in":
        start = position[1] + 1
        rest = BUILT_INS[start:]
        items = [built_in_summary(built_in, usage) for built_in in rest[:limit]]
        if len(items) == limit:
            more = len(rest) > limit or published.exists()
            next_cursor = encode_cursor(list_key, ["built_in", start + limit - 1]) if more else None
            return SummaryPage(items=items, next_cursor=next_cursor)
    else:
        organization_cursor = encode_cursor(f"{list_key}:organization", position[1:])
    remaining = limit - len(items)
    page = keyset_page(
        published, list_key=f"{list_key}:organization", limit=remaining, cursor=organization_cursor
    )
    latest = _latest_revisions(page.items)
    items += [_theme_summary(t, latest[t.pk].manifest, usage, with_draft=False) for t in page.items]
    next_cursor = None
    if page.next_cursor:
        last = page.items[-1]
        next_cursor = encode_cursor(
            list_key, ["organization", last.created_at.isoformat(), str(last.pk)]
        )
    return SummaryPage(items=items, next_cursor=next_cursor)


def theme_revision_page(
    *, actor: Actor, theme_id: ModelId, organization_id: ModelId, limit: int, cursor: str | None
) -> Page[PublishedRevision]:
    """Published revisions, newest (highest number) first, without their manifests."""
    organization, _ = require_organization(actor, organization_id)
    theme = _theme_in(organization, theme_id)
    list_key = f"theme-revisions:{theme.pk}"
    queryset = PublishedRevision.objects.filter(theme=theme).defer("manifest").order_by("-revision")
    if cursor:
        values = decode_cursor(list_key, cursor)
        if len(values) != 1 or not isinstance(values[0], int):
            raise RequestValidationError({"cursor": ["Invalid cursor."]}, location="query")
        queryset = queryset.filter(revision__lt=values[0])
    rows = list(queryset[: limit + 1])
    items = rows[:limit]
    next_cursor = encode_cursor(list_key, [items[-1].revision]) if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)


def theme_revision_get(
    *, actor: Actor, theme_id: ModelId, organization_id: ModelId, revision: int
) -> PublishedRevision:
    organization, _ = require_organization(actor, organization_id)
    theme = _theme_in(organization, theme_id)
    found = PublishedRevision.objects.filter(theme=theme, revision=revision).first()
    if found is None:
        raise NotFoundError(f"The theme has no published revision {revision}.")
    return found


@dataclass(frozen=True)
class DefaultTheme:
    organization_id: str
    default_reference: dict[str, Any]
    updated_at: datetime | None
    updated_by: str | None


def organization_theme_default_get(*, actor: Actor, organization_id: ModelId) -> DefaultTheme:
    organization, _ = require_organization(actor, organization_id)
    return organization_theme_default(organization.pk)


def organization_theme_default(organization_id: ModelId) -> DefaultTheme:
    row = OrganizationThemeSettings.objects.filter(organization_id=organization_id).first()
    if row is None:
        return DefaultTheme(str(organization_id), HERALD_DEFAULT.as_dict(), None, None)
    return DefaultTheme(
        str(organization_id), Reference.of(row).as_dict(), row.updated_at, row.updated_by
    )


@dataclass(frozen=True)
class WorkspaceTheme:
    workspace_id: str
    organization_id: str
    reference: dict[str, Any] | None
    effective_reference: dict[str, Any]
    assigned_at: datetime | None
    assigned_by: str | None

    @property
    def effective_manifest(self) -> dict[str, Any]:
        """The manifest the workspace renders with: the referenced built-in, or the referenced
        (else the latest) published revision of the organization theme."""
        reference = self.effective_reference
        if reference["kind"] == ReferenceKind.BUILT_IN:
            return BUILT_INS_BY_ID.get(
                reference["id"], BUILT_INS_BY_ID[DEFAULT_BUILT_IN_ID]
            ).manifest
        theme = Theme.objects.only("published_revision").get(pk=reference["id"])
        revision = reference["version"] or theme.published_revision
        manifest: dict[str, Any] = PublishedRevision.objects.values_list("manifest", flat=True).get(
            theme_id=theme.pk, revision=revision
        )
        return manifest


def workspace_theme_get(*, actor: Actor, workspace_id: ModelId) -> WorkspaceTheme:
    access = require_workspace(actor, workspace_id)
    return workspace_theme(access.workspace.pk, access.workspace.organization_id)


def workspace_theme(workspace_id: ModelId, organization_id: ModelId) -> WorkspaceTheme:
    row = ThemeAssignment.objects.filter(workspace_id=workspace_id).first()
    if row is not None:
        reference = Reference.of(row).as_dict()
        return WorkspaceTheme(
            str(workspace_id),
            str(organization_id),
            reference,
            reference,
            row.assigned_at,
            row.assigned_by,
        )
    default = organization_theme_default(organization_id).default_reference
    return WorkspaceTheme(str(workspace_id), str(organization_id), None, default, None, None)


# --- Theme assets ----------------------------------------------------------------------------


def theme_asset_page(
    *, actor: Actor, organization_id: ModelId, limit: int, cursor: str | None
) -> Page[ThemeAsset]:
    """Newest first (``created_at`` then ID, descending) with a keyset cursor: assets uploaded
    while a client pages sort before its position, so no page shifts."""
    organization, _ = require_organization(actor, organization_id)
    return keyset_page(
        ThemeAsset.objects.filter(organization=organization),
        list_key=f"theme-assets:{organization.pk}",
        limit=limit,
        cursor=cursor,
    )


def theme_asset_for_content(
    *, actor: Actor, asset_id: ModelId, organization_id: ModelId
) -> ThemeAsset:
    """An asset's bytes. Organization owners and admins read any asset of the organization.
    Whoever renders a published theme reads the assets that live published revisions use: any
    member of the organization, including through a token bound to one of its workspaces. An
    asset that only drafts use (or none) is not theirs to see: 404, as for an unknown ID, so
    the draft inventory stays with the organization's owners and admins."""
    pk_org = parse_id(organization_id, what="organization")
    organization = Organization.objects.filter(pk=pk_org).first()
    if organization is None:
        raise NotFoundError(f"No organization with ID {pk_org}.")
    token = actor.token
    if token is not None and token.workspace_id is not None:
        access = require_workspace(actor, token.workspace_id)
        if access.workspace.organization_id != organization.pk:
            raise PermissionDeniedError(
                "This API token is bound to a workspace of another organization.",
                code="token_workspace_scope",
            )
        sees_drafts = False
    else:
        _, membership = require_organization(
            actor, organization.pk, roles=tuple(OrganizationMembership.Role.values)
        )
        sees_drafts = membership.role in ORG_ADMIN_ROLES
    pk = parse_id(asset_id, what="theme asset")
    assets = ThemeAsset.objects.filter(pk=pk, organization=organization)
    if not sees_drafts:
        assets = assets.filter(
            Exists(
                ThemeAssetUse.objects.filter(
                    asset=OuterRef("pk"), revision__isnull=False, theme__deleted_at__isnull=True
                )
            )
        )
    asset = assets.first()
    if asset is None:
        raise NotFoundError(f"No theme asset with ID {pk}.")
    return asset
