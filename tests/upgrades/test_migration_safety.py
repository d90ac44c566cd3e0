"""Every migration can run on a live instance: re-runnable after a kill, short locks, and a
schema the previous release still works with.

The rules are checked over every first-party migration (any migration added later is held to
them), and on PostgreSQL ``migrate`` is killed in the middle of each concurrent index build and
run again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.apps import apps
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations
from django.db.migrations.loader import MigrationLoader
from django.db.models import NOT_PROVIDED

from config.db.operations import (
    AddIndexConcurrentlyOnPostgres,
    EnsureDatabaseDefault,
    RemoveIndexConcurrentlyOnPostgres,
)
from tests.upgrades_support import ROOT, manage, process_env, scratch_database

FIRST_PARTY = {
    config.label
    for config in apps.get_app_configs()
    if Path(config.path).is_relative_to(ROOT)
    and not Path(config.path).is_relative_to(ROOT / ".venv")
}
# Operations that change an existing table's schema (and lock it while their transaction lasts).
SCHEMA_CHANGES = (
    migrations.AddField,
    migrations.AlterField,
    migrations.RemoveField,
    migrations.RenameField,
    migrations.AddIndex,
    migrations.RemoveIndex,
    migrations.AddConstraint,
    migrations.RemoveConstraint,
    migrations.AlterUniqueTogether,
    migrations.RunSQL,
)
# What a non-atomic migration may hold: each can run again after a kill part-way through.
RERUNNABLE = (
    AddIndexConcurrentlyOnPostgres,
    RemoveIndexConcurrentlyOnPostgres,
    EnsureDatabaseDefault,
    migrations.RunPython,  # written to skip what is done (a batched backfill)
)


def first_party_migrations() -> list[Any]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return sorted(
        (m for (app, _), m in loader.disk_migrations.items() if app in FIRST_PARTY),
        key=lambda m: (m.app_label, m.name),
    )


def created_models(migration: Any) -> set[str]:
    return {
        op.name.lower() for op in migration.operations if isinstance(op, migrations.CreateModel)
    }


def test_there_are_migrations_to_check() -> None:
    names = {(m.app_label, m.name) for m in first_party_migrations()}
    assert ("publishing", "0004_scale_indexes") in names


def test_concurrent_index_operations_are_rerunnable() -> None:
    """Django's own concurrent operations fail on an interrupted build's invalid leftover."""
    for migration in first_party_migrations():
        for op in migration.operations:
            if isinstance(op, AddIndexConcurrently | RemoveIndexConcurrently):
                assert isinstance(
                    op, AddIndexConcurrentlyOnPostgres | RemoveIndexConcurrentlyOnPostgres
                ), f"{migration.app_label}.{migration.name}: use config.db.operations"


def test_non_atomic_migrations_hold_only_rerunnable_operations() -> None:
    """A non-atomic migration is recorded only at its end; killed half-way it runs again from
    its first operation, which must then succeed on what the first run already did."""
    for migration in first_party_migrations():
        if migration.atomic:
            continue
        for op in migration.operations:
            assert isinstance(op, RERUNNABLE), (
                f"{migration.app_label}.{migration.name}: {type(op).__name__} cannot run twice"
            )


def test_no_backfill_inside_a_schema_change() -> None:
    """RunPython in the same transaction as a change to an existing table keeps that table
    locked for the whole backfill: the backfill goes in a migration of its own, in batches."""
    for migration in first_party_migrations():
        if not migration.atomic:
            continue
        new = created_models(migration)
        changes = [
            op
            for op in migration.operations
            if isinstance(op, SCHEMA_CHANGES) and getattr(op, "model_name", "").lower() not in new
        ]
        code = [op for op in migration.operations if isinstance(op, migrations.RunPython)]
        assert not (changes and code), (
            f"{migration.app_label}.{migration.name} changes a table and runs code in one "
            "transaction"
        )


def test_new_not_null_columns_have_a_database_default() -> None:
    """The previous release inserts rows without the columns it does not know: a NOT NULL column
    added to an existing table needs a database default (db_default), or arrives nullable."""
    for migration in first_party_migrations():
        new = created_models(migration)
        for op in migration.operations:
            if not isinstance(op, migrations.AddField) or op.model_name.lower() in new:
                continue
            field = op.field
            assert field.null or field.db_default is not NOT_PROVIDED, (
                f"{migration.app_label}.{migration.name}: {op.model_name}.{op.name} is NOT NULL "
                "without db_default"
            )


# Released in 0.1.0, before this rule: every instance that upgrades has run it already.
PLAIN_INDEX_BUILDS_RELEASED = {("reposts", "0002_repost_stage_in_flight")}


def test_indexes_on_existing_tables_are_built_concurrently() -> None:
    """A plain ``CREATE INDEX`` on a table that already holds rows blocks its writes until the
    build ends (seconds per million rows): an index on an existing table is built by
    AddIndexConcurrentlyOnPostgres in a non-atomic migration, which the kill-and-rerun test
    below then covers."""
    for migration in first_party_migrations():
        if (migration.app_label, migration.name) in PLAIN_INDEX_BUILDS_RELEASED:
            continue
        new = created_models(migration)
        for op in migration.operations:
            if not isinstance(op, migrations.AddIndex) or op.model_name.lower() in new:
                continue
            assert isinstance(op, AddIndexConcurrentlyOnPostgres), (
                f"{migration.app_label}.{migration.name}: index {op.index.name} on an existing "
                "table is not built concurrently"
            )


# --- Killed in the middle of a concurrent index build (PostgreSQL) ---------------------------


def concurrent_builds() -> list[tuple[str, str, str, str]]:
    """(app, migration, table, index) of every concurrent index build."""
    found = []
    for migration in first_party_migrations():
        for op in migration.operations:
            if isinstance(op, AddIndexConcurrentlyOnPostgres):
                model = apps.get_model(migration.app_label, op.model_name)
                found.append(
                    (migration.app_label, migration.name, model._meta.db_table, op.index.name)
                )
    return found


def previous_of(app: str, name: str) -> str:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    parents = [p for p in loader.graph.node_map[(app, name)].parents if p.key[0] == app]
    return parents[0].key[1] if parents else "zero"


def connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url.replace("postgres://", "postgresql://", 1), autocommit=True)


def index_valid(connection: psycopg.Connection[Any], index: str) -> bool | None:
    row = connection.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = %s",
        [index],
    ).fetchone()
    return None if row is None else bool(row[0])


def migrate_backend(connection: psycopg.Connection[Any], blocker: int) -> tuple[int, str] | None:
    """(pid, query) of the migrating backend while it waits on a lock."""
    row = connection.execute(
        "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid NOT IN (pg_backend_pid(), %s) AND wait_event_type = 'Lock'",
        [blocker],
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def scratch_url() -> Iterator[str]:
    with scratch_database("killrerun") as url:
        yield url


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize(("app", "migration", "table", "index"), concurrent_builds())
def test_migrate_killed_during_a_concurrent_build_runs_again(
    app: str, migration: str, table: str, index: str, scratch_url: str, data_dir: Path
) -> None:
    """A writer's open transaction holds the build in its wait (the index already exists,
    invalid); ``migrate`` is killed there and its connection dropped, as when a container is
    killed. The next ``migrate`` completes, and every index is valid."""
    env = process_env(data_dir, scratch_url)
    manage(ROOT, env, "migrate", app, previous_of(app, migration), "--noinput")
    watcher = connect(scratch_url)
    writer = connect(scratch_url)
    writer_pid = writer.info.backend_pid
    writer.execute("BEGIN")
    writer.execute(f'LOCK TABLE "{table}" IN ROW EXCLUSIVE MODE')  # what an INSERT holds
    process = subprocess.Popen(
        [sys.executable, "manage.py", "migrate", app, migration, "--noinput"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, process.communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "the build never waited on the writer"
            waiting = migrate_backend(watcher, writer_pid)
            if waiting and f'"{index}"' in waiting[1]:
                break
            if waiting:  # an earlier build of this migration on the same table: let it pass
                writer.execute("COMMIT")
                writer.execute("BEGIN")
                writer.execute(f'LOCK TABLE "{table}" IN ROW EXCLUSIVE MODE')
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        watcher.execute("SELECT pg_terminate_backend(%s)", [waiting[0]])
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        writer.execute("COMMIT")
        writer.close()
    try:
        deadline = time.monotonic() + 30
        while (
            migrate_backend(watcher, writer_pid)
            or watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [waiting[0]]
            ).fetchone()
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert index_valid(watcher, index) is False, "the kill left an invalid index behind"

        manage(ROOT, env, "migrate", "--noinput")

        assert index_valid(watcher, index) is True
        invalid = watcher.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE NOT i.indisvalid"
        ).fetchall()
        assert invalid == []
    finally:
        watcher.close()
