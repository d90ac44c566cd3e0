"""Writes for voice profiles: create, replace (revision-checked), delete, make default, assign
to an account, override for a publication. Each service owns its transaction.

Lock order: workspace → voice profile. Replacing a profile locks only its row (the revision
check happens under that lock, so two replacements with the same ``expected_revision`` cannot
both win); creating, deleting and changing the default lock the workspace row first, so the
"exactly one default" and "never delete the last profile" rules see a stable set of profiles.
Assigning locks the account, then the profile; a publication override locks the profile under
the publishing service's publication lock. A profile deleted meanwhile is then simply unknown
(404), never a dangling reference.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, RevisionConflictError, field_error
from config.types import ModelId
from publishing.models import Account, Publication
from voice.definition import DefinitionError, Text, clean_definition, clean_text
from voice.errors import (
    DefaultVoiceProfileError,
    LastVoiceProfileError,
    VoiceProfileNameTakenError,
)
from voice.models import (
    DEFAULT_PROFILE_NAME,
    NAME_MAX_LENGTH,
    PublicationVoiceOverride,
    VoiceProfile,
    VoiceProfileAssignment,
)
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import Workspace, WorkspaceMembership

NAME_RULE = Text(NAME_MAX_LENGTH, required=True, one_line=True)


def _clean_name(name: Any) -> str:
    text, error = clean_text(name, NAME_RULE)
    if error is not None:
        raise FieldValidationError.at("body.name", error)
    return text


def _clean(definition: Any) -> dict[str, Any]:
    try:
        return clean_definition(definition)
    except DefinitionError as exc:
        raise FieldValidationError(
            [
                field_error(f"body.definition.{path}" if path else "body.definition", message)
                for path, message in exc.errors
            ]
        ) from exc


def _lock_workspace(workspace_id: ModelId) -> None:
    list(Workspace.objects.select_for_update().filter(pk=workspace_id).values_list("pk", flat=True))


def _save_named(profile: VoiceProfile, **save_kwargs: Any) -> None:
    try:
        with transaction.atomic():
            profile.save(**save_kwargs)
    except IntegrityError as exc:
        if (
            VoiceProfile.objects.filter(
                workspace_id=profile.workspace_id, name__iexact=profile.name
            )
            .exclude(pk=profile.pk)
            .exists()
        ):
            raise VoiceProfileNameTakenError() from exc
        raise


def _locked_profile(pk: Any) -> VoiceProfile | None:
    """The profile, re-read under its row lock (held until the caller's transaction ends): the
    revision check of a replacement happens here, never on a copy read before the lock."""
    return VoiceProfile.objects.select_for_update().filter(pk=pk).first()


def _profile_workspace_id(voice_profile_id: ModelId) -> tuple[Any, Any]:
    pk = parse_id(voice_profile_id, what="voice profile")
    workspace_id = VoiceProfile.objects.filter(pk=pk).values_list("workspace_id", flat=True).first()
    if workspace_id is None:
        raise NotFoundError(f"No voice profile with ID {pk}.")
    return pk, workspace_id


# --- Lifecycle ------------------------------------------------------------------------------


def voice_profile_create_default(workspace: Workspace) -> VoiceProfile:
    """The "Default voice" of a new workspace (called inside ``workspace_create``)."""
    return VoiceProfile.objects.create(
        workspace=workspace, name=DEFAULT_PROFILE_NAME, is_default=True
    )


@transaction.atomic
def voice_profile_create(
    *, actor: Actor, workspace_id: ModelId, name: Any, definition: Any = None
) -> VoiceProfile:
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    cleaned_name = _clean_name(name)
    cleaned = _clean({} if definition is None else definition)
    _lock_workspace(access.workspace.pk)
    # A workspace always has its default; one that somehow has none gets this profile.
    has_default = VoiceProfile.objects.filter(workspace=access.workspace, is_default=True).exists()
    profile = VoiceProfile(
        workspace=access.workspace,
        name=cleaned_name,
        definition=cleaned,
        is_default=not has_default,
    )
    _save_named(profile, force_insert=True)
    return profile


@transaction.atomic
def voice_profile_replace(
    *,
    actor: Actor,
    voice_profile_id: ModelId,
    workspace_id: ModelId,
    name: Any,
    definition: Any,
    expected_revision: int,
) -> VoiceProfile:
    """PUT: replace name and definition if ``expected_revision`` is the stored revision (else
    409 ``revision_conflict`` and nothing changes); the revision then goes up by one."""
    pk, profile_workspace_id = _profile_workspace_id(voice_profile_id)
    require_workspace(actor, profile_workspace_id, role=WorkspaceMembership.Role.EDITOR)
    if str(workspace_id) != str(profile_workspace_id):
        raise FieldValidationError.at(
            "body.workspace_id",
            "Must be the workspace of this voice profile.",
            value=str(workspace_id)[:64],
        )
    cleaned_name = _clean_name(name)
    cleaned = _clean(definition)
    profile = _locked_profile(pk)
    if profile is None:  # deleted since it was looked up
        raise NotFoundError(f"No voice profile with ID {pk}.")
    if profile.revision != expected_revision:
        raise RevisionConflictError(
            f"The voice profile is at revision {profile.revision}, not {expected_revision}; "
            "reload it and try again.",
            current_revision=profile.revision,
        )
    profile.name = cleaned_name
    profile.definition = cleaned
    profile.revision = profile.revision + 1
    profile.updated_at = timezone.now()
    _save_named(profile, update_fields=["name", "definition", "revision", "updated_at"])
    return profile


@transaction.atomic
def voice_profile_delete(*, actor: Actor, voice_profile_id: ModelId) -> None:
    """The default and the last profile cannot be deleted (409). Accounts assigned to the
    deleted profile, and publications that chose it, fall back to the workspace default."""
    pk, workspace_id = _profile_workspace_id(voice_profile_id)
    require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    _lock_workspace(workspace_id)
    profile = VoiceProfile.objects.select_for_update().filter(pk=pk).first()
    if profile is None:
        raise NotFoundError(f"No voice profile with ID {pk}.")
    if not VoiceProfile.objects.filter(workspace_id=workspace_id).exclude(pk=pk).exists():
        raise LastVoiceProfileError()
    if profile.is_default:
        raise DefaultVoiceProfileError()
    profile.delete()


@transaction.atomic
def voice_profile_make_default(*, actor: Actor, voice_profile_id: ModelId) -> VoiceProfile:
    pk, workspace_id = _profile_workspace_id(voice_profile_id)
    require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    _lock_workspace(workspace_id)
    profile = VoiceProfile.objects.select_for_update().filter(pk=pk).first()
    if profile is None:
        raise NotFoundError(f"No voice profile with ID {pk}.")
    if profile.is_default:
        return profile
    now = timezone.now()
    # Unset first: the partial unique index allows one default per workspace at any moment.
    VoiceProfile.objects.filter(workspace_id=workspace_id, is_default=True).update(
        is_default=False, updated_at=now
    )
    profile.is_default = True
    profile.updated_at = now
    profile.save(update_fields=["is_default", "updated_at"])
    return profile


# --- Assignments and overrides --------------------------------------------------------------


def _profile_in_workspace(voice_profile_id: ModelId, workspace_id: ModelId) -> VoiceProfile:
    """The profile, locked so that a concurrent deletion cannot leave a reference behind."""
    pk = parse_id(voice_profile_id, what="voice profile")
    profile = (
        VoiceProfile.objects.select_for_update().filter(pk=pk, workspace_id=workspace_id).first()
    )
    if profile is None:
        raise NotFoundError(f"No voice profile with ID {pk} in this workspace.")
    return profile


@transaction.atomic
def voice_profile_assign(
    *, actor: Actor, account_id: ModelId, voice_profile_id: ModelId | None
) -> Account:
    """``PUT /voice-profile-assignments/{account_id}``: the account writes with this profile;
    ``None`` removes the assignment (the account follows the workspace default again)."""
    pk = parse_id(account_id, what="account")
    account = (  # locked: concurrent assignments of one account are serialized
        Account.objects.select_for_update()
        .filter(pk=pk)
        .exclude(status=Account.Status.DISCONNECTED)
        .first()
    )
    if account is None:
        raise NotFoundError(f"No connected account with ID {pk}.")
    require_workspace(actor, account.workspace_id, role=WorkspaceMembership.Role.EDITOR)
    if voice_profile_id is None:
        VoiceProfileAssignment.objects.filter(account=account).delete()
        return account
    profile = _profile_in_workspace(voice_profile_id, account.workspace_id)
    VoiceProfileAssignment.objects.update_or_create(
        account=account,
        defaults={"voice_profile": profile, "assigned_at": timezone.now()},
    )
    return account


def publication_voice_set(*, publication: Publication, voice_profile_id: ModelId | None) -> None:
    """Record (or, with ``None``, clear) a publication's voice override. Called by the
    publishing services inside their transaction, after their own access checks."""
    if voice_profile_id is None:
        PublicationVoiceOverride.objects.filter(publication=publication).delete()
        return
    profile = _profile_in_workspace(voice_profile_id, publication.workspace_id)
    PublicationVoiceOverride.objects.update_or_create(
        publication=publication, defaults={"voice_profile": profile}
    )
