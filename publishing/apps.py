from django.apps import AppConfig


class PublishingConfig(AppConfig):
    name = "publishing"
    verbose_name = "Publishing"

    def ready(self) -> None:
        from config import health
        from providers.feed import FEED_ENTRIES
        from providers.quota import QUOTA_LEDGER
        from publishing import checks  # also registers the system checks
        from publishing import lifecycle as publishing_lifecycle
        from publishing.feed_entries import FeedEntryStore
        from publishing.quota_ledger import QuotaDays
        from publishing.readiness_accounts import PublishingAccounts
        from readiness.catalog import ACCOUNTS
        from workspaces.lifecycle import BLOCKER_CHECKS, DATA_SUMMARIES

        DATA_SUMMARIES.register(publishing_lifecycle.data_summary)
        BLOCKER_CHECKS.register(publishing_lifecycle.blockers)
        # The built-in feed adapter (a layer below) stores its entries in publishing's tables.
        FEED_ENTRIES.register(FeedEntryStore())
        # Networks' daily API quotas (YouTube) are counted in publishing's tables.
        QUOTA_LEDGER.register(QuotaDays())
        # Readiness decides over publishing's accounts and OAuth apps without importing this app.
        ACCOUNTS.register(PublishingAccounts())
        # /ready fails with "credentials" when the configured keys open no stored credential.
        health.READINESS_CHECKS.register(
            health.ReadinessCheck(
                "credentials",
                checks.readiness_check,
                "HERALD_CREDENTIALS_KEY opens none of the stored provider credentials.",
            )
        )
