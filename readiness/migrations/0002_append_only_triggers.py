"""Storage-layer guard of the readiness ledgers: triggers reject every UPDATE and DELETE.

PostgreSQL: one trigger function raising ``insufficient_privilege``, a row trigger per table.
SQLite: ``RAISE(ABORT, …)`` triggers per table and statement kind. (TRUNCATE is not guarded on
PostgreSQL: only the database owner can issue it, and test teardown uses it.) Any other
database gets no trigger; Django still refuses the writes.
"""

from django.db import migrations

TABLES = (
    "readiness_approvalreview",
    "readiness_certificationrun",
    "readiness_certificationcheck",
    "readiness_runtimecontrol",
)
MESSAGE = "readiness ledgers are append-only"


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            "CREATE OR REPLACE FUNCTION readiness_ledger_append_only() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN "
            f"RAISE EXCEPTION '{MESSAGE}: % on %', TG_OP, TG_TABLE_NAME "
            "USING ERRCODE = 'insufficient_privilege'; END $$",
            params=None,  # no parameters: the % placeholders belong to RAISE
        )
        for table in TABLES:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION readiness_ledger_append_only()"
            )
    elif vendor == "sqlite":
        for table in TABLES:
            for statement in ("UPDATE", "DELETE"):
                schema_editor.execute(
                    f"CREATE TRIGGER {table}_no_{statement.lower()} BEFORE {statement} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}: {statement} on {table}'); END"
                )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        schema_editor.execute("DROP FUNCTION IF EXISTS readiness_ledger_append_only()")
    elif vendor == "sqlite":
        for table in TABLES:
            for statement in ("update", "delete"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_{statement}")


class Migration(migrations.Migration):
    dependencies = [("readiness", "0001_ledgers")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
