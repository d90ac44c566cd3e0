"""The posting queue's endpoints: a workspace's posting schedule (weekly slots in its time
zone, with the next free ones) and queueing a publication at its next free slot."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import StrictSerializer, parse_body
from config.api.responses import respond
from config.api.schema import ResponseSerializer, problems
from publishing import calendar_feed
from publishing.api import serializers as s
from publishing.api.idempotency import idempotent
from publishing.api.views import IDEMPOTENCY, _publication_response, publication_editor
from publishing.models import Publication
from publishing.services import posting_queue
from workspaces.access import actor_from_request

SCHEDULE_EXAMPLE = {
    "timezone": "Europe/Paris",
    "slots": [
        {"weekday": 0, "time": "09:30", "account_id": None},
        {"weekday": 3, "time": "17:00", "account_id": "0b7c6a52-5a4e-4f0e-9d0a-2f1f1c3c9e11"},
    ],
}


SCHEDULE_ANSWER_EXAMPLE = {
    "workspace_id": "5d8f2c1e-9b3a-4c7d-8e6f-1a2b3c4d5e6f",
    **SCHEDULE_EXAMPLE,
    "next_slots": [
        {
            "account_id": "0b7c6a52-5a4e-4f0e-9d0a-2f1f1c3c9e11",
            "next_free": [
                "2027-03-29T07:30:00Z",
                "2027-04-01T15:00:00Z",
                "2027-04-05T07:30:00Z",
            ],
        }
    ],
    "updated_at": "2027-03-26T10:00:00Z",
}


class SlotSerializer(StrictSerializer):
    weekday = serializers.IntegerField(
        min_value=0, max_value=6, help_text="0 = Monday … 6 = Sunday"
    )
    time = serializers.RegexField(
        r"^([01]\d|2[0-3]):[0-5]\d$",
        max_length=5,
        help_text="Local wall-clock time in the schedule's time zone, HH:MM (24-hour)",
    )
    account_id = serializers.CharField(
        max_length=64,
        required=False,
        allow_null=True,
        default=None,
        help_text="Limit the slot to one account of the workspace; null: every account",
    )


class PostingScheduleInputSerializer(StrictSerializer):
    timezone = serializers.CharField(
        max_length=64, help_text="An IANA time zone name, e.g. Europe/Paris"
    )
    # many=True hands max_length to the ListSerializer; the stubs' __init__ does not list it.
    slots = SlotSerializer(many=True, max_length=posting_queue.MAX_SLOTS)  # type: ignore[call-arg]


class AccountNextSlotsSerializer(serializers.Serializer[Any]):
    account_id = serializers.CharField()
    next_free = serializers.ListField(
        child=serializers.DateTimeField(),
        help_text="The next free slots (UTC) of this account, earliest first; empty when no "
        "slot serves it",
    )


class SlotOutputSerializer(serializers.Serializer[Any]):
    weekday = serializers.IntegerField()
    time = serializers.CharField()
    account_id = serializers.CharField(allow_null=True)


class PostingScheduleSerializer(ResponseSerializer):
    workspace_id = serializers.UUIDField()
    timezone = serializers.CharField()
    slots = SlotOutputSerializer(many=True)
    next_slots = AccountNextSlotsSerializer(many=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class PublicationQueueInputSerializer(StrictSerializer):
    expected_revision = serializers.IntegerField(min_value=1, required=False)
    execution_intent = serializers.ChoiceField(
        choices=Publication.Intent.choices,
        required=False,
        default=Publication.Intent.NORMAL,
        help_text=s.EXECUTION_INTENT_HELP,
    )


class PostingScheduleView(APIView):
    @extend_schema(
        operation_id="posting_schedule_get",
        responses={200: PostingScheduleSerializer, **problems(404)},
        examples=[OpenApiExample("A schedule", value=SCHEDULE_ANSWER_EXAMPLE, response_only=True)],
        description="The workspace's posting schedule (UTC and no slots until set) and, for "
        "each connected account, its next free slots. A slot keeps its local time across "
        "daylight-saving changes; a local time skipped by a change falls one change later "
        "(02:30 → 03:30), a repeated one is its first occurrence.",
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        document = posting_queue.posting_schedule_get(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, PostingScheduleSerializer, document)

    @extend_schema(
        operation_id="posting_schedule_set",
        request=PostingScheduleInputSerializer,
        responses={200: PostingScheduleSerializer, **problems(400, 404, 422)},
        examples=[
            OpenApiExample("Two slots", value=SCHEDULE_EXAMPLE, request_only=True),
            OpenApiExample("The schedule", value=SCHEDULE_ANSWER_EXAMPLE, response_only=True),
        ],
        description=f"Replaces the schedule: an IANA time zone and at most "
        f"{posting_queue.MAX_SLOTS} weekly slots (weekday 0 = Monday, HH:MM local time, "
        "optionally one account of the workspace). A 422 names the failing field.",
    )
    def put(self, request: Request, workspace_id: str) -> Response:
        body = parse_body(PostingScheduleInputSerializer, request)
        document = posting_queue.posting_schedule_set(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            tz_name=body["timezone"],
            slots=[dict(slot) for slot in body["slots"]],
        )
        return respond(request, PostingScheduleSerializer, document)


class PublicationQueueView(APIView):
    @extend_schema(
        operation_id="publications_queue",
        request=PublicationQueueInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={200: s.PublicationSerializer, **problems(400, 404, 409, 422)},
        examples=[OpenApiExample("Queue revision 3", value={"expected_revision": 3})],
        description="Schedules the publication at the earliest slot of the workspace's "
        "posting schedule that is free for every account of its destinations (a slot is free "
        "when no scheduled or published publication of the account is at it), with the checks "
        "of scheduling (409 on a revision mismatch or a state that cannot be scheduled; "
        "readiness; media). 409 `no_free_slot` when none is free in the next "
        f"{posting_queue.HORIZON_DAYS} days.",
    )
    @idempotent(access=publication_editor)
    def post(self, request: Request, publication_id: str) -> Response:
        body = parse_body(PublicationQueueInputSerializer, request)
        publication = posting_queue.publication_queue(
            actor=actor_from_request(request),
            publication_id=publication_id,
            expected_revision=body.get("expected_revision"),
            intent=body["execution_intent"],
        )
        return _publication_response(request, publication)


class CalendarFeedSerializer(ResponseSerializer):
    url = serializers.URLField(
        allow_null=True,
        help_text="The secret iCalendar (text/calendar) URL of the workspace's scheduled posts; "
        "null until one is made (POST). Anyone with it can read the calendar.",
    )
    created_at = serializers.DateTimeField(allow_null=True)


def _calendar_body(request: Request, feed: Any) -> dict[str, Any]:
    if feed is None:
        return {"url": None, "created_at": None}
    return {"url": calendar_feed.calendar_url(request, feed), "created_at": feed.created_at}


CALENDAR_EXAMPLE = {
    "url": "https://herald.example/feeds/calendar/6f1c0e8e2b7a4d05a9c3d1e4f7b2a690.ics",
    "created_at": "2027-01-04T09:30:00Z",
}


class CalendarFeedView(APIView):
    @extend_schema(
        operation_id="calendar_feed_get",
        responses={200: CalendarFeedSerializer, **problems(404)},
        examples=[OpenApiExample("A calendar URL", value=CALENDAR_EXAMPLE, response_only=True)],
        description="The secret URL of the workspace's iCalendar feed (one VEVENT per "
        "scheduled, publishing or published publication from 30 days ago on: UID, DTSTAMP, "
        "DTSTART in UTC, SUMMARY from its text, URL), or null before one is made.",
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        feed = calendar_feed.calendar_feed_get(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, CalendarFeedSerializer, _calendar_body(request, feed))

    @extend_schema(
        operation_id="calendar_feed_rotate",
        request=None,
        responses={200: CalendarFeedSerializer, **problems(404)},
        examples=[OpenApiExample("A new URL", value=CALENDAR_EXAMPLE, response_only=True)],
        description="Makes a new secret URL for the calendar; the previous one stops working.",
    )
    def post(self, request: Request, workspace_id: str) -> Response:
        feed = calendar_feed.calendar_feed_rotate(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, CalendarFeedSerializer, _calendar_body(request, feed))
