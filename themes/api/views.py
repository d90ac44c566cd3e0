"""Theme and theme asset endpoints: parse, call a service or selector, serialize, respond."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import FileResponse, HttpResponse, HttpResponseBase
from django.urls import reverse
from django.utils.http import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from config.api.problems import RequestValidationError
from config.api.request import parse_body, parse_query
from config.api.responses import no_content, respond, respond_page
from config.api.schema import problems
from themes import selectors, services
from themes.api import serializers as s
from themes.references import reference_from_input
from workspaces.access import actor_from_request

ORGANIZATION_ID = OpenApiParameter(
    "organization_id", str, required=True, description="Organization ID"
)
WORKSPACE_ID = OpenApiParameter("workspace_id", str, required=True, description="Workspace ID")
LIMIT = OpenApiParameter(
    "limit",
    {"type": "integer", "format": "int64", "minimum": 1, "maximum": 100, "default": 20},
    required=False,
    description="Page size, 1 to 100 (default 20)",
)
CURSOR = OpenApiParameter(
    "cursor",
    {"type": "string", "maxLength": 1024},
    required=False,
    description="Opaque cursor from the previous page's next_cursor (at most 1024 characters)",
)
REVISION = OpenApiParameter(
    "revision",
    {"type": "integer", "format": "int64", "minimum": 1},
    location=OpenApiParameter.PATH,
    required=True,
    description="Published revision number (at least 1)",
)
THEME_ID = OpenApiParameter("theme_id", str, location=OpenApiParameter.PATH, description="Theme ID")
ASSET_ID = OpenApiParameter(
    "asset_id", str, location=OpenApiParameter.PATH, description="Theme asset ID"
)
WORKSPACE_PATH = OpenApiParameter(
    "workspace_id", str, location=OpenApiParameter.PATH, description="Workspace ID"
)


def _theme_response(
    request: Request, theme: Any, status: int = 200, location: str | None = None
) -> Response:
    detail = selectors.theme_detail(theme)
    return respond(request, s.ThemeSerializer, detail, status=status, location=location)


def _organization_page(
    request: Request,
    selector: Callable[..., Any],
    serializer: type[BaseSerializer[Any]],
    **path: str,
) -> Response:
    """A keyset page of an organization's rows: ``organization_id``, ``limit`` and ``cursor``
    from the query (and the IDs of the path) handed to the selector."""
    query = parse_query(s.OrganizationPageQuerySerializer, request)
    page = selector(
        actor=actor_from_request(request),
        organization_id=query["organization_id"],
        limit=query["limit"],
        cursor=query.get("cursor"),
        **path,
    )
    return respond_page(request, serializer, page)


class BuiltInThemeListView(APIView):
    @extend_schema(
        operation_id="themes_built_ins",
        responses={200: s.BuiltInThemePageSerializer},
        description="Herald's built-in themes with their manifests (one page: there are few).",
    )
    def get(self, request: Request) -> Response:
        items = [
            {"summary": selectors.built_in_summary(built_in), "manifest": built_in.manifest}
            for built_in in selectors.built_in_list()
        ]
        # One page: there are few.
        return respond(request, s.BuiltInThemePageSerializer, {"items": items, "next_cursor": None})


class ThemeListView(APIView):
    @extend_schema(
        operation_id="themes_list",
        parameters=[ORGANIZATION_ID, LIMIT, CURSOR],
        responses={200: s.ThemeSummaryPageSerializer, **problems(404, 422)},
        description="Compact summaries of the organization's themes, newest first (organization "
        "owner or admin). Fetch one theme for its draft and published manifests.",
    )
    def get(self, request: Request) -> Response:
        return _organization_page(
            request, selectors.theme_summary_page, s.ThemeSummaryPageSerializer
        )

    @extend_schema(
        operation_id="themes_create",
        request=s.ThemeCreateInputSerializer,
        responses={201: s.ThemeSerializer, **problems(400, 404, 409, 422)},
        description="Creates a theme whose draft (revision 1) starts from a built-in (Herald's "
        "default unless base_reference names another) or a published theme of the organization.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.ThemeCreateInputSerializer, request)
        base = body.get("base_reference")
        theme = services.theme_create(
            actor=actor_from_request(request),
            organization_id=body["organization_id"],
            name=body["name"],
            description=body.get("description"),
            base_reference=reference_from_input(base) if base else None,
        )
        return _theme_response(
            request,
            theme,
            status=201,
            location=reverse("themes:theme-detail", args=[theme.pk]),
        )


class AvailableThemeListView(APIView):
    @extend_schema(
        operation_id="themes_available",
        parameters=[WORKSPACE_ID, LIMIT, CURSOR],
        responses={200: s.ThemeSummaryPageSerializer, **problems(404, 422)},
        description="The themes a workspace administrator can choose: built-ins first, then the "
        "organization's published themes, newest first. Summaries only: no drafts, manifests or assets.",
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.WorkspacePageQuerySerializer, request)
        page = selectors.theme_available_page(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.ThemeSummaryPageSerializer, page)


class ThemeDetailView(APIView):
    @extend_schema(
        operation_id="themes_get",
        parameters=[THEME_ID, ORGANIZATION_ID],
        responses={200: s.ThemeSerializer, **problems(404, 422)},
    )
    def get(self, request: Request, theme_id: str) -> Response:
        query = parse_query(s.OrganizationQuerySerializer, request)
        detail = selectors.theme_get(
            actor=actor_from_request(request),
            theme_id=theme_id,
            organization_id=query["organization_id"],
        )
        return respond(request, s.ThemeSerializer, detail)

    @extend_schema(
        operation_id="themes_delete",
        parameters=[THEME_ID, ORGANIZATION_ID],
        responses={204: None, **problems(404, 409, 422)},
        description="Deletes a theme (409 while it is the organization default or assigned to a "
        "workspace). Its published revisions are immutable and are kept.",
    )
    def delete(self, request: Request, theme_id: str) -> Response:
        query = parse_query(s.OrganizationQuerySerializer, request)
        services.theme_delete(
            actor=actor_from_request(request),
            theme_id=theme_id,
            organization_id=query["organization_id"],
        )
        return no_content()


class ThemeDraftView(APIView):
    @extend_schema(
        operation_id="themes_draft_replace",
        parameters=[THEME_ID],
        request=s.ThemeDraftReplaceInputSerializer,
        responses={200: s.ThemeSerializer, **problems(400, 404, 409, 422)},
        description="Replaces the draft's name and manifest when the draft is still at "
        "expected_revision (else 409); the draft revision then goes up by one.",
    )
    def put(self, request: Request, theme_id: str) -> Response:
        body = parse_body(s.ThemeDraftReplaceInputSerializer, request)
        theme = services.theme_draft_replace(
            actor=actor_from_request(request),
            theme_id=theme_id,
            organization_id=body["organization_id"],
            expected_revision=body["expected_revision"],
            name=body["name"],
            manifest=body["manifest"],
        )
        return _theme_response(request, theme)


class ThemePublishView(APIView):
    @extend_schema(
        operation_id="themes_publish",
        parameters=[THEME_ID],
        request=s.ThemePublishInputSerializer,
        responses={201: s.PublishedRevisionSerializer, **problems(400, 404, 409, 422)},
        description="Publishes the draft as the next immutable revision (numbered from 1), "
        "recording the draft revision it came from. Both expected revisions must match (else 409).",
    )
    def post(self, request: Request, theme_id: str) -> Response:
        body = parse_body(s.ThemePublishInputSerializer, request)
        revision = services.theme_publish(
            actor=actor_from_request(request),
            theme_id=theme_id,
            organization_id=body["organization_id"],
            expected_draft_revision=body["expected_draft_revision"],
            expected_published_revision=body["expected_published_revision"],
        )
        location = reverse("themes:theme-revision", args=[revision.theme_id, revision.revision])
        return respond(
            request, s.PublishedRevisionSerializer, revision, status=201, location=location
        )


class ThemeRevisionListView(APIView):
    @extend_schema(
        operation_id="themes_revisions_list",
        parameters=[THEME_ID, ORGANIZATION_ID, LIMIT, CURSOR],
        responses={200: s.PublishedRevisionPageSerializer, **problems(404, 422)},
        description="Published revisions, newest first, without manifests (fetch one revision for it).",
    )
    def get(self, request: Request, theme_id: str) -> Response:
        return _organization_page(
            request,
            selectors.theme_revision_page,
            s.PublishedRevisionPageSerializer,
            theme_id=theme_id,
        )


class ThemeRevisionDetailView(APIView):
    @extend_schema(
        operation_id="themes_revision_get",
        parameters=[THEME_ID, REVISION, ORGANIZATION_ID],
        responses={200: s.PublishedRevisionSerializer, **problems(404, 422)},
    )
    def get(self, request: Request, theme_id: str, revision: str) -> Response:
        path = s.RevisionPathSerializer(data={"revision": revision})
        if not path.is_valid():
            raise RequestValidationError(path.errors, location="path")
        query = parse_query(s.OrganizationQuerySerializer, request)
        found = selectors.theme_revision_get(
            actor=actor_from_request(request),
            theme_id=theme_id,
            organization_id=query["organization_id"],
            revision=path.validated_data["revision"],
        )
        return respond(request, s.PublishedRevisionSerializer, found)


class OrganizationThemeDefaultView(APIView):
    @extend_schema(
        operation_id="theme_settings_organization_get",
        parameters=[ORGANIZATION_ID],
        responses={200: s.OrganizationThemeDefaultSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.OrganizationQuerySerializer, request)
        default = selectors.organization_theme_default_get(
            actor=actor_from_request(request), organization_id=query["organization_id"]
        )
        return respond(request, s.OrganizationThemeDefaultSerializer, default)

    @extend_schema(
        operation_id="theme_settings_organization_set",
        request=s.ThemeDefaultInputSerializer,
        responses={200: s.OrganizationThemeDefaultSerializer, **problems(400, 404, 409, 422)},
        description="Sets the organization default theme: a built-in or a published organization "
        "theme (409 when it has no published revision); null returns to Herald's default.",
    )
    def put(self, request: Request) -> Response:
        body = parse_body(s.ThemeDefaultInputSerializer, request)
        reference = body["default_reference"]
        services.organization_theme_default_set(
            actor=actor_from_request(request),
            organization_id=body["organization_id"],
            reference=reference_from_input(reference) if reference else None,
        )
        default = selectors.organization_theme_default(body["organization_id"])
        return respond(request, s.OrganizationThemeDefaultSerializer, default)


class WorkspaceThemeAssignmentView(APIView):
    @extend_schema(
        operation_id="theme_assignments_get",
        parameters=[WORKSPACE_PATH],
        responses={200: s.WorkspaceThemeSerializer, **problems(404)},
    )
    def get(self, request: Request, workspace_id: str) -> Response:
        assignment = selectors.workspace_theme_get(
            actor=actor_from_request(request), workspace_id=workspace_id
        )
        return respond(request, s.WorkspaceThemeSerializer, assignment)

    @extend_schema(
        operation_id="theme_assignments_set",
        parameters=[WORKSPACE_PATH],
        request=s.ThemeAssignmentInputSerializer,
        responses={200: s.WorkspaceThemeSerializer, **problems(400, 404, 409, 422)},
        description="Assigns a built-in or a published organization theme to the workspace "
        "(workspace admin); null returns the workspace to the organization default.",
    )
    def put(self, request: Request, workspace_id: str) -> Response:
        body = parse_body(s.ThemeAssignmentInputSerializer, request)
        reference = body["reference"]
        actor = actor_from_request(request)
        services.workspace_theme_assign(
            actor=actor,
            workspace_id=workspace_id,
            reference=reference_from_input(reference) if reference else None,
        )
        assignment = selectors.workspace_theme_get(actor=actor, workspace_id=workspace_id)
        return respond(request, s.WorkspaceThemeSerializer, assignment)


class ThemeAssetListView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        operation_id="theme_assets_list",
        parameters=[ORGANIZATION_ID, LIMIT, CURSOR],
        responses={200: s.ThemeAssetPageSerializer, **problems(404, 422)},
        description="The organization's theme assets, newest first (created_at, then ID), with a "
        "keyset cursor that stays stable while new assets arrive.",
    )
    def get(self, request: Request) -> Response:
        return _organization_page(request, selectors.theme_asset_page, s.ThemeAssetPageSerializer)

    @extend_schema(
        operation_id="theme_assets_upload",
        request={"multipart/form-data": s.ThemeAssetUploadInputSerializer},
        responses={201: s.ThemeAssetRecordSerializer, **problems(400, 404, 413, 422)},
        description="Uploads a font (static WOFF2, ≤ 2 MiB, license acknowledged) or an image "
        "(PNG, JPEG, WebP or AVIF, ≤ 5 MiB, ≤ 8192 px per side, ≤ 32 megapixels). The type is "
        "read from the bytes, which must match the declared kind.",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.ThemeAssetUploadInputSerializer, request)
        asset = services.theme_asset_upload(
            actor=actor_from_request(request),
            organization_id=body["organization_id"],
            kind=body["kind"],
            name=body["name"],
            upload=body["file"],
            font_family=body.get("font_family"),
            font_style=body.get("font_style"),
            font_weight=body.get("font_weight"),
            license_acknowledged=body["license_acknowledged"],
        )
        return respond(
            request,
            s.ThemeAssetRecordSerializer,
            asset,
            status=201,
            location=lambda data: data["url"],  # the asset's content address
        )


class ThemeAssetDetailView(APIView):
    @extend_schema(
        operation_id="theme_assets_delete",
        parameters=[ASSET_ID, ORGANIZATION_ID],
        responses={204: None, **problems(404, 409, 422)},
        description="Deletes an asset that no theme draft or published revision uses (else 409).",
    )
    def delete(self, request: Request, asset_id: str) -> Response:
        query = parse_query(s.OrganizationQuerySerializer, request)
        services.theme_asset_delete(
            actor=actor_from_request(request),
            asset_id=asset_id,
            organization_id=query["organization_id"],
        )
        return no_content()


class AnyAcceptNegotiation(BaseContentNegotiation):
    """The content endpoint answers the asset's own type whatever ``Accept`` says; its
    problems are still JSON."""

    def select_parser(self, request: Any, parsers: Any) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type


_BINARY = OpenApiResponse(OpenApiTypes.BINARY, description="The asset's bytes")


class ThemeAssetContentView(APIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(
        operation_id="theme_assets_content",
        parameters=[ASSET_ID, ORGANIZATION_ID],
        responses={
            **{
                (200, media_type): _BINARY
                for media_type in (
                    "font/woff2",
                    "image/png",
                    "image/jpeg",
                    "image/webp",
                    "image/avif",
                )
            },
            304: OpenApiResponse(description="Not modified (If-None-Match matched the ETag)"),
            **problems(404, 422),
        },
        description="The asset's bytes with an ETag (its SHA-256), a long private cache lifetime "
        "and X-Content-Type-Options: nosniff. Organization owners and admins read every asset; "
        "other members of the organization (and tokens bound to one of its workspaces) read the "
        "assets published revisions use, which is what they render.",
    )
    def get(self, request: Request, asset_id: str) -> HttpResponseBase:
        query = parse_query(s.OrganizationQuerySerializer, request)
        asset = selectors.theme_asset_for_content(
            actor=actor_from_request(request),
            asset_id=asset_id,
            organization_id=query["organization_id"],
        )
        etag = f'"{asset.checksum_sha256}"'
        headers = {
            "ETag": etag,
            "Cache-Control": "private, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        }
        if _none_match(request.headers.get("If-None-Match", ""), etag):
            response: HttpResponseBase = HttpResponse(status=304)
        else:
            response = FileResponse(asset.file.open("rb"), content_type=asset.media_type)
            response["Content-Length"] = str(asset.size_bytes)
            response["Content-Disposition"] = (
                f'inline; filename="{asset.pk}{_extension(asset.file.name or "")}"'
            )
        for name, value in headers.items():
            response[name] = value
        return response


def _none_match(header: str, etag: str) -> bool:
    """If-None-Match (RFC 9110 §13.1.2): ``*`` or any tag equal under weak comparison."""
    tags = parse_etags(header) if header else []
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


def _extension(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""
