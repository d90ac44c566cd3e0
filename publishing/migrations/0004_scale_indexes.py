"""Indexes that keep the hot reads flat as the tables grow (bench/README.md "Scale benchmark",
tests/publishing/test_query_plans.py):

- ``publication_ws_status_newest`` (workspace, status, created_at DESC, id DESC): a
  status-filtered page of publications is read in order from its cursor, where
  ``publication_ws_status`` (workspace, status) made PostgreSQL read and sort every publication
  of that status. It replaces that index (its leading columns serve the same look-ups).
- ``destination_scheduled_due`` (status, due_at): the dispatcher's due work; with
  ``destination_due`` (status, next_attempt_at) an idle tick read every scheduled destination.

On PostgreSQL both are built with CREATE INDEX CONCURRENTLY (the tables are big in production;
writes go on meanwhile), hence ``atomic = False``; elsewhere (SQLite) plainly.
"""

from django.db import migrations, models

from config.db.operations import AddIndexConcurrentlyOnPostgres, RemoveIndexConcurrentlyOnPostgres


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("publishing", "0003_feed_entries_and_profile_url"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="publication",
            index=models.Index(
                fields=["workspace", "status", "-created_at", "-id"],
                name="publication_ws_status_newest",
            ),
        ),
        RemoveIndexConcurrentlyOnPostgres(
            model_name="publication",
            name="publication_ws_status",
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="destination",
            index=models.Index(fields=["status", "due_at"], name="destination_scheduled_due"),
        ),
    ]
