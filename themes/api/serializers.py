"""Theme request and response shapes (Theme, ThemeDraft, PublishedRevision, ThemeSummary,
ThemeAssetRecord, ThemeAssetPage). The manifest's shape is the one declarative
definition in ``themes.manifest.definition``, for requests and responses alike."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.names import NameField
from config.api.pagination import CURSOR_MAX_LENGTH
from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from themes.manifest import vocabulary as v
from themes.manifest.definition import ManifestSerializer

# --- Inputs ---------------------------------------------------------------------------------


class OrganizationQuerySerializer(serializers.Serializer[Any]):
    organization_id = serializers.CharField(max_length=64)


class PageQuerySerializer(serializers.Serializer[Any]):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20, required=False)
    cursor = serializers.CharField(max_length=CURSOR_MAX_LENGTH, required=False)


class OrganizationPageQuerySerializer(OrganizationQuerySerializer, PageQuerySerializer):
    pass


class WorkspacePageQuerySerializer(PageQuerySerializer):
    workspace_id = serializers.CharField(max_length=64)


class RevisionPathSerializer(serializers.Serializer[Any]):
    revision = serializers.IntegerField(min_value=1, max_value=2**63 - 1)


class ThemeReferenceInputSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=v.REFERENCE_KINDS)
    id = serializers.CharField(max_length=64)
    version = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="A pinned built-in version or published revision; null or absent: the latest.",
    )


class ThemeCreateInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    name = NameField(max_length=80)
    description = serializers.CharField(max_length=240, required=False, allow_blank=True)
    base_reference = ThemeReferenceInputSerializer(
        required=False,
        help_text="The theme the new draft starts from: a built-in or a published theme of the "
        "organization (default: Herald's default built-in).",
    )


class ThemeDraftReplaceInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    expected_revision = serializers.IntegerField(
        min_value=1, help_text="The draft revision the caller last saw (409 when it moved on)."
    )
    name = NameField(max_length=80)
    manifest = ManifestSerializer()


class ThemePublishInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    expected_draft_revision = serializers.IntegerField(min_value=1)
    expected_published_revision = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        help_text="The latest published revision the caller last saw; null when none was published.",
    )


class ThemeDefaultInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    default_reference = ThemeReferenceInputSerializer(
        allow_null=True, help_text="null: back to Herald's default built-in."
    )


class ThemeAssignmentInputSerializer(StrictSerializer):
    reference = ThemeReferenceInputSerializer(
        allow_null=True, help_text="null: the workspace uses the organization default."
    )


class ThemeAssetUploadInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    kind = serializers.ChoiceField(choices=v.ASSET_KINDS)
    name = NameField(max_length=120)
    file = serializers.FileField(
        help_text="WOFF2 font (≤ 2 MiB) or PNG/JPEG/WebP/AVIF image (≤ 5 MiB)"
    )
    font_family = serializers.RegexField(v.FAMILY_PATTERN, max_length=128, required=False)
    font_style = serializers.ChoiceField(choices=v.FONT_STYLES, required=False)
    font_weight = serializers.IntegerField(min_value=100, max_value=900, required=False)
    license_acknowledged = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Fonts: the organization holds a license to serve this font on the web (must be true).",
    )

    def validate_font_weight(self, value: int) -> int:
        if value % 100:
            raise serializers.ValidationError("A multiple of 100.")
        return value


# --- Outputs --------------------------------------------------------------------------------


@extend_schema_field(ManifestSerializer)
class ManifestOutputField(serializers.JSONField):
    """A stored manifest: already validated when it was written, shown as stored."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("read_only", True)
        super().__init__(**kwargs)


class ThemeReferenceSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=v.REFERENCE_KINDS)
    id = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)


