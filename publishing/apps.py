from django.apps import AppConfig


class PublishingConfig(AppConfig):
    name = "publishing"
    verbose_name = "Publishing"

    def ready(self) -> None:
        from config import health
        from providers.feed import FEED_ENTRIES
        from publishing import checks  # also registers the system checks
        from publishing import lifecycle as publishing_lifecycle
        from publishing.feed_entries import FeedEntryStore
        from publishing.readiness_catalog import PublishingCatalog
        from readiness import catalog as readiness_catalog
        from workspaces import lifecycle

        lifecycle.register_data_summary(publishing_lifecycle.data_summary)
        lifecycle.register_blocker_check(publishing_lifecycle.blockers)
        # The built-in feed adapter (a layer below) stores its entries in publishing's tables.
        FEED_ENTRIES.register(FeedEntryStore())
        # Readiness decides over publishing's providers and accounts without importing this app.
        readiness_catalog.install(PublishingCatalog())
        # /ready fails with "credentials" when the configured keys open no stored credential.
        health.register_readiness_check(
            "credentials",
            checks.readiness_check,
            "HERALD_CREDENTIALS_KEY opens none of the stored provider credentials.",
        )
