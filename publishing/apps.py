from django.apps import AppConfig


class PublishingConfig(AppConfig):
    name = "publishing"
    verbose_name = "Publishing"

    def ready(self) -> None:
        from publishing import lifecycle as publishing_lifecycle
        from workspaces import lifecycle

        lifecycle.register_data_summary(publishing_lifecycle.data_summary)
        lifecycle.register_blocker_check(publishing_lifecycle.blockers)