class ThemeSummarySerializer(ResponseSerializer):
    assigned_workspace_count = serializers.IntegerField()
    built_in = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    description = serializers.CharField()
    draft_revision = serializers.IntegerField(
        allow_null=True, help_text="null for built-ins and in the available-themes listing"
    )
    icon_pack = serializers.CharField()
    is_organization_default = serializers.BooleanField()
    name = serializers.CharField()
    organization_id = serializers.CharField(allow_null=True, help_text="null for built-ins")
    published_revision = serializers.IntegerField(allow_null=True, help_text="null until published")
    reference = ThemeReferenceSerializer()
    supported_schemes = serializers.ListField(child=serializers.ChoiceField(choices=v.SCHEMES))
    updated_at = serializers.DateTimeField()


class ThemeDraftSerializer(ResponseSerializer):
    manifest = ManifestOutputField()
    revision = serializers.IntegerField()
    theme_id = serializers.CharField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField()


class PublishedRevisionSerializer(ResponseSerializer):
    manifest = ManifestOutputField()
    published_at = serializers.DateTimeField()
    published_by = serializers.CharField()
    revision = serializers.IntegerField()
    source_revision = serializers.IntegerField(help_text="The draft revision it was published from")
    theme_id = serializers.CharField()


class PublishedRevisionSummarySerializer(ResponseSerializer):
    published_at = serializers.DateTimeField()
    published_by = serializers.CharField()
    revision = serializers.IntegerField()
    source_revision = serializers.IntegerField()
    theme_id = serializers.CharField()


class ThemeSerializer(ResponseSerializer):
    draft = ThemeDraftSerializer()
    latest_published = PublishedRevisionSerializer(
        allow_null=True, help_text="null until published"
    )
    summary = ThemeSummarySerializer()


class ThemeSummaryPageSerializer(ResponseSerializer):
    items = ThemeSummarySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class PublishedRevisionPageSerializer(ResponseSerializer):
    items = PublishedRevisionSummarySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class BuiltInThemeSerializer(ResponseSerializer):
    summary = ThemeSummarySerializer()
    manifest = ManifestOutputField()


class BuiltInThemePageSerializer(ResponseSerializer):
    items = BuiltInThemeSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class OrganizationThemeDefaultSerializer(ResponseSerializer):
    organization_id = serializers.CharField()
    default_reference = ThemeReferenceSerializer()
    updated_at = serializers.DateTimeField(
        allow_null=True, help_text="null: Herald's default applies"
    )
    updated_by = serializers.CharField(allow_null=True)


class WorkspaceThemeSerializer(ResponseSerializer):
    workspace_id = serializers.CharField()
    organization_id = serializers.CharField()
    reference = ThemeReferenceSerializer(allow_null=True, help_text="null: no assignment")
    effective_reference = ThemeReferenceSerializer(
        help_text="The assignment, else the organization default"
    )
    effective_manifest = ManifestOutputField(help_text="The manifest of the effective reference")
    assigned_at = serializers.DateTimeField(allow_null=True)
    assigned_by = serializers.CharField(allow_null=True)


class ThemeAssetRecordSerializer(ResponseSerializer):
    id = serializers.CharField()
    organization_id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=v.ASSET_KINDS)
    media_type = serializers.CharField()
    size_bytes = serializers.IntegerField()
    checksum_sha256 = serializers.CharField()
    url = serializers.SerializerMethodField()
    width = serializers.IntegerField(allow_null=True, help_text="images; null for fonts")
    height = serializers.IntegerField(allow_null=True, help_text="images; null for fonts")
    font_family = serializers.CharField(allow_null=True, help_text="fonts; null for images")
    font_style = serializers.ChoiceField(choices=v.FONT_STYLES, allow_null=True)
    font_weight = serializers.IntegerField(allow_null=True)
    license_acknowledged = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        if instance.kind != "font":
            data["font_family"] = data["font_style"] = None
        return data

    def get_url(self, obj: Any) -> str:
        path = reverse("themes:theme-asset-content", args=[obj.pk])
        path += "?" + urlencode({"organization_id": str(obj.organization_id)})
        if settings.HERALD_PUBLIC_URL:
            return f"{settings.HERALD_PUBLIC_URL}{path}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class ThemeAssetPageSerializer(ResponseSerializer):
    items = ThemeAssetRecordSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
