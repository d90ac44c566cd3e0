"""What one text or image send costs on the delivery hot path (claim, send, outcome): its SQL
statements, what they write, and the Python calls it makes. Long sends (a video the provider
processes) must not make a text or image send costlier (bench/README.md "Burst benchmark":
the figures before and after the long-send engine, and how they were counted)."""

from __future__ import annotations

import cProfile
import pstats
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from publishing.models import Destination
from publishing.services import delivery, publications
from tests.publishing_support import connect, upload
from workspaces.access import Actor

pytestmark = pytest.mark.django_db

# Python calls of one send as cProfile counts them, by database (measured: SQLite 8,927 for a
# text send and 14,156 with one image; PostgreSQL with Redis 9,878 and 15,145). The bounds leave
# about 700 calls for changes elsewhere (each operator OAuth provider registered adds about 120 to
# every send through the adapter cache's key); what they catch is a step that builds querysets
# again on every send (the outcome's two reads as plain querysets were about 1,100 more calls)
# or a new read on every send. The two workspace events of a send (docs/events.md: three reads
# of what they show, two inserts) added about 9,400 calls (SQLite: 18,302 for a text send and
# 21,695 with one image); the PostgreSQL bounds were raised by the same amount.
MAX_CALLS = {
    "sqlite": {"text": 19_000, "image": 22_400},
    "postgresql": {"text": 20_000, "image": 25_300},
}

# The statements of a send that needs nothing of a long send, in order (savepoints left out):
# the claim, the destination's read, readiness, the write recorded before the call, the outcome
# with its event, and the publication settled with its event; each of the two events also
# becomes a workspace event (docs/events.md). One image adds the media read.
TEXT_STATEMENTS = [
    "UPDATE publishing_destination",  # claim
    "SELECT publishing_destination",  # with its publication, account and app
    "SELECT readiness_certificationrun",  # readiness evidence, one UNION query
    "UPDATE publishing_destination",  # write started
    "UPDATE publishing_destination",  # published
    "INSERT publishing_publicationevent",
    "SELECT publishing_destination",  # the workspace event's destination, as the API shows it
    "INSERT events_event",
    "SELECT publishing_publication",  # the publication's lock
    "SELECT publishing_destination",  # its destinations' statuses
    "UPDATE publishing_publication",
    "INSERT publishing_publicationevent",
    "SELECT publishing_publication",  # the workspace event's publication, as the API shows it
    "SELECT publishing_destination",  # with its destinations and their accounts
    "INSERT events_event",
]
LONG_SEND_COLUMNS = ("send_stage", "send_state", "send_check_at")


def shape(sql: str) -> str | None:
    """``VERB table`` of a statement; None for a savepoint."""
    if re.match(r"\s*(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT)", sql):
        return None
    verb = sql.split()[0].upper()
    table = re.search(r'(?:FROM|INTO|UPDATE)\s+"?(\w+)"?', sql)
    return f"{verb} {table.group(1) if table else '?'}"


@pytest.fixture
def queued(
    owner_client: APIClient,
    workspace: Any,
    user: Any,
    mastodon: Any,
    media_storage: Any,
    delivery_queue: Any,
    django_capture_on_commit_callbacks: Any,
) -> Callable[[bool], str]:
    """A publication to the Mastodon stand-in published now; its destination's id, queued."""
    actor = Actor(user=user)
    account = connect(owner_client, workspace, "mastodon", mastodon)
    image = upload(owner_client, workspace)

    def make(with_image: bool) -> str:
        publication = publications.publication_create(
            actor=actor,
            workspace_id=workspace.pk,
            text="One send, counted",
            media_ids=[image["id"]] if with_image else None,
            destinations=[{"account_id": account["id"]}],
        )
        with django_capture_on_commit_callbacks(execute=True):
            publications.publication_publish_now(
                actor=actor, publication_id=publication.pk, expected_revision=1
            )
        delivery_queue.clear()
        return str(Destination.objects.get(publication=publication).pk)

    return make


def send_counted(destination_id: str, capture: Any) -> tuple[list[str], int]:
    """Send the destination; its SQL statements and the Python calls the send made."""
    profile = cProfile.Profile()
    with CaptureQueriesContext(connection) as captured, capture(execute=True):
        profile.enable()
        delivery.delivery_send(destination_id=destination_id)
        profile.disable()
    assert Destination.objects.get(pk=destination_id).status == "published"
    return [q["sql"] for q in captured.captured_queries], pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["text", "image"])
def test_a_send_without_a_long_send_costs_what_it_did(
    kind: str, queued: Callable[[bool], str], django_capture_on_commit_callbacks: Any
) -> None:
    with_image = kind == "image"
    send_counted(queued(with_image), django_capture_on_commit_callbacks)  # warm-up: imports
    statements, calls = send_counted(queued(with_image), django_capture_on_commit_callbacks)
    shapes = [s for s in map(shape, statements) if s]
    expected = list(TEXT_STATEMENTS)
    if with_image:
        expected.insert(2, "SELECT publishing_media")
    assert shapes == expected, "\n".join(statements)
    write, outcome = [s for s in statements if s.startswith("UPDATE")][1:3]
    assert "write_started_at" in write
    if not with_image:  # nothing to upload: the claim keeps its lease, no second write of it
        assert "claim_expires_at" not in write
    else:  # sized to the upload
        assert "claim_expires_at" in write
    assert "published" in outcome
    for column in LONG_SEND_COLUMNS:  # never had a stage: nothing to clear
        assert column not in outcome, outcome
    bound = MAX_CALLS[connection.vendor][kind]
    assert calls <= bound, f"{kind} send: {calls} Python calls (bound {bound})"
