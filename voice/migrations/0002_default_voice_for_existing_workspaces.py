"""Every existing workspace gets its "Default voice" (new ones get it in workspace_create)."""

import uuid

from django.db import migrations
from django.utils import timezone

BATCH = 500
EMPTY_DEFINITION = {
    "boundaries": [],
    "corrections": [],
    "disliked_patterns": [],
    "examples": [],
    "expertise": [],
    "forbidden_phrases": [],
    "formality": "",
    "humor": "",
    "identity_summary": "",
    "interview_answers": [],
    "opinions": [],
    "preferred_language": "",
    "recurring_expressions": [],
    "traits": [],
    "vocabulary": [],
}


def create_default_profiles(apps, schema_editor):
    Workspace = apps.get_model("workspaces", "Workspace")
    VoiceProfile = apps.get_model("voice", "VoiceProfile")
    missing = Workspace.objects.exclude(
        pk__in=VoiceProfile.objects.filter(is_default=True).values("workspace_id")
    ).values_list("pk", flat=True)
    pending = list(missing)
    for start in range(0, len(pending), BATCH):
        now = timezone.now()
        rows = []
        for workspace_id in pending[start : start + BATCH]:
            taken = VoiceProfile.objects.filter(
                workspace_id=workspace_id, name__iexact="Default voice"
            ).exists()
            rows.append(
                VoiceProfile(
                    id=uuid.uuid4(),
                    workspace_id=workspace_id,
                    name="Default voice (2)" if taken else "Default voice",
                    is_default=True,
                    definition=dict(EMPTY_DEFINITION),
                    revision=1,
                    schema_version=1,
                    created_at=now,
                    updated_at=now,
                )
            )
        VoiceProfile.objects.bulk_create(rows)


class Migration(migrations.Migration):
    dependencies = [
        ("voice", "0001_voice_profiles"),
        ("workspaces", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create_default_profiles, migrations.RunPython.noop),
    ]
