from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from publishing.models import Account, Destination, Publication
from publishing.services import media_links
from readiness.api.serializers import ProviderReadinessEntryField, ReadinessDecisionSerializer

# --- Inputs ---------------------------------------------------------------------------------


class WorkspaceQuerySerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField(max_length=64)


class AccountListQuerySerializer(WorkspaceQuerySerializer):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20, required=False)
    cursor = serializers.CharField(max_length=1024, required=False)
    provider = serializers.CharField(max_length=40, required=False)


class AccountConnectInputSerializer(StrictSerializer):
    workspace_id = serializers.CharField(max_length=64)
    provider = serializers.CharField(max_length=40)
    instance_url = serializers.URLField(max_length=300, required=False, default="")
    mode = serializers.CharField(
        max_length=40,
        required=False,
        default="",
        help_text="A connection mode of the provider (instagram: instagram_login, Instagram's "
        "own login for accounts without a Facebook Page; without one, Facebook Login).",
    )
    # The body's "fields" key (the contract's name) shadows Serializer.fields in the stubs only:
    # DRF moves declared fields off the class.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.CharField(trim_whitespace=True),
        required=False,
        default=dict,
        help_text="Credential fields of a credentials or webhook provider (see the catalogue).",
    )

    def validate_fields(self, value: dict[str, str]) -> dict[str, str]:
        # Reported at ``body.fields`` (not ``body.fields.<name>``) so that the problem body never
        # echoes a value: these are secrets (tokens, app passwords, webhook URLs).
        too_long = sorted(name for name, text in value.items() if len(text) > 2000)
        if too_long or len(value) > 20:
            raise serializers.ValidationError(
                f"At most 20 fields of at most 2000 characters ({', '.join(too_long)[:200]})."
            )
        return value


class OAuthCallbackQuerySerializer(serializers.Serializer[Any]):
    state = serializers.CharField(max_length=200)
    code = serializers.CharField(max_length=2000, required=False)
    error = serializers.CharField(max_length=200, required=False)


class DestinationOptionsQuerySerializer(serializers.Serializer[Any]):
    region_code = serializers.RegexField(
        r"^[A-Z]{2}$", default="US", required=False, help_text="ISO 3166-1 alpha-2"
    )
    language = serializers.RegexField(
        r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$", default="en", required=False
    )


class CapabilitiesQuerySerializer(WorkspaceQuerySerializer):
    account_ids = serializers.CharField(
        max_length=2000, required=False, help_text="Comma-separated account IDs"
    )
    content_profile = serializers.CharField(max_length=80, required=False)


class MediaUploadInputSerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField(max_length=64)
    file = serializers.FileField()
    alt_text = serializers.CharField(max_length=1500, required=False, default="", allow_blank=True)


class PageQuerySerializer(serializers.Serializer[Any]):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20, required=False)
    cursor = serializers.CharField(max_length=1024, required=False)


class MediaListQuerySerializer(WorkspaceQuerySerializer, PageQuerySerializer):
    pass


class PublicationListQuerySerializer(WorkspaceQuerySerializer, PageQuerySerializer):
    status = serializers.ChoiceField(choices=Publication.Status.choices, required=False)
    account_id = serializers.CharField(max_length=64, required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    scheduled_after = serializers.DateTimeField(
        required=False,
        help_text="Only publications scheduled at or after this instant (ISO 8601)",
    )
    scheduled_before = serializers.DateTimeField(
        required=False,
        help_text="Only publications scheduled before this instant (ISO 8601); "
        "after scheduled_after",
    )


class DestinationInputSerializer(StrictSerializer):
    account_id = serializers.CharField(max_length=64)
    profile = serializers.CharField(
        max_length=80, required=False, help_text="Output profile; default: the provider's first"
    )
    text = serializers.CharField(
        max_length=100_000, required=False, allow_blank=True, allow_null=True, trim_whitespace=False
    )
    media_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=20, required=False, allow_null=True
    )
    options = serializers.DictField(
        child=serializers.CharField(max_length=500, allow_blank=True), required=False, default=dict
    )


