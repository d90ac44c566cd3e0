from django.apps import AppConfig


class RepostsConfig(AppConfig):
    name = "reposts"
    verbose_name = "Repost automation"

    def ready(self) -> None:
        from reposts import lifecycle as reposts_lifecycle
        from workspaces.lifecycle import DATA_SUMMARIES

        DATA_SUMMARIES.register(reposts_lifecycle.data_summary)
