"""What workspace deletion removes of this app (the deletion preview's data-loss summary)."""

from __future__ import annotations

from voice.models import VoiceProfile
from workspaces.models import Workspace


def data_summary(workspace: Workspace) -> dict[str, int]:
    return {"voice_profiles": VoiceProfile.objects.filter(workspace=workspace).count()}
