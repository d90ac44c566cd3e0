"""Reads for voice profiles, and the effective profile of an account or publication."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Prefetch, QuerySet

from config.api.pagination import Page, keyset_page
from config.errors import NotFoundError
from config.types import ModelId
from publishing.models import Account
from voice.models import PublicationVoiceOverride, VoiceProfile, VoiceProfileAssignment
from workspaces.access import Actor, parse_id, require_workspace, require_workspace_role


def _with_assignments(queryset: QuerySet[VoiceProfile]) -> QuerySet[VoiceProfile]:
    live = (
        VoiceProfileAssignment.objects.exclude(account__status=Account.Status.DISCONNECTED)
        .order_by("account_id")
        .only("account_id", "voice_profile_id")
    )
    return queryset.prefetch_related(Prefetch("assignments", queryset=live))


def assigned_account_ids(profile: VoiceProfile) -> list[str]:
    """IDs of the connected accounts assigned to ``profile`` (prefetched by the selectors)."""
    return [str(assignment.account_id) for assignment in profile.assignments.all()]


def voice_profile_page(
    *, actor: Actor, workspace_id: ModelId, limit: int, cursor: str | None
) -> Page[VoiceProfile]:
    pk = require_workspace_role(actor, workspace_id)
    queryset = _with_assignments(VoiceProfile.objects.filter(workspace_id=pk))
    return keyset_page(queryset, list_key=f"voice-profiles:{pk}", limit=limit, cursor=cursor)


def voice_profile_get(*, actor: Actor, voice_profile_id: ModelId) -> VoiceProfile:
    pk = parse_id(voice_profile_id, what="voice profile")
    profile = _with_assignments(VoiceProfile.objects.filter(pk=pk)).first()
    if profile is None:
        raise NotFoundError(f"No voice profile with ID {pk}.")
    require_workspace(actor, profile.workspace_id)
    return profile


def voice_profile_default(*, workspace_id: ModelId) -> VoiceProfile | None:
    return VoiceProfile.objects.filter(workspace_id=workspace_id, is_default=True).first()


def voice_profile_effective(
    *,
    workspace_id: ModelId,
    account_id: ModelId | None = None,
    publication_id: ModelId | None = None,
) -> VoiceProfile | None:
    """The profile a post is written in: the publication's override, else the account's
    assignment, else the workspace default. (No access check: callers have done theirs.)"""
    if publication_id is not None:
        override = (
            PublicationVoiceOverride.objects.filter(
                publication_id=publication_id, voice_profile__workspace_id=workspace_id
            )
            .select_related("voice_profile")
            .first()
        )
        if override is not None:
            return override.voice_profile
    if account_id is not None:
        assignment = (
            VoiceProfileAssignment.objects.filter(
                account_id=account_id, voice_profile__workspace_id=workspace_id
            )
            .select_related("voice_profile")
            .first()
        )
        if assignment is not None:
            return assignment.voice_profile
    return voice_profile_default(workspace_id=workspace_id)


def account_voice_profile_ids(*, account: Account) -> tuple[str | None, str | None]:
    """(assigned profile ID or None, effective profile ID or None) of a connected account."""
    assigned = (
        VoiceProfileAssignment.objects.filter(account=account)
        .values_list("voice_profile_id", flat=True)
        .first()
    )
    effective = voice_profile_effective(workspace_id=account.workspace_id, account_id=account.pk)
    return (
        str(assigned) if assigned is not None else None,
        str(effective.pk) if effective is not None else None,
    )


def voice_profile_for_accounts(
    *, workspace_id: ModelId, account_ids: Sequence[ModelId]
) -> VoiceProfile | None:
    """The one profile every given account writes with, when they agree; else the default."""
    profiles = {
        profile.pk: profile
        for profile in (
            voice_profile_effective(workspace_id=workspace_id, account_id=account_id)
            for account_id in account_ids
        )
        if profile is not None
    }
    if len(profiles) == 1:
        return next(iter(profiles.values()))
    return voice_profile_default(workspace_id=workspace_id)


def publication_voice_profile_id(*, publication_id: ModelId) -> str | None:
    value = (
        PublicationVoiceOverride.objects.filter(publication_id=publication_id)
        .values_list("voice_profile_id", flat=True)
        .first()
    )
    return str(value) if value is not None else None
