"""Identity endpoints. Each action: parse, call a service or selector, serialize, respond."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.openapi import DeleteBodyAutoSchema
from config.api.pagination import page_query_serializer
from config.api.request import parse_body, parse_query
from config.api.responses import no_content, respond, respond_page
from config.api.schema import problems
from config.types import ModelId
from workspaces import selectors, services
from workspaces.access import (
    actor_from_request,
    request_user,
    require_organization,
    require_workspace,
)
from workspaces.api import serializers as s
from workspaces.api.serializers import CURRENT_PASSWORD_MAX_LENGTH
from workspaces.authentication import check_password_within_budget
from workspaces.mail import base_url
from workspaces.models import OrganizationMembership

PageQuery = page_query_serializer(default=20, maximum=100, name="PageQuery")
PAGE_PARAMS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        description="Page size, 1 to 100 (default 20)",
    ),
    OpenApiParameter(
        "cursor",
        {"type": "string", "minLength": 1, "maxLength": 1024},
        description="Opaque cursor from next_cursor of the previous page of the same list",
    ),
]


def _roles(actor: Any, workspaces: list[Any]) -> dict[str, str]:
    # ``workspace_list_for_actor`` annotates the caller's role: no query here.
    return {str(w.pk): w.caller_role or "" for w in workspaces}


def _org_payload(org: Any, role: str) -> dict[str, Any]:
    return {"id": str(org.pk), "name": org.name, "role": role, "created_at": org.created_at}


class MeView(APIView):
    @extend_schema(operation_id="me_get", responses={200: s.MeSerializer})
    def get(self, request: Request) -> Response:
        actor = actor_from_request(request)
        workspaces = list(selectors.workspace_list_for_actor(actor=actor).order_by("name"))
        org_roles = dict(
            OrganizationMembership.objects.filter(user=actor.user).values_list(
                "organization_id", "role"
            )
        )
        organizations = []
        if actor.token is None or actor.token.workspace_id is None:
            organizations = [
                _org_payload(org, org_roles.get(org.pk, ""))
                for org in selectors.organization_list_for_actor(actor=actor)
            ]
        token = actor.token
        payload = {
            "user": actor.user,
            "organizations": organizations,
            "workspaces": workspaces,
            "token": None
            if token is None
            else {
                "id": token.id,
                "name": token.name,
                "permissions": token.permissions,
                "workspace_id": str(token.workspace_id) if token.workspace_id else None,
                "expires_at": token.expires_at,
            },
        }
        return respond(
            request, s.MeSerializer, payload, context={"roles": _roles(actor, workspaces)}
        )


class OrganizationListView(APIView):
    @extend_schema(
        operation_id="organizations_list",
        parameters=PAGE_PARAMS,
        responses={200: s.OrganizationPageSerializer, **problems(422)},
    )
    def get(self, request: Request) -> Response:
        actor = actor_from_request(request)
        query = parse_query(PageQuery, request)
        page = selectors.organization_page_for_actor(
            actor=actor, limit=query["limit"], cursor=query.get("cursor")
        )
        roles = dict(
            OrganizationMembership.objects.filter(
                user=actor.user, organization__in=page.items
            ).values_list("organization_id", "role")
        )
        payloads = [_org_payload(o, roles.get(o.pk, "")) for o in page.items]
        return respond_page(request, s.OrganizationPageSerializer, page, items=payloads)

    @extend_schema(
        operation_id="organizations_create",
        request=s.OrganizationCreateInputSerializer,
        responses={201: s.OrganizationSerializer, **problems(400, 422)},
    )
    def post(self, request: Request) -> Response:
        actor = actor_from_request(request)
        body = parse_body(s.OrganizationCreateInputSerializer, request)
        organization = services.organization_create(actor=actor, name=body["name"])
        return respond(
            request,
            s.OrganizationSerializer,
            _org_payload(organization, "owner"),
            status=201,
            location=reverse("workspaces:organization-detail", args=[organization.pk]),
        )


class OrganizationDetailView(APIView):
    @extend_schema(
        operation_id="organizations_get", responses={200: s.OrganizationSerializer, **problems(404)}
    )
    def get(self, request: Request, organization_id: str) -> Response:
        actor = actor_from_request(request)
        organization, membership = require_organization(
            actor, organization_id, roles=("owner", "admin", "member")
        )
        return respond(
            request, s.OrganizationSerializer, _org_payload(organization, membership.role)
        )


class WorkspaceListView(APIView):
    @extend_schema(
        operation_id="workspaces_list",
        parameters=PAGE_PARAMS,
        responses={200: s.WorkspacePageSerializer, **problems(422)},
    )
    def get(self, request: Request) -> Response:
        actor = actor_from_request(request)
        query = parse_query(PageQuery, request)
        page = selectors.workspace_page_for_actor(
            actor=actor, limit=query["limit"], cursor=query.get("cursor")
        )
        return respond_page(
            request, s.WorkspacePageSerializer, page, context={"roles": _roles(actor, page.items)}
        )

    @extend_schema(
        operation_id="workspaces_create",
        request=s.WorkspaceCreateInputSerializer,
        responses={201: s.WorkspaceSerializer, **problems(400, 404, 409, 422)},
    )
    def post(self, request: Request) -> Response:
        actor = actor_from_request(request)
        body = parse_body(s.WorkspaceCreateInputSerializer, request)
        workspace = services.workspace_create(
            actor=actor,
            organization_id=body["organization_id"],
            name=body["name"],
            timezone_name=body["timezone"],
        )
        workspace = selectors.workspace_list_for_actor(actor=actor).get(pk=workspace.pk)
        return respond(
            request,
            s.WorkspaceSerializer,
            workspace,
            status=201,
            location=reverse("workspaces:workspace-detail", args=[workspace.pk]),
            context={"roles": {str(workspace.pk): "admin"}},
        )


class WorkspaceDetailView(APIView):
    schema = DeleteBodyAutoSchema()  # DELETE takes {confirm_name, current_password}

    @property
    def session_only(self) -> bool:  # bearer tokens never delete workspaces
        return self.request.method == "DELETE"

    def _render(self, request: Request, workspace_id: ModelId) -> Response:
        actor = actor_from_request(request)
        workspace = selectors.workspace_list_for_actor(actor=actor).get(pk=workspace_id)
        context = {"roles": _roles(actor, [workspace])}
        return respond(request, s.WorkspaceSerializer, workspace, context=context)

    @extend_schema(
        operation_id="workspaces_get", responses={200: s.WorkspaceSerializer, **problems(404)}
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        access = require_workspace(actor_from_request(request), workspace_id)
        return self._render(request, access.workspace.pk)

    @extend_schema(
        operation_id="workspaces_update",
        request=s.WorkspaceUpdateInputSerializer,
        responses={200: s.WorkspaceSerializer, **problems(400, 404, 409, 422)},
    )
    def patch(self, request: Request, workspace_id: str) -> Response:
        body = parse_body(s.WorkspaceUpdateInputSerializer, request)
        workspace = services.workspace_update(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            name=body.get("name"),
            timezone_name=body.get("timezone"),
        )
        return self._render(request, workspace.pk)

    @extend_schema(
        operation_id="workspaces_delete",
        request=s.WorkspaceDeleteInputSerializer,
        responses={204: None, **problems(400, 404, 409, 422)},
        description=(
            "Permanently delete a workspace. Organization owner's browser session only, "
            "authenticated within 15 minutes (or send current_password, which is checked first: "
            "a wrong one is a 403, counted against the client's failed-authentication budget, "
            "429 once spent); confirm_name must be "
            "the exact workspace name; blockers (final_workspace, active_billing, "
            "pending_deliveries) answer 409. Audit and billing records survive."
        ),
    )
    def delete(self, request: Request, workspace_id: str) -> Response:
        # The password, when given, is checked before anything else (the workspace, the role,
        # confirm_name): a wrong one is a 403 that says only "wrong", counted against the
        # client's failed-authentication budget (429 once spent, the right password included).
        # Only a password actually checked here confirms one: anything else given as
        # current_password (a number, an empty or oversized string) is refused by the
        # serializer below, never taken as confirmed.
        data = request.data
        password = data.get("current_password") if isinstance(data, dict) else None
        password_confirmed = False
        if isinstance(password, str) and 0 < len(password) <= CURRENT_PASSWORD_MAX_LENGTH:
            check_password_within_budget(request, request_user(request), password)
            password_confirmed = True
        body = parse_body(s.WorkspaceDeleteInputSerializer, request)
        services.workspace_delete(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            confirm_name=body["confirm_name"],
            password_confirmed=password_confirmed,
            authenticated_at=request.session.get("herald_authenticated_at"),
        )
        return no_content()


class WorkspaceDeletionPreviewView(APIView):
    session_only = True

    @extend_schema(
        operation_id="workspaces_deletion_preview",
        responses={200: s.WorkspaceDeletionPreviewSerializer, **problems(404)},
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        preview = services.workspace_deletion_preview(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, s.WorkspaceDeletionPreviewSerializer, preview)


class WorkspaceUsageView(APIView):
    @extend_schema(
        operation_id="workspaces_usage", responses={200: s.UsageSerializer, **problems(404)}
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        usage = selectors.workspace_usage(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, s.UsageSerializer, usage)


class MemberListView(APIView):
    @extend_schema(
        operation_id="workspace_members_list",
        parameters=PAGE_PARAMS,
        responses={200: s.MemberPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        query = parse_query(PageQuery, request)
        page = selectors.member_page(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.MemberPageSerializer, page)


class MemberDetailView(APIView):
    @extend_schema(
        operation_id="workspace_members_update",
        request=s.MemberUpdateInputSerializer,
        responses={200: s.MemberSerializer, **problems(400, 404, 409, 422)},
    )
    def patch(self, request: Request, workspace_id: str, user_id: str) -> Response:
        body = parse_body(s.MemberUpdateInputSerializer, request)
        membership = services.workspace_member_update(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            user_id=user_id,
            role=body.get("role"),
            status=body.get("status"),
        )
        return respond(request, s.MemberSerializer, membership)

    @extend_schema(
        operation_id="workspace_members_remove", responses={204: None, **problems(404, 409)}
    )
    def delete(self, request: Request, workspace_id: str, user_id: str) -> Response:
        services.workspace_member_remove(
            actor=actor_from_request(request), workspace_id=workspace_id, user_id=user_id
        )
        return no_content()


def _with_accept_link(invitation: Any, raw: str, base: str) -> None:
    """The link on the answer only when the instance could not e-mail it (delivery ``manual``);
    otherwise it went to the invitee's mailbox alone."""
    link = services.invitation_link_for_inviter(invitation, raw, base)
    if link is not None:
        invitation.accept_token = raw
        invitation.accept_url = link


