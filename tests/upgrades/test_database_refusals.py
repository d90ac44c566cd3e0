"""A database refusal is a conflict only when it is a duplicate key.

When a release runs against a schema it does not match (the previous release during a rolling
upgrade, or this one after a code-only rollback from a newer schema), the database can refuse a
write for a NOT NULL or check violation. That is not the "connected concurrently" race: connect
answers 503 ``dependency_unavailable`` and logs the database's message for the operator.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from config.db.integrity import is_unique_violation
from tests.problem_asserts import assert_problem
from tests.publishing_support import API, STANDINS, connect_fields, point_settings_at
from workspaces.models import User

pytestmark = pytest.mark.django_db

_REFUSAL = "NOT NULL constraint failed: publishing_account.column_of_a_later_release"


def refuse_new_accounts(condition: str = "not_null_violation") -> None:
    """A trigger that refuses every new account as a NOT NULL violation, as a column added
    without a database default refuses the inserts of code that does not know it (on
    PostgreSQL, with any other error ``condition`` too)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION herald_test_refuse() RETURNS trigger AS $$ BEGIN "
                f"RAISE {condition} USING MESSAGE = '{_REFUSAL}'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER herald_test_refuse BEFORE INSERT ON publishing_account "
                "FOR EACH ROW EXECUTE FUNCTION herald_test_refuse()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER herald_test_refuse BEFORE INSERT ON publishing_account "
                f"BEGIN SELECT RAISE(ABORT, '{_REFUSAL}'); END"
            )


@pytest.mark.parametrize(
    "condition",
    [
        "not_null_violation",
        # A column the code names that the schema lacks (ProgrammingError), PostgreSQL only.
        pytest.param("undefined_column", marks=pytest.mark.postgres),
    ],
)
def test_a_refusal_other_than_a_duplicate_is_503_and_logged(
    condition: str,
    owner_client: APIClient,
    workspace: Any,
    provider_settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    refuse_new_accounts(condition)
    with STANDINS["discord_webhook"]() as server:
        point_settings_at(provider_settings, "discord_webhook", server)
        with caplog.at_level(logging.ERROR, logger="publishing.services.accounts"):
            response = owner_client.post(
                f"{API}/accounts/connect",
                {
                    "workspace_id": str(workspace.pk),
                    "provider": "discord_webhook",
                    "fields": connect_fields("discord_webhook", server),
                },
                format="json",
            )
    body = assert_problem(response, 503, "dependency_unavailable")
    assert body["failing"] == ["database"]
    assert "concurrently" not in body["detail"]
    assert _REFUSAL not in response.content.decode()  # the database's words stay in the log
    assert any(_REFUSAL in record.getMessage() for record in caplog.records)


def test_duplicates_are_told_from_other_refusals() -> None:
    User.objects.create_user("twice@example.com", "pw-0123456789")
    with pytest.raises(IntegrityError) as duplicate, transaction.atomic():
        User.objects.create_user("twice@example.com", "pw-0123456789")
    assert is_unique_violation(duplicate.value)
    with (
        pytest.raises(IntegrityError) as missing,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE workspaces_user SET email = NULL")
    assert not is_unique_violation(missing.value)
