"""Published theme revisions are immutable in the database itself: triggers refuse UPDATE and
DELETE on PostgreSQL and SQLite, whatever client writes (raw SQL included)."""

from django.db import migrations

MESSAGE = "published theme revisions are immutable"

POSTGRESQL = [
    f"""
    CREATE OR REPLACE FUNCTION themes_published_revision_immutable() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
    END;
    $$;
    """,
    """
    CREATE TRIGGER themes_publishedrevision_immutable
    BEFORE UPDATE OR DELETE ON themes_publishedrevision
    FOR EACH ROW EXECUTE FUNCTION themes_published_revision_immutable();
    """,
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS themes_publishedrevision_immutable ON themes_publishedrevision;",
    "DROP FUNCTION IF EXISTS themes_published_revision_immutable();",
]
SQLITE = [
    f"""
    CREATE TRIGGER themes_publishedrevision_no_update BEFORE UPDATE ON themes_publishedrevision
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;
    """,
    f"""
    CREATE TRIGGER themes_publishedrevision_no_delete BEFORE DELETE ON themes_publishedrevision
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;
    """,
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS themes_publishedrevision_no_update;",
    "DROP TRIGGER IF EXISTS themes_publishedrevision_no_delete;",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("themes", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRESQL, "sqlite": SQLITE}),
            _run({"postgresql": POSTGRESQL_REVERSE, "sqlite": SQLITE_REVERSE}),
            elidable=False,
        ),
    ]
