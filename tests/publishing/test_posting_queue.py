"""The posting queue: a workspace's weekly slots in its time zone (daylight-saving changes
included), the next free slots, queueing a publication at its next free slot."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from rest_framework.test import APIClient

from publishing.models import PostingSchedule
from publishing.services.posting_queue import slot_instants
from tests.problem_asserts import assert_invalid, assert_problem
from tests.publishing_support import API, create_publication, make_account, ok

pytestmark = pytest.mark.django_db


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def schedule_url(workspace: Any) -> str:
    return f"{API}/workspaces/{workspace.pk}/posting-schedule"


def put_schedule(client: APIClient, workspace: Any, tz: str, slots: list[dict[str, Any]]) -> Any:
    return client.put(schedule_url(workspace), {"timezone": tz, "slots": slots}, format="json")


def queue(client: APIClient, publication: dict[str, Any], **body: Any) -> Any:
    return client.post(f"{API}/publications/{publication['id']}/queue", body, format="json")


def _next_free(document: dict[str, Any], account: Any) -> list[str]:
    rows = [r for r in document["next_slots"] if r["account_id"] == str(account.pk)]
    assert len(rows) == 1, document["next_slots"]
    normalized: list[str] = [
        _iso(datetime.fromisoformat(v).astimezone(UTC)) for v in rows[0]["next_free"]
    ]
    return normalized


def _scheduled(body: dict[str, Any]) -> str:
    return _iso(datetime.fromisoformat(body["scheduled_at"]).astimezone(UTC))


def test_empty_schedule_by_default(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    document = ok(owner_client.get(schedule_url(workspace)))
    assert document["timezone"] == "UTC"
    assert document["slots"] == []
    assert _next_free(document, hook) == []
    publication = create_publication(owner_client, workspace, [str(hook.pk)])
    body = assert_problem(
        queue(owner_client, publication, expected_revision=1), 409, "no_free_slot"
    )
    assert "56 days" in body["detail"]


def test_spring_forward_slot_in_the_gap_falls_after_the_change(
    owner_client: APIClient, workspace: Any
) -> None:
    """02:30 does not exist in Europe/Paris on 28 March 2027 (02:00 CET → 03:00 CEST): the slot
    falls at 03:30 CEST (01:30 UTC); the next Sunday it is 02:30 CEST again (00:30 UTC)."""
    hook = make_account(workspace, "discord_webhook")
    with time_machine.travel(_utc(2027, 3, 27, 12), tick=False):
        ok(put_schedule(owner_client, workspace, "Europe/Paris", [{"weekday": 6, "time": "02:30"}]))
        document = ok(owner_client.get(schedule_url(workspace)))
        assert _next_free(document, hook) == [
            "2027-03-28T01:30:00Z",
            "2027-04-04T00:30:00Z",
            "2027-04-11T00:30:00Z",
        ]
        first = create_publication(owner_client, workspace, [str(hook.pk)])
        second = create_publication(owner_client, workspace, [str(hook.pk)])
        assert _scheduled(ok(queue(owner_client, first, expected_revision=1))) == (
            "2027-03-28T01:30:00Z"
        )
        assert _scheduled(ok(queue(owner_client, second, expected_revision=1))) == (
            "2027-04-04T00:30:00Z"
        )


def test_fall_back_keeps_local_time_and_a_repeated_time_counts_once(
    owner_client: APIClient, workspace: Any
) -> None:
    """Europe/Paris leaves summer time on 31 October 2027 (03:00 CEST → 02:00 CET): a 09:30
    slot is 07:30 UTC before and 08:30 UTC after; 02:30 happens twice and is its first."""
    hook = make_account(workspace, "discord_webhook")
    slots = [
        {"weekday": 5, "time": "09:30"},
        {"weekday": 6, "time": "09:30"},
        {"weekday": 6, "time": "02:30"},
    ]
    with time_machine.travel(_utc(2027, 10, 29, 12), tick=False):
        ok(put_schedule(owner_client, workspace, "Europe/Paris", slots))
        schedule = PostingSchedule.objects.get(workspace=workspace)
        instants = list(slot_instants(schedule, str(hook.pk), _utc(2027, 10, 29, 12), days=9))
        assert [_iso(i) for i in instants] == [
            "2027-10-30T07:30:00Z",  # Saturday 09:30 CEST
            "2027-10-31T00:30:00Z",  # Sunday 02:30, first occurrence (CEST), once
            "2027-10-31T08:30:00Z",  # Sunday 09:30 CET
            "2027-11-06T08:30:00Z",
            "2027-11-07T01:30:00Z",
            "2027-11-07T08:30:00Z",
        ]
        publications = [create_publication(owner_client, workspace, [str(hook.pk)]) for _ in "abc"]
        got = [_scheduled(ok(queue(owner_client, p, expected_revision=1))) for p in publications]
    assert got == ["2027-10-30T07:30:00Z", "2027-10-31T00:30:00Z", "2027-10-31T08:30:00Z"]


def test_occupied_slots_are_skipped_and_requeue_keeps_its_own(
    owner_client: APIClient, workspace: Any
) -> None:
    hook = make_account(workspace, "discord_webhook")
    other = make_account(workspace, "discord_webhook", external_id="2")
    with time_machine.travel(_utc(2027, 1, 3, 12), tick=False):  # a Sunday
        ok(
            put_schedule(
                owner_client,
                workspace,
                "UTC",
                [{"weekday": 0, "time": "09:30"}, {"weekday": 1, "time": "09:30"}],
            )
        )
        # A publication scheduled by time at Monday's slot occupies it; a draft does not.
        taken = create_publication(owner_client, workspace, [str(hook.pk)])
        ok(
            owner_client.post(
                f"{API}/publications/{taken['id']}/schedule",
                {"scheduled_at": "2027-01-04T09:30:00Z"},
                format="json",
            )
        )
        create_publication(owner_client, workspace, [str(hook.pk)])  # stays a draft
        first = create_publication(owner_client, workspace, [str(hook.pk)])
        assert _scheduled(ok(queue(owner_client, first, expected_revision=1))) == (
            "2027-01-05T09:30:00Z"
        )
        # Queueing it again keeps its own slot rather than moving past itself.
        assert _scheduled(ok(queue(owner_client, first))) == "2027-01-05T09:30:00Z"
        second = create_publication(owner_client, workspace, [str(hook.pk)])
        assert _scheduled(ok(queue(owner_client, second))) == "2027-01-11T09:30:00Z"
        # Another account's slots are its own.
        third = create_publication(owner_client, workspace, [str(other.pk)])
        assert _scheduled(ok(queue(owner_client, third))) == "2027-01-04T09:30:00Z"
        document = ok(owner_client.get(schedule_url(workspace)))
    assert _next_free(document, hook) == [
        "2027-01-12T09:30:00Z",
        "2027-01-18T09:30:00Z",
        "2027-01-19T09:30:00Z",
    ]
    assert _next_free(document, other)[0] == "2027-01-05T09:30:00Z"


def test_slots_limited_to_an_account(owner_client: APIClient, workspace: Any) -> None:
    a = make_account(workspace, "discord_webhook", external_id="a")
    b = make_account(workspace, "discord_webhook", external_id="b")
    with time_machine.travel(_utc(2027, 1, 3, 12), tick=False):  # a Sunday
        body = ok(
            put_schedule(
                owner_client,
                workspace,
                "America/New_York",
                [
                    {"weekday": 2, "time": "10:00", "account_id": None},
                    {"weekday": 0, "time": "08:00", "account_id": str(a.pk)},
                ],
            )
        )
        # Stored sorted by weekday and time.
        assert body["slots"] == [
            {"weekday": 0, "time": "08:00", "account_id": str(a.pk)},
            {"weekday": 2, "time": "10:00", "account_id": None},
        ]
        assert _next_free(body, a) == [
            "2027-01-04T13:00:00Z",
            "2027-01-06T15:00:00Z",
            "2027-01-11T13:00:00Z",
        ]
        assert _next_free(body, b) == [
            "2027-01-06T15:00:00Z",
            "2027-01-13T15:00:00Z",
            "2027-01-20T15:00:00Z",
        ]
        # Both accounts: the earliest slot serving and free for both.
        both = create_publication(owner_client, workspace, [str(a.pk), str(b.pk)])
        queued = ok(queue(owner_client, both, expected_revision=1))
        assert _scheduled(queued) == "2027-01-06T15:00:00Z"
        assert queued["status"] == "scheduled"
        assert {d["status"] for d in queued["destinations"]} == {"scheduled"}
        only_a = create_publication(owner_client, workspace, [str(a.pk)])
        assert _scheduled(ok(queue(owner_client, only_a))) == "2027-01-04T13:00:00Z"
        only_b = create_publication(owner_client, workspace, [str(b.pk)])
        assert _scheduled(ok(queue(owner_client, only_b))) == "2027-01-13T15:00:00Z"


def test_queue_follows_the_rules_of_scheduling(owner_client: APIClient, workspace: Any) -> None:
    hook = make_account(workspace, "discord_webhook")
    ok(put_schedule(owner_client, workspace, "UTC", [{"weekday": 0, "time": "09:30"}]))
    publication = create_publication(owner_client, workspace, [str(hook.pk)])
    assert_problem(queue(owner_client, publication, expected_revision=2), 409, "revision_conflict")
    assert_invalid(queue(owner_client, publication, expected_revision=0), "body.expected_revision")
    ok(queue(owner_client, publication, expected_revision=1))
    ok(owner_client.post(f"{API}/publications/{publication['id']}/cancel", {}, format="json"))
    assert_problem(queue(owner_client, publication), 409, "publication_state")
    assert_problem(
        owner_client.post(
            f"{API}/publications/00000000-0000-4000-8000-000000000000/queue", {}, format="json"
        ),
        404,
        "not_found",
    )


def test_schedule_validation_names_the_field(
    owner_client: APIClient, workspace: Any, organization: Any, user: Any
) -> None:
    from workspaces.access import Actor
    from workspaces.services import workspace_create

    elsewhere = workspace_create(actor=Actor(user=user), organization_id=organization.pk, name="B")
    foreign = make_account(elsewhere, "discord_webhook")
    mine = make_account(workspace, "discord_webhook")
    assert_invalid(put_schedule(owner_client, workspace, "Europe/Atlantis", []), "body.timezone")
    assert_invalid(put_schedule(owner_client, workspace, "+02:00", []), "body.timezone")
    assert_invalid(
        put_schedule(
            owner_client,
            workspace,
            "UTC",
            [
                {"weekday": 0, "time": "24:00"},
                {"weekday": 7, "time": "09:00"},
                {"weekday": 0, "time": "9:00"},
            ],
        ),
        "body.slots[0].time",
        "body.slots[1].weekday",
        "body.slots[2].time",
    )
    assert_invalid(
        put_schedule(
            owner_client,
            workspace,
            "UTC",
            [
                {"weekday": 0, "time": "09:00", "account_id": str(foreign.pk)},
                {"weekday": 0, "time": "09:00", "account_id": "nope"},
                {"weekday": 1, "time": "09:00", "account_id": str(mine.pk)},
                {"weekday": 1, "time": "09:00", "account_id": str(mine.pk)},
            ],
        ),
        "body.slots[0].account_id",
        "body.slots[1].account_id",
        "body.slots[3]",
    )
    too_many = [{"weekday": i % 7, "time": f"{i // 7:02d}:00"} for i in range(101)]
    assert_invalid(put_schedule(owner_client, workspace, "UTC", too_many), "body.slots")
    assert_invalid(
        owner_client.put(schedule_url(workspace), {"timezone": "UTC"}, format="json"),
        "body.slots",
    )
    # Nothing was stored by the refused requests.
    assert not PostingSchedule.objects.filter(workspace=workspace).exists()
    hundred = too_many[:100]
    assert len(ok(put_schedule(owner_client, workspace, "UTC", hundred))["slots"]) == 100


def test_publication_list_filters_by_scheduled_window(
    owner_client: APIClient, workspace: Any
) -> None:
    hook = make_account(workspace, "discord_webhook")
    with time_machine.travel(_utc(2027, 1, 3, 12), tick=False):  # a Sunday
        ok(
            put_schedule(
                owner_client,
                workspace,
                "UTC",
                [{"weekday": 0, "time": "09:30"}, {"weekday": 2, "time": "09:30"}],
            )
        )
        monday, wednesday, next_monday = (
            create_publication(owner_client, workspace, [str(hook.pk)]) for _ in "abc"
        )
        for publication in (monday, wednesday, next_monday):
            ok(queue(owner_client, publication))
        draft = create_publication(owner_client, workspace, [str(hook.pk)])
    url = f"{API}/publications?workspace_id={workspace.pk}"

    def listed(query: str) -> set[str]:
        return {p["id"] for p in ok(owner_client.get(url + query))["items"]}

    assert listed("") == {monday["id"], wednesday["id"], next_monday["id"], draft["id"]}
    assert listed("&scheduled_after=2027-01-04T09:30:00Z") == {
        monday["id"],
        wednesday["id"],
        next_monday["id"],
    }
    assert listed(
        "&scheduled_after=2027-01-04T09:31:00Z&scheduled_before=2027-01-11T09:30:00Z"
    ) == {wednesday["id"]}
    assert listed("&scheduled_before=2027-01-06T09:30:00%2B00:00") == {monday["id"]}
    assert listed("&scheduled_after=2027-01-06T10:30:00%2B01:00") == {
        wednesday["id"],
        next_monday["id"],
    }
    assert_invalid(owner_client.get(url + "&scheduled_after=monday"), "query.scheduled_after")
    assert_invalid(
        owner_client.get(
            url + "&scheduled_after=2027-01-11T00:00:00Z&scheduled_before=2027-01-04T00:00:00Z"
        ),
        "query.scheduled_before",
    )
    assert_invalid(
        owner_client.get(
            url + "&scheduled_after=2027-01-04T00:00:00Z&scheduled_before=2027-01-04T00:00:00Z"
        ),
        "query.scheduled_before",
    )
