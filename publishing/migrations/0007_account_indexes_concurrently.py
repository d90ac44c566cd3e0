"""The two indexes on accounts that 0003 and 0005 first built inside their transactions,
built ``CONCURRENTLY`` on PostgreSQL: reads and writes of accounts go on meanwhile.

A database that applied the first versions of 0003 and 0005 has them already: a built index is
skipped (config/db/operations.py). Not atomic; killed half-way, the next ``migrate`` drops an
interrupted build's leftover and builds it again.
"""

from django.db import migrations, models

from config.db.operations import AddIndexConcurrentlyOnPostgres


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("publishing", "0006_profile_url_default_and_backfill"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="account",
            index=models.Index(
                fields=["provider", "external_id"], name="account_provider_external"
            ),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="account",
            index=models.Index(fields=["status", "token_expires_at"], name="account_token_expiry"),
        ),
    ]
