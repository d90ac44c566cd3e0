from __future__ import annotations

from typing import Any

from rest_framework import serializers

from config.api.schema import ResponseSerializer
from events.types import EVENT_TYPES


class EventListQuerySerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField()
    after = serializers.CharField(
        required=False,
        allow_blank=False,
        max_length=1024,
        help_text="A `next_cursor` from an earlier page: the events after it. Without it, from "
        "the first event.",
    )
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, required=False)


class EventSerializer(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="The event's position in its workspace's list")
    type = serializers.ChoiceField(choices=sorted(EVENT_TYPES))
    workspace_id = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    # The event's "data" key (the contract's name) shadows Serializer.data in the stubs only.
    data = serializers.JSONField(  # type: ignore[assignment]
        help_text="The affected resource as the API shows it (docs/events.md)"
    )


class EventPageSerializer(ResponseSerializer):
    items = EventSerializer(many=True)
    next_cursor = serializers.CharField(
        help_text="Where to continue: pass it as `after`, also when this page is empty"
    )
    has_more = serializers.BooleanField(help_text="More events wait after this page")
