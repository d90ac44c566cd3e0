"""Resumable uploads over tus 1.0 (https://tus.io/protocols/resumable-upload): parse the tus
headers, call ``publishing.services.uploads``, answer with the tus headers on every response.

No DRF parser ever reads the body: a PATCH (or a POST with creation-with-upload) hands the raw
request stream to the service, which copies it in bounded chunks.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.problems import EXTENSION_STATUS_PHRASES
from config.api.schema import problems
from config.errors import FieldValidationError
from publishing.errors import TusVersionError, UploadContentTypeError, UploadTooLargeError
from publishing.models import Upload
from publishing.services import uploads
from workspaces.access import actor_from_request

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,termination,expiration,checksum"
TUS_CHECKSUM_ALGORITHMS = ",".join(uploads.CHECKSUM_ALGORITHMS)
OFFSET_CONTENT_TYPE = "application/offset+octet-stream"


def _header(name: str, description: str, *, required: bool = False) -> OpenApiParameter:
    return OpenApiParameter(
        name, str, location=OpenApiParameter.HEADER, required=required, description=description
    )


def _response_header(name: str, description: str, status: list[int]) -> OpenApiParameter:
    return OpenApiParameter(
        name, str, location=OpenApiParameter.HEADER, description=description, response=status
    )


TUS_RESUMABLE = _header("Tus-Resumable", "Always 1.0.0 (412 otherwise).", required=True)
UPLOAD_OFFSET = _header("Upload-Offset", "Where this PATCH's bytes start (409 otherwise).")
UPLOAD_CHECKSUM = _header(
    "Upload-Checksum",
    "tus checksum extension: an algorithm of Tus-Checksum-Algorithm, a space, and the base64 "
    "digest of this request's bytes. Bytes that do not match are discarded (460, the offset "
    "unchanged); an unsupported algorithm is a 400.",
)


class _TusView(APIView):
    parser_classes: list[Any] = []  # the body is read raw, never parsed

    def get_permissions(self) -> Any:
        if self.request.method == "OPTIONS":
            return [AllowAny()]  # discovery: tus clients ask before they authenticate
        return super().get_permissions()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method != "OPTIONS" and request.headers.get("Tus-Resumable") != TUS_VERSION:
            raise TusVersionError(
                f"Tus-Resumable must be {TUS_VERSION}; "
                f"got {request.headers.get('Tus-Resumable', '')[:20]!r}."
            )

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Tus-Resumable"] = TUS_VERSION
        response["Tus-Version"] = TUS_VERSION
        response["Cache-Control"] = "no-store"
        if response.status_code in EXTENSION_STATUS_PHRASES:
            response.reason_phrase = EXTENSION_STATUS_PHRASES[response.status_code]
        return response

    def _append(self, request: Request, upload_id: str, offset: int) -> Upload:
        checksum = uploads.parse_checksum(request.headers.get("Upload-Checksum"))
        if request.content_type.split(";")[0].strip() != OFFSET_CONTENT_TYPE:
            raise UploadContentTypeError()
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0:
            raise FieldValidationError.at("header.Content-Length", "Not a number of bytes.")
        if length > settings.HERALD_MAX_VIDEO_BYTES:
            raise UploadTooLargeError()
        return uploads.upload_append(
            actor=actor_from_request(request),
            upload_id=upload_id,
            offset=offset,
            body=request.stream,
            body_length=length,
            checksum=checksum,
        )


def _state_headers(response: Response, upload: Upload) -> Response:
    response["Upload-Offset"] = str(upload.offset)
    response["Upload-Length"] = str(upload.length)
    response["Upload-Expires"] = upload.expires_at.strftime("%a, %d %b %Y %H:%M:%S GMT")
    if upload.media_id is not None:
        response["Herald-Media-Id"] = str(upload.media_id)
    return response


_STATE = [
    _response_header("Upload-Offset", "Bytes received so far.", [200, 201, 204]),
    _response_header("Upload-Expires", "When an unfinished upload is removed.", [200, 201, 204]),
    _response_header(
        "Herald-Media-Id", "The media item, once the last byte is in.", [200, 201, 204]
    ),
]


class UploadListView(_TusView):
    @extend_schema(
        operation_id="uploads_options",
        responses={204: OpenApiResponse(description="The tus server's capabilities")},
        parameters=[
            _response_header("Tus-Version", "1.0.0", [204]),
            _response_header("Tus-Extension", TUS_EXTENSIONS, [204]),
            _response_header("Tus-Max-Size", "HERALD_MAX_VIDEO_BYTES", [204]),
            _response_header("Tus-Checksum-Algorithm", TUS_CHECKSUM_ALGORITHMS, [204]),
        ],
        description="tus discovery: versions, extensions and the largest upload.",
    )
    def options(self, request: Any, *args: Any, **kwargs: Any) -> Response:
        response = Response(status=204)
        response["Tus-Extension"] = TUS_EXTENSIONS
        response["Tus-Max-Size"] = str(settings.HERALD_MAX_VIDEO_BYTES)
        response["Tus-Checksum-Algorithm"] = TUS_CHECKSUM_ALGORITHMS
        return response

    @extend_schema(
        operation_id="uploads_create",
        request={OFFSET_CONTENT_TYPE: {"type": "string", "format": "binary"}},
        parameters=[
            TUS_RESUMABLE,
            _header("Upload-Length", "The file's size in bytes.", required=True),
            _header(
                "Upload-Metadata",
                "Comma-separated `key base64(value)` pairs: workspace_id, filename, filetype, "
                "alt_text (optional).",
                required=True,
            ),
            UPLOAD_CHECKSUM,
            _response_header("Location", "The upload's URL (HEAD, PATCH, DELETE).", [201]),
            *_STATE,
        ],
        responses={
            201: OpenApiResponse(description="Created (with the body's bytes, if any)"),
            **problems(400, 403, 404, 409, 412, 413, 415, 422, 460),
        },
        description="tus creation (and creation-with-upload): a new resumable upload in the "
        "metadata's workspace (editor or above). A body sent with Content-Type "
        f"{OFFSET_CONTENT_TYPE} is its first bytes.",
    )
    def post(self, request: Request) -> Response:
        actor = actor_from_request(request)
        upload = uploads.upload_create(
            actor=actor,
            length=uploads.parse_length(request.headers.get("Upload-Length"), "Upload-Length"),
            metadata=uploads.parse_metadata(request.headers.get("Upload-Metadata", "")),
        )
        if int(request.META.get("CONTENT_LENGTH") or 0) > 0:
            upload = self._append(request, str(upload.pk), 0)
        response = Response(status=201)
        response["Location"] = request.build_absolute_uri(
            reverse("publishing:upload-detail", args=[upload.pk])
        )
        return _state_headers(response, upload)


class UploadDetailView(_TusView):
    @extend_schema(
        operation_id="uploads_head",
        parameters=[TUS_RESUMABLE, *_STATE],
        responses={200: OpenApiResponse(description="The upload's offset"), **problems(404)},
        description="Where to resume: Upload-Offset and Upload-Length (410 once expired).",
    )
    def head(self, request: Request, upload_id: str) -> Response:
        upload = uploads.upload_get(actor=actor_from_request(request), upload_id=upload_id)
        return _state_headers(Response(status=200), upload)

    @extend_schema(
        operation_id="uploads_append",
        request={OFFSET_CONTENT_TYPE: {"type": "string", "format": "binary"}},
        parameters=[TUS_RESUMABLE, UPLOAD_OFFSET, UPLOAD_CHECKSUM, *_STATE],
        responses={
            204: OpenApiResponse(description="Bytes appended"),
            **problems(400, 403, 404, 409, 410, 412, 413, 415, 422, 460),
        },
        description="Append bytes at Upload-Offset. The answer to the last bytes carries "
        "Herald-Media-Id; a file the media rules refuse is a 422 and the upload is removed.",
    )
    def patch(self, request: Request, upload_id: str) -> Response:
        offset = uploads.parse_length(request.headers.get("Upload-Offset"), "Upload-Offset")
        upload = self._append(request, upload_id, offset)
        return _state_headers(Response(status=204), upload)

    @extend_schema(
        operation_id="uploads_terminate",
        parameters=[TUS_RESUMABLE],
        responses={204: None, **problems(403, 404, 410, 412)},
        description="tus termination: the upload and its bytes are removed.",
    )
    def delete(self, request: Request, upload_id: str) -> Response:
        uploads.upload_terminate(actor=actor_from_request(request), upload_id=upload_id)
        return Response(status=204)
