from django.apps import AppConfig


class VoiceConfig(AppConfig):
    name = "voice"
    verbose_name = "Voice profiles"

    def ready(self) -> None:
        # Every new workspace gets its "Default voice" inside workspace_create's transaction
        # (an explicit hook the service calls, not a model signal: workspaces cannot import
        # voice, which depends on it). Existing workspaces got theirs by data migration.
        from publishing.services.publications import VOICE_OVERRIDE
        from voice import lifecycle as voice_lifecycle
        from voice import services
        from workspaces.lifecycle import DATA_SUMMARIES
        from workspaces.services import WORKSPACE_CREATED

        WORKSPACE_CREATED.register(services.voice_profile_create_default)
        DATA_SUMMARIES.register(voice_lifecycle.data_summary)
        # A publication's voice override, set by the publishing services (which cannot import
        # voice, which depends on publishing).
        VOICE_OVERRIDE.register(services.publication_voice_set)
