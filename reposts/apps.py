from django.apps import AppConfig


class RepostsConfig(AppConfig):
    name = "reposts"
    verbose_name = "Repost automation"

    def ready(self) -> None:
        from reposts import lifecycle as reposts_lifecycle
        from workspaces import lifecycle

        lifecycle.register_data_summary(reposts_lifecycle.data_summary)
