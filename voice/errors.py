"""Voice profile conflicts (409, decisions §2)."""

from __future__ import annotations

from config.errors import ConflictError


class VoiceProfileNameTakenError(ConflictError):
    code = "name_taken"
    default_detail = "A voice profile with this name already exists in the workspace."


class DefaultVoiceProfileError(ConflictError):
    code = "default_voice_profile"
    default_detail = (
        "The workspace's default voice profile cannot be deleted; make another profile the "
        "default first."
    )


class LastVoiceProfileError(ConflictError):
    code = "last_voice_profile"
    default_detail = "The workspace's last voice profile cannot be deleted."
