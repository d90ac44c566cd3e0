"""Voice profile conflicts (409)."""

from __future__ import annotations

from config.errors import ConflictError


class VoiceProfileNameTakenError(ConflictError):
    """Another resource in the same scope (a workspace, a voice profile, an organization's
    workspace) already has this name."""

    title = "Name taken"
    code = "name_taken"
    default_detail = "A voice profile with this name already exists in the workspace."


class DefaultVoiceProfileError(ConflictError):
    """The workspace's default voice profile cannot be deleted; make another profile the default
    first."""

    title = "Default voice profile"
    code = "default_voice_profile"
    default_detail = (
        "The workspace's default voice profile cannot be deleted; make another profile the "
        "default first."
    )


class LastVoiceProfileError(ConflictError):
    """The workspace's last voice profile cannot be deleted."""

    title = "Last voice profile"
    code = "last_voice_profile"
    default_detail = "The workspace's last voice profile cannot be deleted."
