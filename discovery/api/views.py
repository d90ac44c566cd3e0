"""``POST /publication-opportunities/discover``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_body
from config.api.responses import respond
from config.api.schema import problems
from config.api.throttling import UserRateThrottle
from discovery import services
from discovery.api import serializers as s
from discovery.throttling import DiscoveryRateThrottle
from workspaces.access import actor_from_request


class DiscoverView(APIView):
    throttle_classes = [UserRateThrottle, DiscoveryRateThrottle]

    @extend_schema(
        operation_id="publication_opportunities_discover",
        request=s.DiscoverInputSerializer,
        responses={
            200: s.DiscoveryResultSerializer,
            **problems(400, 401, 403, 404, 422, 429, 502, 503, 504),
        },
        description="Idea cards with selectable angles and platform treatments, from the "
        "workspace's own material and its voice profile. Reads only: it never creates a draft "
        "or a publication and never calls a provider. Editor or above; counts against the "
        "plan's discovery calls (403 plan_limit); 6 per minute and one at a time per user "
        "(429 with Retry-After).",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.DiscoverInputSerializer, request)
        result = services.discovery_run(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            platforms=body["platforms"],
            focus=body["focus"],
            audience=body["audience"],
            voice_profile_id=body["voice_profile_id"],
            limit=body["limit"],
        )
        return respond(request, s.DiscoveryResultSerializer, result)
