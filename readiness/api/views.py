"""Readiness endpoints: the projection, and the three ledger appends (instance administrators'
browser sessions only: any bearer token is refused, and unsafe methods need CSRF)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_body, parse_query
from config.api.responses import respond
from config.api.schema import problems, with_schema
from readiness import ledgers
from readiness.api import serializers as s
from readiness.projection import provider_readiness_projection
from workspaces.access import actor_from_request, require_workspace
from workspaces.permissions import IsSuperuserSession, TokenScopePermission


class ProviderReadinessView(APIView):
    @extend_schema(
        operation_id="provider_readiness_get",
        parameters=[OpenApiParameter("workspace_id", str, required=True)],
        responses={200: s.ProviderReadinessSerializer, **problems(404, 422)},
        description="The readiness projection: per provider its connect decision, configured app state, "
        "connected accounts and blocking issues, and per account and output profile the immediate and "
        "scheduled decisions. The same projection appears in the account provider catalogue and in "
        "capability resolution.",
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.ReadinessQuerySerializer, request)
        access = require_workspace(actor_from_request(request), query["workspace_id"])
        # Built as JSON-ready data by the one projection function; ProviderReadinessSerializer
        # documents exactly this shape (a serializer pass over ~1,000 decisions would cost more
        # than building them).
        projection = provider_readiness_projection(workspace_id=access.workspace.pk)
        return respond(request, None, with_schema(projection, "ProviderReadiness", request))


class LedgerAppendView(APIView):
    session_only = True
    permission_classes = [IsAuthenticated, TokenScopePermission, IsSuperuserSession]


class ApprovalReviewAppendView(LedgerAppendView):
    @extend_schema(
        operation_id="provider_readiness_approval_reviews_append",
        request=s.ApprovalReviewInputSerializer,
        responses={201: s.ApprovalReviewSerializer, **problems(400, 403, 422)},
        description="Append one approval review of the provider app this deployment uses. The server "
        "fills the app fingerprint, provider environment and operator fingerprint.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.ApprovalReviewInputSerializer, request)
        review = ledgers.approval_review_append(operator=request.user, **body)
        return respond(
            request,
            s.ApprovalReviewSerializer,
            review,
            status=201,
            location=reverse("admin:readiness_approvalreview_change", args=[review.pk]),
        )


class RuntimeControlAppendView(LedgerAppendView):
    @extend_schema(
        operation_id="provider_readiness_runtime_controls_append",
        request=s.RuntimeControlInputSerializer,
        responses={201: s.RuntimeControlSerializer, **problems(400, 403, 422)},
        description="Append one runtime control (enabled, degraded or disabled) for a provider, "
        "optionally narrowed to one output profile and/or operation.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.RuntimeControlInputSerializer, request)
        control = ledgers.runtime_control_append(operator=request.user, **body)
        return respond(
            request,
            s.RuntimeControlSerializer,
            control,
            status=201,
            location=reverse("admin:readiness_runtimecontrol_change", args=[control.pk]),
        )


class CertificationAppendView(LedgerAppendView):
    @extend_schema(
        operation_id="provider_readiness_certifications_append",
        request=s.CertificationInputSerializer,
        responses={201: s.CertificationRunSerializer, **problems(400, 403, 422)},
        description="Append one local or live certification run with its checks. The server fills the "
        "subject (fingerprints, environments, policy mode), subject and contract digests, tested "
        "revision and scope snapshots, and derives the outcome from the checks.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.CertificationInputSerializer, request)
        checks = [dict(check) for check in body.pop("checks")]
        run = ledgers.certification_append(operator=request.user, checks=checks, **body)
        return respond(
            request,
            s.CertificationRunSerializer,
            run,
            status=201,
            location=reverse("admin:readiness_certificationrun_change", args=[run.pk]),
        )