class InvitationListView(APIView):
    @extend_schema(
        operation_id="workspace_invitations_list",
        parameters=PAGE_PARAMS,
        responses={200: s.InvitationPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        query = parse_query(PageQuery, request)
        page = selectors.invitation_page(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.InvitationPageSerializer, page)

    @extend_schema(
        operation_id="workspace_invitations_create",
        request=s.InvitationCreateInputSerializer,
        responses={201: s.InvitationWithTokenSerializer, **problems(400, 404, 409, 422, 429)},
        description=(
            "Invite someone by e-mail address. When this instance sends e-mail, the accept link "
            "goes to the invitee's mailbox only (delivery email, no link in the answer); an "
            "instance that cannot send e-mail answers the link for an administrator to pass on "
            "(delivery manual). Invitations are limited per inviter, per workspace and per "
            "recipient per day (429 with Retry-After)."
        ),
    )
    def post(self, request: Request, workspace_id: str) -> Response:
        body = parse_body(s.InvitationCreateInputSerializer, request)
        base = base_url(request)
        invitation, raw = services.invitation_create(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            email=body["email"],
            role=body["role"],
            base_url=base,
        )
        _with_accept_link(invitation, raw, base)
        return respond(
            request,
            s.InvitationWithTokenSerializer,
            invitation,
            status=201,
            location=reverse("workspaces:invitation-detail", args=[invitation.pk]),
        )


class InvitationResendView(APIView):
    @extend_schema(
        operation_id="invitations_resend",
        request=None,
        responses={200: s.InvitationWithTokenSerializer, **problems(404, 409, 429)},
        description=(
            "Issue a new link (the old one stops working) and send it like a new invitation: "
            "e-mailed to the invitee only, or answered when this instance cannot send e-mail. "
            "Counted against the same daily limits as creating one."
        ),
    )
    def post(self, request: Request, invitation_id: str) -> Response:
        base = base_url(request)
        invitation, raw = services.invitation_resend(
            actor=actor_from_request(request), invitation_id=invitation_id, base_url=base
        )
        _with_accept_link(invitation, raw, base)
        return respond(request, s.InvitationWithTokenSerializer, invitation)


class InvitationDetailView(APIView):
    @extend_schema(operation_id="invitations_revoke", responses={204: None, **problems(404, 409)})
    def delete(self, request: Request, invitation_id: str) -> Response:
        services.invitation_revoke(actor=actor_from_request(request), invitation_id=invitation_id)
        return no_content()


class InvitationAcceptView(APIView):
    @extend_schema(
        operation_id="invitations_accept",
        request=s.InvitationAcceptInputSerializer,
        responses={200: s.MemberSerializer, **problems(400, 404, 409, 422)},
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.InvitationAcceptInputSerializer, request)
        membership = services.invitation_accept(
            actor=actor_from_request(request), token=body["token"]
        )
        return respond(request, s.MemberSerializer, membership)


class AccessAuditView(APIView):
    @extend_schema(
        operation_id="workspaces_access_audit",
        parameters=[
            OpenApiParameter(
                "limit",
                {"type": "integer", "format": "int64", "minimum": 1, "maximum": 200, "default": 50},
                description="Number of events, 1 to 200 (default 50)",
                required=False,
            )
        ],
        responses={200: s.AccessAuditEventSerializer(many=True), **problems(404, 422)},
        description="Access audit events, newest first. Active workspace admins only.",
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        query = parse_query(s.AuditQuerySerializer, request)
        # Up to 200 rows: read as values and built as plain objects (the serializer's JSON).
        flat = s.ACCESS_AUDIT_ROWS
        rows = selectors.access_audit_list(
            actor=actor_from_request(request),
            workspace_id=workspace_id,
            limit=query["limit"],
            columns=flat.columns(),
        )
        return respond(request, None, flat.represent(rows, request))


class ApiTokenListView(APIView):
    session_only = True

    @extend_schema(
        operation_id="api_tokens_list",
        parameters=PAGE_PARAMS,
        responses={200: s.ApiTokenPageSerializer, **problems(422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(PageQuery, request)
        page = selectors.api_token_page(
            user=request.user, limit=query["limit"], cursor=query.get("cursor")
        )
        return respond_page(request, s.ApiTokenPageSerializer, page)

    @extend_schema(
        operation_id="api_tokens_create",
        request=s.ApiTokenCreateInputSerializer,
        responses={201: s.ApiTokenCreatedSerializer, **problems(400, 404, 422)},
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.ApiTokenCreateInputSerializer, request)
        token, full = services.api_token_create(
            user=request_user(request),
            name=body["name"],
            permissions=body["permissions"],
            workspace_id=body.get("workspace_id"),
            expires_at=body.get("expires_at"),
        )
        token.token = full  # type: ignore[attr-defined]  # the secret, for this response only
        return respond(
            request,
            s.ApiTokenCreatedSerializer,
            token,
            status=201,
            location=reverse("workspaces:api-token-detail", args=[token.pk]),
        )


class ApiTokenDetailView(APIView):
    session_only = True

    @extend_schema(operation_id="api_tokens_revoke", responses={204: None, **problems(404)})
    def delete(self, request: Request, token_id: str) -> Response:
        services.api_token_revoke(user=request_user(request), token_id=token_id)
        return no_content()
