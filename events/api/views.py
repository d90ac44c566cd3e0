"""Event endpoints: parse, call a selector, serialize, respond."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_query
from config.api.responses import respond
from config.api.schema import problems
from events import selectors
from events.api import serializers as s
from workspaces.access import actor_from_request


class EventListView(APIView):
    @extend_schema(
        operation_id="events_list",
        parameters=[s.EventListQuerySerializer],
        responses={200: s.EventPageSerializer, **problems(403, 404, 422)},
        description="The workspace's events in the order they happened, oldest first, from the "
        "cursor `after` on: a consumer that missed webhooks catches up here. Workspace members.",
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.EventListQuerySerializer, request)
        page = selectors.event_list(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            after=query.get("after"),
            limit=query["limit"],
        )
        return respond(request, s.EventPageSerializer, page)
