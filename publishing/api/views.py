"""Publishing endpoints: parse, call a service or selector, serialize, respond."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.request import parse_body, parse_query
from config.api.responses import no_content, respond, respond_page
from config.api.schema import problems
from config.error_pages import error_page
from config.errors import DomainError, NotFoundError
from providers import all_adapters, get_adapter
from providers.base import describe
from publishing import selectors
from publishing.api import serializers as s
from publishing.api.idempotency import MAX_KEY_LENGTH, idempotent
from publishing.media_files import media_file_response
from publishing.models import ConnectionChoice, Publication
from publishing.services import accounts, connection_choices, media, meta_callbacks, publications
from publishing.web import oauth_result_location
from readiness.projection import provider_readiness_projection
from workspaces.access import actor_from_request, require_workspace, require_workspace_role
from workspaces.authentication import CsrfSessionAuthentication
from workspaces.models import WorkspaceMembership

IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    location=OpenApiParameter.HEADER,
    required=False,
    description="≤ 200 characters; the same key and body replay the first response for 24 h.",
)
EDITOR = WorkspaceMembership.Role.EDITOR


def body_workspace_editor(request: Request, kwargs: dict[str, Any]) -> object:
    """A replay of a creation in the body's workspace: editor or above there, as when fresh."""
    data = request.data
    workspace_id = str(data.get("workspace_id")) if isinstance(data, dict) else ""
    return require_workspace_role(actor_from_request(request), workspace_id, role=EDITOR)


def publication_editor(request: Request, kwargs: dict[str, Any]) -> object:
    """A replay of a change to the publication in the path: the check of that change."""
    return publications.publication_require_access(
        actor_from_request(request), kwargs["publication_id"]
    )


