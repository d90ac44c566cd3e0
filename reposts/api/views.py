"""Repost automation endpoints: parse, call a service or selector, serialize, respond."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_body, parse_query
from config.api.responses import no_content, respond
from config.api.schema import problems
from reposts import selectors, services
from reposts.api import serializers as s
from workspaces.access import actor_from_request


def _settings_response(request: Request, workspace_id: str) -> Response:
    view = selectors.repost_settings_get(
        actor=actor_from_request(request), workspace_id=workspace_id
    )
    return respond(request, s.RepostSettingsSerializer, view)


class RepostSettingsView(APIView):
    @extend_schema(
        operation_id="repost_automation_get",
        parameters=[s.RepostSettingsQuerySerializer],
        responses={200: s.RepostSettingsSerializer, **problems(404, 422)},
        description="The workspace's repost automation: accounts it can repost from or through "
        "(its own, and other workspaces' accounts reachable through grants), grants, policies, "
        "the settings revision and the 50 most recent executions with their stage history. "
        "Any active member may read; can_manage is true only for a workspace admin.",
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.RepostSettingsQuerySerializer, request)
        return _settings_response(request, query["workspace_id"])

    @extend_schema(
        operation_id="repost_automation_replace",
        request=s.RepostSettingsReplaceInputSerializer,
        responses={200: s.RepostSettingsSerializer, **problems(400, 404, 409, 422)},
        description="Replace the whole policy set (workspace admin). expected_revision must be "
        "the current revision (409 revision_conflict otherwise). A policy with the id of an "
        "existing one updates it; policies left out are deleted and their pending executions "
        "skipped.",
    )
    def put(self, request: Request) -> Response:
        body = parse_body(s.RepostSettingsReplaceInputSerializer, request)
        services.repost_settings_replace(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            expected_revision=body["expected_revision"],
            policies=body["policies"],
        )
        return _settings_response(request, body["workspace_id"])


class RepostGrantListView(APIView):
    @extend_schema(
        operation_id="repost_account_grants_create",
        request=s.RepostGrantCreateInputSerializer,
        responses={201: s.RepostGrantSerializer, **problems(400, 404, 409, 422)},
        description="Let a workspace repost through an account of another workspace. The caller "
        "must administer both workspaces. Recorded in both workspaces' access audit.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.RepostGrantCreateInputSerializer, request)
        grant = services.repost_grant_create(
            actor=actor_from_request(request),
            source_workspace_id=body["source_workspace_id"],
            target_account_id=body["target_account_id"],
        )
        return respond(
            request,
            s.RepostGrantSerializer,
            selectors.grant_representation(grant, workspace_id=grant.source_workspace_id),
            status=201,
            location=reverse("reposts:repost-grant-detail", args=[grant.pk]),
        )


class RepostGrantDetailView(APIView):
    @extend_schema(
        operation_id="repost_account_grants_delete",
        responses={204: None, **problems(404)},
        description="Revoke a grant (an admin of either workspace). Pending executions that "
        "repost through the account for the source workspace are skipped with an "
        "unavailable_reason. Recorded in both workspaces' access audit.",
    )
    def delete(self, request: Request, grant_id: str) -> Response:
        services.repost_grant_revoke(actor=actor_from_request(request), grant_id=grant_id)
        return no_content()
