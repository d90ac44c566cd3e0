"""Discovery request and response shapes (the request and the DiscoveryResult)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from discovery.services import LIMIT_DEFAULT, LIMIT_MAX, PLATFORMS_MAX
from providers import PROVIDERS
from voice.api.serializers import CleanTextField
from voice.definition import Text


class DiscoverInputSerializer(StrictSerializer):
    workspace_id = serializers.CharField(max_length=64)
    platforms = serializers.ListField(
        child=serializers.ChoiceField(choices=list(PROVIDERS)),
        min_length=1,
        max_length=PLATFORMS_MAX,
        help_text="1 to 5 distinct platforms Herald can publish to; one treatment each.",
    )
    focus = CleanTextField(
        Text(1000),
        required=False,
        default="",
        allow_blank=True,
        help_text="What the ideas should be about (optional).",
    )
    audience = CleanTextField(
        Text(500),
        required=False,
        default="",
        allow_blank=True,
        help_text="Who the posts are for (optional).",
    )
    voice_profile_id = serializers.CharField(
        max_length=64,
        required=False,
        allow_null=True,
        default=None,
        help_text="A voice profile of the workspace (404 if unknown). Default: the profile the "
        "requested platforms' accounts write with when they agree, else the workspace default.",
    )
    limit = serializers.IntegerField(
        min_value=1,
        max_value=LIMIT_MAX,
        default=LIMIT_DEFAULT,
        required=False,
        help_text="At most this many cards (1 to 8, default 5).",
    )

    def validate_platforms(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Each platform may appear once.")
        return value


class OpportunityAngleSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.label
    thesis = serializers.CharField()
    approach = serializers.CharField()


class PlatformTreatmentSerializer(serializers.Serializer[Any]):
    platform = serializers.CharField()
    format = serializers.CharField(help_text="Output profile, e.g. mastodon.post")
    media = serializers.CharField()
    objective = serializers.CharField()
    rationale = serializers.CharField()


class OpportunitySerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    title = serializers.CharField()
    hook = serializers.CharField()
    signal_date = serializers.DateField(help_text="ISO date of the signal the idea comes from")
    why_it_fits = serializers.CharField()
    why_now = serializers.CharField()
    angles = OpportunityAngleSerializer(many=True, help_text="3 to 5, unique labels")
    platform_treatments = PlatformTreatmentSerializer(
        many=True, help_text="Exactly one per requested platform, in the requested order"
    )


class DiscoveryResultSerializer(ResponseSerializer):
    generated_at = serializers.DateTimeField()
    model = serializers.CharField(help_text="The engine and its version, or the upstream model")
    opportunities = OpportunitySerializer(many=True)