class AccountProviderCatalogueView(APIView):
    @extend_schema(
        operation_id="account_providers_list",
        parameters=[OpenApiParameter("workspace_id", str, required=True)],
        responses={200: s.ProviderCatalogueSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.WorkspaceQuerySerializer, request)
        access = require_workspace(actor_from_request(request), query["workspace_id"])
        projection = provider_readiness_projection(workspace_id=access.workspace.pk)
        provider_readiness = {entry["provider"]: entry for entry in projection["providers"]}
        entries = []
        for adapter in all_adapters():
            caps = adapter.capabilities
            entries.append(
                {
                    "provider": caps.provider,
                    "display_name": caps.display_name,
                    "connection": caps.connection.value,
                    "capabilities": describe(adapter),
                    "readiness": provider_readiness[caps.provider],
                }
            )
        return respond(request, s.ProviderCatalogueSerializer, {"providers": entries})


class AccountListView(APIView):
    @extend_schema(
        operation_id="accounts_list",
        parameters=[s.AccountListQuerySerializer],
        responses={200: s.AccountPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.AccountListQuerySerializer, request)
        page = selectors.account_page(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            limit=query["limit"],
            cursor=query.get("cursor"),
            provider=query.get("provider"),
        )
        return respond_page(request, s.AccountPageSerializer, page)


class AccountConnectView(APIView):
    @extend_schema(
        operation_id="accounts_connect",
        request=s.AccountConnectInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={
            201: s.AccountConnectResultSerializer,
            200: s.AccountConnectResultSerializer,
            **problems(400, 404, 409, 422, 502, 503),
        },
        description="Credential and webhook providers connect at once (201 with the account); "
        "OAuth providers answer 200 with an authorization_url to send the user to.",
    )
    @idempotent(access=body_workspace_editor)
    def post(self, request: Request) -> Response:
        body = parse_body(s.AccountConnectInputSerializer, request)
        # The origin the user's browser returns to: HERALD_PUBLIC_URL when set (behind a proxy
        # the forwarded Host can lack the public port and the scheme be the proxy's).
        callback = reverse("publishing:oauth-callback")
        if settings.HERALD_PUBLIC_URL:
            redirect_uri = f"{settings.HERALD_PUBLIC_URL}{callback}"
        else:
            redirect_uri = request.build_absolute_uri(callback)
        account, authorization_url = accounts.account_connect(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            provider=body["provider"],
            redirect_uri=redirect_uri,
            instance_url=body.get("instance_url") or "",
            fields=body.get("fields") or {},
            mode=body.get("mode") or "",
        )
        result = {"account": account, "authorization_url": authorization_url}
        if account is None:
            return respond(request, s.AccountConnectResultSerializer, result)
        return respond(
            request,
            s.AccountConnectResultSerializer,
            result,
            status=201,
            location=reverse("publishing:account-detail", args=[account.pk]),
        )


class OAuthCallbackView(APIView):
    """The provider redirects the user's browser here; the single-use state identifies the
    pending connect (bound to the workspace and user who started it, and to the browser that
    confirmed Herald's start page)."""

    # No credentials are required; a browser's session is read only to refuse a callback from
    # a browser signed in as another user than the one who started the connect.
    authentication_classes = [CsrfSessionAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="accounts_oauth_callback",
        auth=[],
        parameters=[s.OAuthCallbackQuerySerializer],
        description="The provider redirects the user's browser here; the single-use state "
        "identifies the pending connect (bound to the workspace and user who started it). The "
        "connect completes only with the nonce cookie that Herald's start page "
        "(the connect answer's authorization_url) set in this browser; without it the answer "
        "is 403 oauth_browser_mismatch and the connect stays pending. API clients get the "
        "connected account (JSON), or, when one login reached several accounts (Meta's Facebook "
        "Login: Pages and their Instagram accounts), the choice of candidates to connect "
        "(202; see accounts_choices_apply). A browser (Accept: text/html) is redirected (303) to a "
        "Herald page saying in Herald's words what happened; an unknown state or another "
        "browser gets an error page instead. A provider's error is shown only as Herald's "
        "message for a known RFC 6749 code, never its text.",
        # Unauthenticated, so 403 is not implied: a denied grant, another browser, a role or
        # plan that changed since the connect started; 409: readiness blocks the provider now.
        responses={
            200: s.AccountSerializer,
            202: OpenApiResponse(
                s.ConnectionChoiceSerializer,
                description="The login reached several accounts: nothing is connected until "
                "the person chooses (accounts_choices_apply).",
            ),
            303: OpenApiResponse(description="Browsers: to the page describing the outcome."),
            **problems(400, 403, 404, 409, 422, 502),
        },
        examples=[
            OpenApiExample(
                "A Facebook Login that reached a Page and its Instagram account",
                response_only=True,
                status_codes=["202"],
                value={
                    "choice_id": "6f1c2a8e-5d0b-4f4e-9a57-2b1d3c4e5f60",
                    "workspace_id": "0d9c1b2a-3e4f-4a5b-8c6d-7e8f9a0b1c2d",
                    "provider": "facebook",
                    "expires_at": "2026-11-28T12:15:00Z",
                    "choose_url": "/api/v1/accounts/choices/6f1c2a8e-5d0b-4f4e-9a57-2b1d3c4e5f60",
                    "candidates": [
                        {
                            "key": "facebook:101000000000001",
                            "provider": "facebook",
                            "label": "Facebook Page Herald HQ",
                            "external_id": "101000000000001",
                            "username": "Herald HQ",
                            "display_name": "Herald HQ",
                            "avatar_url": "",
                            "profile_url": "https://www.facebook.com/101000000000001",
                            "account_kind": "page",
                            "granted_scopes": ["pages_show_list", "pages_manage_posts"],
                            "available": True,
                        },
                        {
                            "key": "instagram:17841400000000001",
                            "provider": "instagram",
                            "label": "Instagram @herald.hq (through Page Herald HQ)",
                            "external_id": "17841400000000001",
                            "username": "herald.hq",
                            "display_name": "Herald HQ",
                            "avatar_url": "",
                            "profile_url": "https://www.instagram.com/herald.hq/",
                            "account_kind": "business",
                            "granted_scopes": ["instagram_basic", "instagram_content_publish"],
                            "available": True,
                        },
                    ],
                },
            )
        ],
    )
    def get(self, request: Request) -> HttpResponseBase:
        query = parse_query(s.OAuthCallbackQuerySerializer, request)
        browser = "text/html" in request.headers.get("Accept", "")
        user = request.user if request.user.is_authenticated else None
        state = query["state"]
        nonce = request.COOKIES.get(accounts.oauth_nonce_cookie_name(state), "")
        try:
            if query.get("error") or not query.get("code"):
                accounts.account_oauth_abort(
                    state=state, browser_nonce=nonce, error=query.get("error") or ""
                )
            account = accounts.account_oauth_complete(
                state=state, code=query["code"], browser_nonce=nonce, session_user=user
            )
        except NotFoundError as exc:  # no pending connect: no result page
            if not browser:
                raise
            return _browser_page(request, 404, title="Unknown authorization", message=exc.detail)
        except DomainError as exc:
            if not browser:
                raise
            if exc.code == "oauth_browser_mismatch":  # still pending for its browser: no result
                return _browser_page(request, 403, title=exc.title, message=exc.detail)
            return _oauth_result(request, state, ok=False, title=exc.title, detail=exc.detail)
        if isinstance(account, ConnectionChoice):
            return _choice_answer(request, state, account, browser=browser)
        if browser:
            name = get_adapter(account.provider).capabilities.display_name
            return _oauth_result(
                request,
                state,
                ok=True,
                title=f"{name} account connected",
                detail="The account is connected to Herald and can be published to.",
                provider=name,
                username=account.username,
            )
        response = respond(request, s.AccountSerializer, account)
        _forget_nonce(request, response, state)
        return response


def _choice_body(choice: ConnectionChoice) -> dict[str, Any]:
    return {
        "id": choice.pk,
        "workspace_id": choice.workspace_id,
        "provider": choice.provider,
        "expires_at": choice.expires_at,
        "candidates": connection_choices.choice_candidates(choice),
        "choose_url": reverse("publishing:connection-choice", args=[choice.pk]),
    }


def _choice_answer(
    request: Request, state: str, choice: ConnectionChoice, *, browser: bool
) -> HttpResponseBase:
    if not browser:
        response = respond(request, s.ConnectionChoiceSerializer, _choice_body(choice), status=202)
        _forget_nonce(request, response, state)
        return response
    names = ", ".join(c["label"] for c in connection_choices.choice_candidates(choice))
    return _oauth_result(
        request,
        state,
        ok=True,
        title="Choose the accounts to connect",
        detail=f"This login can connect: {names}. Choose which with "
        f"'herald account choose {choice.pk}' (or POST {reverse('publishing:connection-choice', args=[choice.pk])}); "
        "the choice expires with the connect.",
        provider=get_adapter(choice.provider).capabilities.display_name,
    )


class ConnectionChoiceView(APIView):
    """The candidates of a login that reached several accounts, and the choice among them."""

    @extend_schema(
        operation_id="accounts_choices_get",
        responses={200: s.ConnectionChoiceSerializer, **problems(404)},
        description="The candidates of a pending choice (only the user who started the connect "
        "sees it; it expires with HERALD_OAUTH_STATE_SECONDS). No tokens are shown.",
    )
    def get(self, request: Request, choice_id: str) -> Response:
        choice = connection_choices.choice_get(
            actor=actor_from_request(request), choice_id=choice_id
        )
        return respond(request, s.ConnectionChoiceSerializer, _choice_body(choice))

    @extend_schema(
        operation_id="accounts_choices_apply",
        request=s.ConnectionChoiceInputSerializer,
        responses={201: s.ConnectionChoiceResultSerializer, **problems(404, 409, 422)},
        description="Connect the chosen candidates, each as its own account (a Facebook Page as "
        "facebook, an Instagram account as instagram); the choice is then spent. A key that is "
        "not a candidate, or of a provider this server lacks, is a 422 and nothing is connected.",
        examples=[
            OpenApiExample(
                "Connect a Page and its Instagram account",
                request_only=True,
                value={"candidates": ["facebook:101000000000001", "instagram:17841400000000001"]},
            )
        ],
    )
    def post(self, request: Request, choice_id: str) -> Response:
        body = parse_body(s.ConnectionChoiceInputSerializer, request)
        connected = connection_choices.choice_apply(
            actor=actor_from_request(request), choice_id=choice_id, keys=body["candidates"]
        )
        return respond(
            request, s.ConnectionChoiceResultSerializer, {"accounts": connected}, status=201
        )


class _MetaCallback(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    parser_classes = [FormParser, MultiPartParser, JSONParser]


class MetaDeauthorizeView(_MetaCallback):
    @extend_schema(
        operation_id="meta_deauthorize",
        auth=[],
        request={"application/x-www-form-urlencoded": s.MetaSignedRequestInputSerializer},
        responses={204: None, **problems(422)},
        description="Meta's deauthorize callback (set it in the Meta app's Facebook Login "
        "settings): the signed_request is verified with the app secret; every Facebook and "
        "Instagram account connected through that Meta user has its credentials erased and "
        "becomes reconnect_required (access-audit event connection.deauthorized).",
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.MetaSignedRequestInputSerializer, request)
        meta_callbacks.meta_deauthorize(signed_request=body["signed_request"])
        return no_content()


class MetaDataDeletionView(_MetaCallback):
    @extend_schema(
        operation_id="meta_data_deletion",
        auth=[],
        request={"application/x-www-form-urlencoded": s.MetaSignedRequestInputSerializer},
        responses={200: s.MetaDataDeletionAnswerSerializer, **problems(422)},
        description="Meta's data-deletion callback: verified like the deauthorize callback; the "
        "connections' credentials are erased at once (access-audit event "
        "connection.data_deleted). The answer is what Meta requires: the status URL and a "
        "confirmation code.",
        examples=[
            OpenApiExample(
                "Answer",
                response_only=True,
                value={
                    "url": "https://herald.example/api/v1/meta/data-deletion/3f9a0c1b2d4e5f607182",
                    "confirmation_code": "3f9a0c1b2d4e5f607182",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.MetaSignedRequestInputSerializer, request)
        deletion = meta_callbacks.meta_data_deletion(signed_request=body["signed_request"])
        url = meta_callbacks.status_url(deletion, origin=request.build_absolute_uri("/"))
        return Response({"url": url, "confirmation_code": deletion.confirmation_code})


class MetaDataDeletionStatusView(_MetaCallback):
    @extend_schema(
        operation_id="meta_data_deletion_status",
        auth=[],
        responses={200: s.MetaDataDeletionStatusSerializer, **problems(404)},
        description="The state of a data-deletion request, by its confirmation code.",
    )
    def get(self, request: Request, confirmation_code: str) -> Response:
        deletion = meta_callbacks.meta_data_deletion_get(confirmation_code=confirmation_code)
        return respond(request, s.MetaDataDeletionStatusSerializer, deletion)


def _browser_page(request: Request, status: int, *, title: str, message: str) -> HttpResponseBase:
    """Herald's plain error page, for a callback that matched no pending connect in this
    browser: no result page, nothing from the query or the provider."""
    response = error_page(request, status, title=title, message=message)
    response.browser_page = True  # type: ignore[attr-defined]  # kept as HTML under /api/
    response["Referrer-Policy"] = "same-origin"
    return response


def _forget_nonce(request: Request, response: HttpResponseBase, state: str) -> None:
    response.delete_cookie(
        accounts.oauth_nonce_cookie_name(state),
        path=reverse("publishing:oauth-callback"),
        samesite="Lax",
    )


def _oauth_result(request: Request, state: str, **outcome: Any) -> HttpResponseBase:
    """303 to the signed result page: only for a state that matched a pending connect in the
    browser that started it (the code never stays in the address bar)."""
    response = HttpResponseRedirect(oauth_result_location(**outcome), status=303)
    _forget_nonce(request, response, state)
    return response


class AccountDetailView(APIView):
    @extend_schema(
        operation_id="accounts_get", responses={200: s.AccountSerializer, **problems(404)}
    )
    def get(self, request: Request, account_id: str) -> Response:
        account = accounts.account_get(actor=actor_from_request(request), account_id=account_id)
        return respond(request, s.AccountSerializer, account)

    @extend_schema(operation_id="accounts_disconnect", responses={204: None, **problems(404)})
    def delete(self, request: Request, account_id: str) -> Response:
        accounts.account_disconnect(actor=actor_from_request(request), account_id=account_id)
        return no_content()


class DestinationOptionsView(APIView):
    @extend_schema(
        operation_id="accounts_destination_options",
        parameters=[s.DestinationOptionsQuerySerializer],
        responses={200: s.DestinationOptionsSerializer, **problems(404, 409, 422, 502)},
    )
    def get(self, request: Request, account_id: str) -> Response:
        query = parse_query(s.DestinationOptionsQuerySerializer, request)
        options = accounts.account_destination_options(
            actor=actor_from_request(request),
            account_id=account_id,
            region_code=query["region_code"],
            language=query["language"],
        )
        return respond(request, s.DestinationOptionsSerializer, {"options": options})


class CapabilitiesView(APIView):
    @extend_schema(
        operation_id="capabilities_resolve",
        parameters=[s.CapabilitiesQuerySerializer],
        responses={200: s.CapabilitiesSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.CapabilitiesQuerySerializer, request)
        resolved = selectors.capabilities_resolve(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            account_ids=query.get("account_ids") or "",
            content_profile=query.get("content_profile") or "",
        )
        return respond(request, s.CapabilitiesSerializer, resolved)


class MediaListView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        operation_id="media_list",
        parameters=[s.MediaListQuerySerializer],
        responses={200: s.MediaPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.MediaListQuerySerializer, request)
        page = selectors.media_page(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.MediaPageSerializer, page)

    @extend_schema(
        operation_id="media_upload",
        request={"multipart/form-data": s.MediaUploadInputSerializer},
        responses={201: s.MediaSerializer, **problems(400, 404, 413, 422)},
    )
    def post(self, request: Request) -> Response:
        body = parse_body(s.MediaUploadInputSerializer, request)
        item = media.media_upload(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            upload=body["file"],
            alt_text=body.get("alt_text", ""),
        )
        return respond(
            request,
            s.MediaSerializer,
            item,
            status=201,
            location=reverse("publishing:media-detail", args=[item.pk]),
        )


class MediaDetailView(APIView):
    @extend_schema(operation_id="media_get", responses={200: s.MediaSerializer, **problems(404)})
    def get(self, request: Request, media_id: str) -> Response:
        item = media.media_get(actor=actor_from_request(request), media_id=media_id)
        return respond(request, s.MediaSerializer, item)

    @extend_schema(operation_id="media_delete", responses={204: None, **problems(404, 409)})
    def delete(self, request: Request, media_id: str) -> Response:
        media.media_delete(actor=actor_from_request(request), media_id=media_id)
        return no_content()


class _AnyAccept(BaseContentNegotiation):
    """The content endpoint answers the file's own type whatever ``Accept`` says; its problems
    are still JSON."""

    def select_parser(self, request: Any, parsers: Any) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type


_MEDIA_BYTES = OpenApiResponse(OpenApiTypes.BINARY, description="The file's bytes (or a range)")


class MediaContentView(APIView):
    content_negotiation_class = _AnyAccept

    @extend_schema(
        operation_id="media_content",
        responses={
            **{
                (status, mime): _MEDIA_BYTES
                for status in (200, 206)
                for mime in ("image/png", "image/jpeg", "image/gif", "image/webp", "video/mp4")
            },
            304: OpenApiResponse(description="Not modified (If-None-Match matched the ETag)"),
            416: OpenApiResponse(description="Range not satisfiable (Content-Range: bytes */n)"),
            **problems(404),
        },
        description="The media item's bytes, for members of its workspace: its stored "
        "Content-Type and Content-Length, a strong ETag (its SHA-256), Last-Modified, and one "
        "byte range per request (Range: bytes=a-b, a- or -n; 206 with Content-Range, 416 when "
        "unsatisfiable). The item's `url` serves the same bytes without credentials until it "
        "expires.",
    )
    def get(self, request: Request, media_id: str) -> HttpResponseBase:
        item = media.media_get(actor=actor_from_request(request), media_id=media_id)
        response = media_file_response(request, item)
        if response.status_code == 404:
            raise NotFoundError("The media file is missing from storage.")
        response["Cache-Control"] = "private, max-age=3600"
        return response


def _publication_response(
    request: Request, publication: Publication, status: int = 200, location: str | None = None
) -> Response:
    fresh = selectors.publication_get(
        actor=actor_from_request(request), publication_id=publication.pk
    )
    return respond(request, s.PublicationSerializer, fresh, status=status, location=location)


class PublicationListView(APIView):
    @extend_schema(
        operation_id="publications_list",
        parameters=[s.PublicationListQuerySerializer],
        responses={200: s.PublicationPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request) -> Response:
        query = parse_query(s.PublicationListQuerySerializer, request)
        page = selectors.publication_page(
            actor=actor_from_request(request),
            workspace_id=query["workspace_id"],
            limit=query["limit"],
            cursor=query.get("cursor"),
            status=query.get("status"),
            account_id=query.get("account_id"),
            created_after=query.get("created_after"),
            created_before=query.get("created_before"),
            scheduled_window=(query.get("scheduled_after"), query.get("scheduled_before")),
        )
        return respond_page(request, s.PublicationPageSerializer, page)

    @extend_schema(
        operation_id="publications_create",
        request=s.PublicationCreateInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={201: s.PublicationSerializer, **problems(400, 404, 409, 422)},
    )
    @idempotent(access=body_workspace_editor)
    def post(self, request: Request) -> Response:
        body = parse_body(s.PublicationCreateInputSerializer, request)
        publication = publications.publication_create(
            actor=actor_from_request(request),
            workspace_id=body["workspace_id"],
            text=body.get("text", ""),
            media_ids=body.get("media_ids"),
            destinations=[dict(d) for d in body["destinations"]],
            voice_profile_id=body.get("voice_profile_id"),
        )
        return _publication_response(
            request,
            publication,
            status=201,
            location=reverse("publishing:publication-detail", args=[publication.pk]),
        )


class PublicationDetailView(APIView):
    @extend_schema(
        operation_id="publications_get", responses={200: s.PublicationSerializer, **problems(404)}
    )
    def get(self, request: Request, publication_id: str) -> Response:
        publication = selectors.publication_get(
            actor=actor_from_request(request), publication_id=publication_id
        )
        return respond(request, s.PublicationSerializer, publication)

    @extend_schema(
        operation_id="publications_replace",
        request=s.PublicationReplaceInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={200: s.PublicationSerializer, **problems(400, 404, 409, 422)},
    )
    @idempotent(access=publication_editor)
    def put(self, request: Request, publication_id: str) -> Response:
        body = parse_body(s.PublicationReplaceInputSerializer, request)
        publication = publications.publication_replace(
            actor=actor_from_request(request),
            publication_id=publication_id,
            expected_revision=body["expected_revision"],
            text=body.get("text", ""),
            media_ids=body.get("media_ids"),
            destinations=[dict(d) for d in body["destinations"]],
            voice_profile_id=body.get("voice_profile_id", publications.UNCHANGED),
        )
        return _publication_response(request, publication)

    @extend_schema(operation_id="publications_delete", responses={204: None, **problems(404, 409)})
    def delete(self, request: Request, publication_id: str) -> Response:
        publications.publication_delete(
            actor=actor_from_request(request), publication_id=publication_id
        )
        return no_content()


class PublicationScheduleView(APIView):
    @extend_schema(
        operation_id="publications_schedule",
        request=s.PublicationScheduleInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={200: s.PublicationSerializer, **problems(400, 404, 409, 422)},
    )
    @idempotent(access=publication_editor)
    def post(self, request: Request, publication_id: str) -> Response:
        body = parse_body(s.PublicationScheduleInputSerializer, request)
        publication = publications.publication_schedule(
            actor=actor_from_request(request),
            publication_id=publication_id,
            scheduled_at=body["scheduled_at"],
            expected_revision=body.get("expected_revision"),
            intent=body["execution_intent"],
        )
        return _publication_response(request, publication)


class PublicationPublishNowView(APIView):
    @extend_schema(
        operation_id="publications_publish_now",
        request=s.PublicationPublishNowInputSerializer,
        parameters=[IDEMPOTENCY],
        responses={202: s.PublicationSerializer, **problems(400, 404, 409, 422)},
        description="Queues delivery (202). Success means queued, not delivered: follow "
        "each destination's status.",
    )
    @idempotent(access=publication_editor)
    def post(self, request: Request, publication_id: str) -> Response:
        body = parse_body(s.PublicationPublishNowInputSerializer, request)
        publication = publications.publication_publish_now(
            actor=actor_from_request(request),
            publication_id=publication_id,
            expected_revision=body.get("expected_revision"),
            intent=body["execution_intent"],
        )
        return _publication_response(request, publication, status=202)


class PublicationCancelView(APIView):
    @extend_schema(
        operation_id="publications_cancel",
        request=None,
        parameters=[IDEMPOTENCY],
        responses={200: s.PublicationSerializer, **problems(404, 409)},
    )
    @idempotent(access=publication_editor)
    def post(self, request: Request, publication_id: str) -> Response:
        publication = publications.publication_cancel(
            actor=actor_from_request(request), publication_id=publication_id
        )
        return _publication_response(request, publication)


class PublicationRetryFailedView(APIView):
    @extend_schema(
        operation_id="publications_retry_failed",
        request=None,
        parameters=[IDEMPOTENCY],
        responses={202: s.PublicationSerializer, **problems(404, 409)},
    )
    @idempotent(access=publication_editor)
    def post(self, request: Request, publication_id: str) -> Response:
        publication = publications.publication_retry_failed(
            actor=actor_from_request(request), publication_id=publication_id
        )
        return _publication_response(request, publication, status=202)


class PublicationEventsView(APIView):
    @extend_schema(
        operation_id="publications_events",
        parameters=[s.PageQuerySerializer],
        responses={200: s.PublicationEventPageSerializer, **problems(404, 422)},
    )
    def get(self, request: Request, publication_id: str) -> Response:
        query = parse_query(s.PageQuerySerializer, request)
        page = selectors.publication_events(
            actor=actor_from_request(request),
            publication_id=publication_id,
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return respond_page(request, s.PublicationEventPageSerializer, page)
