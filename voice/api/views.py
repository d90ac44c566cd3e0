"""Voice profile endpoints: parse, call a service or selector, serialize, respond."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_body, parse_query
from config.api.responses import no_content, respond, respond_page
from config.api.schema import problems
from config.types import ModelId
from voice import selectors, services
from voice.api import serializers as s
from workspaces.access import actor_from_request


def _profile_response(
    request: Request, voice_profile_id: ModelId, status: int = 200, location: str | None = None
) -> Response:
    # Re-read after the write (its transaction has committed): assignments included.
    profile = selectors.voice_profile_get(
        actor=actor_from_request(request), voice_profile_id=voice_profile_id
    )
    return respond(request, s.VoiceProfileSerializer, profile, status=status, location=location)


class VoiceProfileListView(APIView):
    @extend_schema(
        operation_id="voice_profiles_list",
        parameters=[s.VoiceProfileListQuerySerializer],
        responses={200: s.VoiceProfilePageSerializer, **problems(404, 422)},
        description="The workspace's voice profiles, newest first (any active member).",
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.VoiceProfileListQuerySerializer, request)
        page = selectors.voice_profile_page(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.VoiceProfilePageSerializer, page)

    @extend_schema(
        operation_id="voice_profiles_create",
        request=s.VoiceProfileCreateInputSerializer,
        responses={201: s.VoiceProfileSerializer, **problems(400, 404, 409, 422)},
        description="Create a profile (editor or above). Names are unique per workspace, "
        "case-insensitively (409 name_taken).",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.VoiceProfileCreateInputSerializer, request)
        profile = services.voice_profile_create(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            name=body["name"],
            definition=body["definition"],
        )
        location = reverse("voice:voice-profile-detail", args=[profile.pk])
        return _profile_response(request, profile.pk, status=201, location=location)


class VoiceProfileDetailView(APIView):
    @extend_schema(
        operation_id="voice_profiles_get",
        responses={200: s.VoiceProfileSerializer, **problems(404)},
    )
    def get(self, request: Request, voice_profile_id: str) -> Response:
        profile = selectors.voice_profile_get(
            actor=actor_from_request(request), voice_profile_id=voice_profile_id
        )
        return respond(request, s.VoiceProfileSerializer, profile)

    @extend_schema(
        operation_id="voice_profiles_replace",
        request=s.VoiceProfileReplaceInputSerializer,
        responses={200: s.VoiceProfileSerializer, **problems(400, 404, 409, 422)},
        description="Replace the profile's name and definition. expected_revision must be the "
        "stored revision (else 409 revision_conflict and nothing changes); the revision then "
        "goes up by one.",
    )
    def put(self, request: Request, voice_profile_id: str) -> Response:
        body = parse_body(s.VoiceProfileReplaceInputSerializer, request)
        profile = services.voice_profile_replace(
            actor=actor_from_request(request),
            voice_profile_id=voice_profile_id,
            workspace_id=body["workspace_id"],
            name=body["name"],
            definition=body["definition"],
            expected_revision=body["expected_revision"],
        )
        return _profile_response(request, profile.pk)

    @extend_schema(
        operation_id="voice_profiles_delete",
        responses={204: None, **problems(404, 409)},
        description="The default and the last profile cannot be deleted (409). Accounts and "
        "publications that used the profile fall back to the workspace default.",
    )
    def delete(self, request: Request, voice_profile_id: str) -> Response:
        services.voice_profile_delete(
            actor=actor_from_request(request), voice_profile_id=voice_profile_id
        )
        return no_content()


class VoiceProfileDefaultView(APIView):
    @extend_schema(
        operation_id="voice_profiles_make_default",
        request=None,
        responses={200: s.VoiceProfileSerializer, **problems(404)},
        description="Make this the workspace's default profile (the previous default stops "
        "being one).",
    )
    def post(self, request: Request, voice_profile_id: str) -> Response:
        profile = services.voice_profile_make_default(
            actor=actor_from_request(request), voice_profile_id=voice_profile_id
        )
        return _profile_response(request, profile.pk)


class VoiceProfileAssignmentView(APIView):
    @extend_schema(
        operation_id="voice_profile_assignments_put",
        request=s.VoiceProfileAssignmentInputSerializer,
        responses={200: s.VoiceProfileAssignmentSerializer, **problems(400, 404, 422)},
        description="Assign a voice profile to a connected account (null: the account follows "
        "the workspace default). Effective profile: publication override > account assignment "
        "> workspace default.",
    )
    def put(self, request: Request, account_id: str) -> Response:
        body = parse_body(s.VoiceProfileAssignmentInputSerializer, request)
        account = services.voice_profile_assign(
            actor=actor_from_request(request),
            account_id=account_id,
            voice_profile_id=body["voice_profile_id"],
        )
        assigned, effective = selectors.account_voice_profile_ids(account=account)
        payload = {
            "account_id": str(account.pk),
            "workspace_id": str(account.workspace_id),
            "voice_profile_id": assigned,
            "effective_voice_profile_id": effective,
        }
        return respond(request, s.VoiceProfileAssignmentSerializer, payload)
