from django.apps import AppConfig


class VoiceConfig(AppConfig):
    name = "voice"
    verbose_name = "Voice profiles"

    def ready(self) -> None:
        # Every new workspace gets its "Default voice" inside workspace_create's transaction
        # (an explicit hook the service calls, not a model signal: workspaces cannot import
        # voice, which depends on it). Existing workspaces got theirs by data migration.
        from publishing.services.publications import register_voice_override_setter
        from voice import lifecycle as voice_lifecycle
        from voice import services
        from workspaces import lifecycle
        from workspaces.services import register_workspace_created

        register_workspace_created(services.voice_profile_create_default)
        lifecycle.register_data_summary(voice_lifecycle.data_summary)
        # A publication's voice override, set by the publishing services (which cannot import
        # voice, which depends on publishing).
        register_voice_override_setter(services.publication_voice_set)
