"""Published theme revisions are immutable twice over: Django refuses to change them, and the
database triggers (PostgreSQL and SQLite, migration 0002) refuse raw SQL UPDATE and DELETE."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from config.errors import RevisionConflictError
from tests.themes_support import SQLITE_TRIGGERS, flushable_revisions, sqlite_revision_triggers
from themes import services
from themes.models import ImmutableRevisionError, PublishedRevision, Theme
from workspaces.access import Actor
from workspaces.models import User

__all__ = ["flushable_revisions"]  # a fixture (imported for pytest)


@pytest.fixture
def published(user: User, organization: Any) -> PublishedRevision:
    actor = Actor(user=user)
    theme = services.theme_create(actor=actor, organization_id=organization.pk, name="Brand")
    return services.theme_publish(
        actor=actor,
        theme_id=theme.pk,
        organization_id=organization.pk,
        expected_draft_revision=1,
        expected_published_revision=None,
    )


@pytest.mark.django_db
def test_django_refuses_to_change_a_published_revision(published: PublishedRevision) -> None:
    published.source_revision = 99
    with pytest.raises(ImmutableRevisionError):
        published.save()
    with pytest.raises(ImmutableRevisionError):
        published.delete()
    with pytest.raises(ImmutableRevisionError):
        PublishedRevision.objects.filter(pk=published.pk).update(source_revision=99)
    with pytest.raises(ImmutableRevisionError):
        PublishedRevision.objects.filter(pk=published.pk).delete()
    assert (
        PublishedRevision.objects.values_list("source_revision", flat=True).get(pk=published.pk)
        == 1
    )


@pytest.mark.django_db
def test_raw_sql_update_and_delete_of_a_published_revision_fail(
    published: PublishedRevision,
) -> None:
    table = PublishedRevision._meta.db_table
    before = PublishedRevision.objects.values_list("manifest", "source_revision").get(
        pk=published.pk
    )
    with (
        pytest.raises(IntegrityError, match="immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"UPDATE {table} SET source_revision = 7 WHERE id = %s", [published.pk])  # noqa: S608
    with (
        pytest.raises(IntegrityError, match="immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            f"UPDATE {table} SET manifest = %s WHERE id = %s",  # noqa: S608 (a model's own table)
            ['{"hacked": true}', published.pk],
        )
    with (
        pytest.raises(IntegrityError, match="immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [published.pk])  # noqa: S608
    with (
        pytest.raises(IntegrityError, match="immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608
    assert (
        PublishedRevision.objects.values_list("manifest", "source_revision").get(pk=published.pk)
        == before
    )


@pytest.mark.django_db
def test_new_revisions_can_still_be_inserted(
    published: PublishedRevision, user: User, organization: Any
) -> None:
    revision = services.theme_publish(
        actor=Actor(user=user),
        theme_id=published.theme_id,
        organization_id=organization.pk,
        expected_draft_revision=1,
        expected_published_revision=1,
    )
    assert (revision.revision, revision.source_revision) == (2, 1)
    assert Theme.objects.get(pk=published.theme_id).published_revision == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_with_the_same_expectation_make_one_revision(
    user: User, organization: Any
) -> None:
    actor = Actor(user=user)
    theme = services.theme_create(actor=actor, organization_id=organization.pk, name="Race")
    barrier = threading.Barrier(4)

    def attempt(_: int) -> str:
        barrier.wait()
        try:
            services.theme_publish(
                actor=actor,
                theme_id=theme.pk,
                organization_id=organization.pk,
                expected_draft_revision=1,
                expected_published_revision=None,
            )
            return "published"
        except RevisionConflictError:
            return "conflict"
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = sorted(pool.map(attempt, range(4)))
    assert outcomes == ["conflict", "conflict", "conflict", "published"]
    assert list(
        PublishedRevision.objects.filter(theme=theme).values_list("revision", flat=True)
    ) == [1]


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresql_trigger_is_installed() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
            [PublishedRevision._meta.db_table],
        )
        assert [row[0] for row in cursor.fetchall()] == ["themes_publishedrevision_immutable"]


@pytest.mark.django_db
def test_sqlite_triggers_are_installed() -> None:
    if connection.vendor != "sqlite":
        pytest.skip(
            "SQLite triggers; PostgreSQL has its own (test_postgresql_trigger_is_installed)"
        )
    with connection.cursor() as cursor:
        assert sqlite_revision_triggers(cursor) == SQLITE_TRIGGERS


@pytest.mark.django_db(transaction=True)
def test_committed_revisions_stay_immutable_on_both_databases(
    user: User, organization: Any, flushable_revisions: None
) -> None:
    """Committed (not rolled back) revisions: the triggers refuse raw SQL outside any test
    transaction too; afterwards ``flushable_revisions`` lets the test database be emptied."""
    actor = Actor(user=user)
    theme = services.theme_create(actor=actor, organization_id=organization.pk, name="Committed")
    published = services.theme_publish(
        actor=actor,
        theme_id=theme.pk,
        organization_id=organization.pk,
        expected_draft_revision=1,
        expected_published_revision=None,
    )
    table = PublishedRevision._meta.db_table
    for statement in (
        f"UPDATE {table} SET revision = 5 WHERE id = %s",  # noqa: S608 (a model's own table)
        f"DELETE FROM {table} WHERE id = %s",  # noqa: S608
    ):
        with (
            pytest.raises(IntegrityError, match="immutable"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement, [published.pk])
    assert PublishedRevision.objects.filter(pk=published.pk, revision=1).exists()
