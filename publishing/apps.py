from django.apps import AppConfig


class PublishingConfig(AppConfig):
    name = "publishing"
    verbose_name = "Publishing"

    def ready(self) -> None:
        from publishing import lifecycle as publishing_lifecycle
        from publishing.readiness_catalog import PublishingCatalog
        from readiness import catalog as readiness_catalog
        from workspaces import lifecycle

        lifecycle.register_data_summary(publishing_lifecycle.data_summary)
        lifecycle.register_blocker_check(publishing_lifecycle.blockers)
        # Readiness decides over publishing's providers and accounts without importing this app.
        readiness_catalog.install(PublishingCatalog())