class PublicationWriteInputSerializer(StrictSerializer):
    text = serializers.CharField(
        max_length=100_000, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    media_ids = serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=20, required=False, default=list
    )
    # many=True hands max_length to the ListSerializer; the stubs' __init__ does not list it.
    destinations = DestinationInputSerializer(  # type: ignore[call-arg]
        many=True, allow_empty=False, max_length=50
    )
    voice_profile_id = serializers.CharField(
        max_length=64,
        required=False,
        allow_null=True,
        help_text="Voice profile override for this publication (wins over the accounts' "
        "assignments and the workspace default). On replace: omitted keeps the "
        "current override, null clears it.",
    )


class PublicationCreateInputSerializer(PublicationWriteInputSerializer):
    workspace_id = serializers.CharField(max_length=64)


class PublicationReplaceInputSerializer(PublicationWriteInputSerializer):
    expected_revision = serializers.IntegerField(min_value=1)


EXECUTION_INTENT_HELP = (
    "certification_test: instance administrators only; bypasses only prior local and live "
    "certification evidence and never makes a result publicly claimable"
)


class PublicationScheduleInputSerializer(StrictSerializer):
    scheduled_at = serializers.DateTimeField()
    expected_revision = serializers.IntegerField(min_value=1, required=False)
    execution_intent = serializers.ChoiceField(
        choices=Publication.Intent.choices,
        required=False,
        default=Publication.Intent.NORMAL,
        help_text=EXECUTION_INTENT_HELP,
    )


class PublicationPublishNowInputSerializer(StrictSerializer):
    expected_revision = serializers.IntegerField(min_value=1, required=False)
    execution_intent = serializers.ChoiceField(
        choices=Publication.Intent.choices,
        required=False,
        default=Publication.Intent.NORMAL,
        help_text=EXECUTION_INTENT_HELP,
    )


# --- Outputs --------------------------------------------------------------------------------


class AccountSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    provider = serializers.CharField()
    username = serializers.CharField()
    display_name = serializers.CharField()
    avatar_url = serializers.CharField()
    profile_url = serializers.CharField(
        help_text="The account's public page on its provider (a Mastodon or Bluesky profile, a "
        "public Telegram chat, a Herald feed's Atom URL); empty when there is none."
    )
    instance_url = serializers.CharField()
    account_kind = serializers.CharField()
    granted_scopes = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=Account.Status.choices)
    status_reason = serializers.CharField()
    token_expires_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the provider's access token expires (null: it does not). Herald renews "
        "it ahead of time where the provider allows; otherwise the account becomes "
        "reconnect_required some days before (HERALD_RECONNECT_WARNING_DAYS).",
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class AccountPageSerializer(ResponseSerializer):
    items = AccountSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class AccountConnectResultSerializer(ResponseSerializer):
    account = AccountSerializer(allow_null=True)
    authorization_url = serializers.CharField(
        allow_null=True,
        help_text="OAuth providers: Herald's start page (/connections/authorize/…), to open in "
        "the browser that will authorize. It asks the person to confirm, binds that browser "
        "(an HttpOnly nonce cookie) and sends it to the provider; the callback completes the "
        "connect only in that browser.",
    )


class OptionValueSerializer(serializers.Serializer[Any]):
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    value = serializers.CharField()


class DestinationOptionsSerializer(ResponseSerializer):
    options = serializers.DictField(child=OptionValueSerializer(many=True))


class MediaProbeSerializer(serializers.Serializer[Any]):
    container = serializers.ChoiceField(choices=["mp4", "mov", "webm"])
    video_codec = serializers.CharField()
    audio_codec = serializers.CharField(allow_null=True)
    has_audio = serializers.BooleanField()
    duration_seconds = serializers.FloatField(allow_null=True)
    width = serializers.IntegerField()
    height = serializers.IntegerField()
    rotation = serializers.IntegerField(help_text="Degrees a player turns the picture.")
    frame_rate = serializers.FloatField(allow_null=True)
    bit_rate = serializers.IntegerField(allow_null=True, help_text="Bits per second.")


class MediaSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    name = serializers.CharField()
    mime_type = serializers.CharField()
    size_bytes = serializers.IntegerField()
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)
    checksum_sha256 = serializers.CharField()
    alt_text = serializers.CharField()
    url = serializers.SerializerMethodField(
        help_text="Signed public URL of the file (no credentials needed), valid for "
        "HERALD_MEDIA_URL_SECONDS (default one hour) from this response; it supports Range "
        "requests. GET /media/{id}/content reads the bytes with API credentials."
    )
    created_at = serializers.DateTimeField()
    status = serializers.ChoiceField(
        choices=["processing", "ready", "failed"],
        help_text="Images are ready at once; a video is processing until a worker has probed "
        "it, then ready, or failed with failure_reason. A processing item may be attached to a "
        "publication; scheduling or publishing it waits for ready.",
    )
    failure_reason = serializers.CharField(help_text="Why probing failed; empty otherwise.")
    probe = MediaProbeSerializer(
        allow_null=True, help_text="What probing learnt of a video; null for images."
    )
    poster_url = serializers.SerializerMethodField(
        help_text="Signed public URL of the video's poster frame (JPEG), valid like url; null "
        "for images and videos not probed yet."
    )

    def get_url(self, obj: Any) -> str:
        # A signed public URL, valid HERALD_MEDIA_URL_SECONDS (publishing.services.media_links).
        return media_links.media_absolute_url(obj, self.context.get("request"))

    def get_poster_url(self, obj: Any) -> str | None:
        if not obj.poster:
            return None
        return media_links.media_absolute_url(obj, self.context.get("request"), poster=True)


class MediaPageSerializer(ResponseSerializer):
    items = MediaSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


@extend_schema_field(ReadinessDecisionSerializer)
class ReadinessDecisionField(serializers.JSONField):
    """The readiness decision stored with a blocked destination, shown as stored."""


# What a destination asks the user to do when it is not published ("": nothing).
DESTINATION_ACTIONS = ("edit", "reconnect", "retry", "contact_support")


# A named component: generators name an inline object after its property ("Destination" +
# "options"), which is the name of the destination-options response.
@extend_schema_field(
    {"$ref": "#/components/schemas/DestinationOptionSelection"}  # settings.APPEND_COMPONENTS
)
class OptionSelectionField(serializers.DictField):
    """A destination's chosen options: option name -> chosen value."""


class DestinationSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    account_id = serializers.CharField()
    provider = serializers.CharField(source="account.provider")
    username = serializers.CharField(source="account.username")
    profile = serializers.CharField()
    text = serializers.CharField(allow_null=True)
    media_ids = serializers.ListField(child=serializers.CharField(), allow_null=True)
    options = OptionSelectionField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=Destination.Status.choices)
    attempts = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    deadline_at = serializers.DateTimeField(allow_null=True)
    external_id = serializers.CharField()
    external_url = serializers.CharField()
    error_kind = serializers.CharField()
    error_message = serializers.CharField()
    action = serializers.ChoiceField(
        choices=DESTINATION_ACTIONS,
        allow_blank=True,
        help_text="edit, reconnect, retry or contact_support when not published",
    )
    readiness = ReadinessDecisionField(allow_null=True, help_text="The blocking readiness decision")
    send_stage = serializers.CharField(
        allow_null=True,
        help_text="While a long send is `sending`: uploading, processing, publishing, or waiting "
        "(the provider cannot take the post yet, see wait_reason); null otherwise",
    )
    wait_reason = serializers.SerializerMethodField(
        help_text="Why a send in stage waiting waits (publishing_limit: the account's posts per "
        "rolling 24 hours are spent); null otherwise"
    )
    published_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField()

    def get_wait_reason(self, destination: Destination) -> str | None:
        if destination.send_stage != "waiting":
            return None
        return str((destination.send_state or {}).get("reason") or "") or None


class PublicationSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    status = serializers.ChoiceField(choices=Publication.Status.choices)
    text = serializers.CharField()
    media_ids = serializers.ListField(child=serializers.CharField())
    revision = serializers.IntegerField()
    scheduled_at = serializers.DateTimeField(allow_null=True)
    execution_intent = serializers.ChoiceField(choices=Publication.Intent.choices)
    voice_profile_id = serializers.CharField(
        source="voice_override.voice_profile_id",
        allow_null=True,
        help_text="The publication's voice profile override; null: the accounts' assignments or the "
        "workspace default apply",
    )
    created_by = serializers.CharField(source="created_by_id", allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    destinations = DestinationSerializer(many=True, source="destinations.all")


class PublicationPageSerializer(ResponseSerializer):
    items = PublicationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class PublicationEventSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    destination_id = serializers.CharField(allow_null=True)
    kind = serializers.CharField()
    status = serializers.CharField()
    detail = serializers.CharField()
    # The event's "data" key (the contract's name) shadows Serializer.data in the stubs only.
    data = serializers.JSONField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()


class PublicationEventPageSerializer(ResponseSerializer):
    items = PublicationEventSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ProviderCatalogueEntrySerializer(serializers.Serializer[Any]):
    provider = serializers.CharField()
    display_name = serializers.CharField()
    connection = serializers.CharField()
    capabilities = serializers.JSONField()
    readiness = ProviderReadinessEntryField(
        help_text="This provider's entry of the readiness projection"
    )


class ProviderCatalogueSerializer(ResponseSerializer):
    providers = ProviderCatalogueEntrySerializer(many=True)


class ProviderQuotaSerializer(serializers.Serializer[Any]):
    daily_units = serializers.IntegerField()
    used_units = serializers.IntegerField()
    remaining_units = serializers.IntegerField()
    upload_cost_units = serializers.IntegerField()
    uploads_remaining = serializers.IntegerField(help_text="Uploads today's units still allow")
    resets_at = serializers.DateTimeField(help_text="When the network's quota day resets")


class CapabilityEntrySerializer(serializers.Serializer[Any]):
    account_id = serializers.CharField()
    provider = serializers.CharField()
    profiles = serializers.JSONField()
    readiness = serializers.JSONField()
    quota = ProviderQuotaSerializer(
        allow_null=True,
        help_text="The network's daily API quota as Herald counted it (YouTube); "
        "null for networks without one",
    )


class CapabilitiesSerializer(ResponseSerializer):
    items = CapabilityEntrySerializer(many=True)
    provider_readiness = serializers.ListField(
        child=ProviderReadinessEntryField(),
        help_text="The readiness projection of these accounts' providers",
    )


# --- Connects that reach several accounts (Meta's Facebook Login) ------------------------------


class ConnectionCandidateSerializer(ResponseSerializer):
    key = serializers.CharField(help_text="What to send back to choose it: provider:external_id.")
    provider = serializers.CharField(
        help_text="The provider the account would be: facebook, instagram."
    )
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label
    external_id = serializers.CharField()
    username = serializers.CharField()
    display_name = serializers.CharField()
    avatar_url = serializers.CharField()
    profile_url = serializers.CharField()
    account_kind = serializers.CharField()
    granted_scopes = serializers.ListField(
        child=serializers.CharField(),
        help_text="The permissions the login granted that this account uses (scope evidence).",
    )
    available = serializers.BooleanField(
        help_text="Whether this server can connect the candidate's provider."
    )


class ConnectionChoiceSerializer(ResponseSerializer):
    choice_id = serializers.CharField(source="id")
    workspace_id = serializers.CharField()
    provider = serializers.CharField(help_text="The provider the connect was started for.")
    expires_at = serializers.DateTimeField()
    candidates = ConnectionCandidateSerializer(many=True)
    choose_url = serializers.CharField(
        help_text='POST the chosen candidates\' keys here ({"candidates": [key, ...]}).'
    )


class ConnectionChoiceInputSerializer(StrictSerializer):
    candidates = serializers.ListField(
        child=serializers.CharField(max_length=300),
        min_length=1,
        max_length=100,
        help_text="The keys of the candidates to connect; each becomes its own account.",
    )


class ConnectionChoiceResultSerializer(ResponseSerializer):
    accounts = AccountSerializer(many=True)


class MetaSignedRequestInputSerializer(serializers.Serializer[Any]):
    signed_request = serializers.CharField(max_length=8192)


class MetaDataDeletionAnswerSerializer(serializers.Serializer[Any]):
    url = serializers.CharField(help_text="Where the request's state can be seen.")
    confirmation_code = serializers.CharField()


class MetaDataDeletionStatusSerializer(ResponseSerializer):
    confirmation_code = serializers.CharField()
    status = serializers.CharField(help_text="complete: the connections' data was erased.")
    accounts_erased = serializers.IntegerField()
    requested_at = serializers.DateTimeField(source="created_at")
