"""Theme references ``{kind, id, version}``: a built-in or an organization theme."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from config.errors import FieldValidationError, NotFoundError
from config.types import ModelId
from themes.builtins import BUILT_INS_BY_ID, DEFAULT_BUILT_IN_ID
from themes.errors import ThemeNotPublishedError
from themes.models import ReferenceKind, Theme, ThemeReferenceFields


@dataclass(frozen=True)
class Reference:
    kind: str
    id: str
    version: int | None = None

    @classmethod
    def of(cls, row: ThemeReferenceFields) -> Reference:
        return cls(row.reference_kind, row.reference_id, row.reference_version)

    def store(self, row: ThemeReferenceFields) -> None:
        row.reference_kind, row.reference_id, row.reference_version = (
            self.kind,
            self.id,
            self.version,
        )

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "version": self.version}


HERALD_DEFAULT = Reference(ReferenceKind.BUILT_IN, DEFAULT_BUILT_IN_ID, None)


def reference_from_input(data: dict[str, Any]) -> Reference:
    return Reference(str(data["kind"]), str(data["id"]), data.get("version"))


def reference_check(
    reference: Reference, *, organization_id: ModelId, location: str, lock: bool = False
) -> Theme | None:
    """Check that ``reference`` names a theme the organization can use: a built-in (and one of
    its versions), or a published theme of the organization (and one of its revisions).
    Returns the organization theme (locked when ``lock``), None for a built-in."""
    if reference.kind == ReferenceKind.BUILT_IN:
        built_in = BUILT_INS_BY_ID.get(reference.id)
        if built_in is None:
            raise FieldValidationError.at(
                f"{location}.id", "No built-in theme has this ID.", value=reference.id[:64]
            )
        if reference.version is not None and reference.version != built_in.version:
            raise FieldValidationError.at(
                f"{location}.version",
                f"The built-in {built_in.id} is at version {built_in.version}.",
                value=reference.version,
            )
        return None
    queryset = Theme.objects.filter(organization_id=organization_id, deleted_at__isnull=True)
    if lock:
        queryset = queryset.select_for_update()
    theme_pk = _uuid_or_none(reference.id)
    theme = queryset.filter(pk=theme_pk).first() if theme_pk else None
    if theme is None:
        raise NotFoundError(f"No theme with ID {reference.id[:64]!r} in this organization.")
    if theme.published_revision == 0:
        raise ThemeNotPublishedError()
    if reference.version is not None and not 1 <= reference.version <= theme.published_revision:
        raise FieldValidationError.at(
            f"{location}.version",
            f"The theme has published revisions 1 to {theme.published_revision}.",
            value=reference.version,
        )
    return theme


def _uuid_or_none(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except (TypeError, ValueError):
        return None
