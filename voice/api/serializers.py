"""Voice profile request and response shapes. The definition's limits come from
``voice.definition`` (one statement of every limit, for validation and for the schema)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from config.api.names import NameField
from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from voice.definition import (
    LIST_FIELDS,
    MAX_DEFINITION_BYTES,
    OBJECT_LIST_FIELDS,
    STRING_FIELDS,
    DefinitionError,
    Text,
    clean_definition,
    clean_text,
    stored_definition,
)
from voice.models import NAME_MAX_LENGTH
from voice.selectors import assigned_account_ids

NAME_RULE = Text(NAME_MAX_LENGTH, required=True, one_line=True)


def _char(rule: Text, *, output: bool = False) -> serializers.CharField:
    if output:  # a response carries every member, blank or not
        return serializers.CharField(max_length=rule.max_length, allow_blank=True)
    return serializers.CharField(
        max_length=rule.max_length,
        required=rule.required,
        allow_blank=not rule.required,
        trim_whitespace=False,
    )


_OBJECT_NAMES = {
    "examples": "VoiceExample",
    "corrections": "VoiceCorrection",
    "interview_answers": "VoiceInterviewAnswer",
}


def _definition_serializer(*, output: bool) -> type[serializers.Serializer[Any]]:
    """The documented shape of a definition, generated from ``voice.definition``'s tables:
    in requests every member is optional; in responses every member is present."""
    attrs: dict[str, Any] = {}
    for name, rule in STRING_FIELDS.items():
        attrs[name] = _char(rule, output=output)
    for name, (max_items, item_rule) in LIST_FIELDS.items():
        attrs[name] = serializers.ListField(
            child=_char(Text(item_rule.max_length, required=True), output=output),
            max_length=max_items,
            required=output,
        )
    for name, (max_items, members) in OBJECT_LIST_FIELDS.items():
        fields = {member: _char(rule, output=output) for member, rule in members.items()}
        item = extend_schema_serializer(component_name=_OBJECT_NAMES[name])(
            type(f"{_OBJECT_NAMES[name]}Serializer", (serializers.Serializer,), fields)
        )
        attrs[name] = item(many=True, max_length=max_items, required=output)
    if output:
        attrs["to_representation"] = lambda self, value: stored_definition(value)
    serializer = type("VoiceDefinitionSerializer", (serializers.Serializer,), attrs)
    return extend_schema_serializer(component_name="VoiceDefinition")(serializer)


# Documentation of the definition; validation is ``voice.definition.clean_definition``.
VoiceDefinitionSerializer = _definition_serializer(output=False)
VoiceDefinitionOutputSerializer = _definition_serializer(output=True)

DEFINITION_HELP = (
    f"At most {MAX_DEFINITION_BYTES} bytes (64 KiB) as compact JSON. Text is trimmed, CRLF "
    "becomes LF, control characters are refused; lists drop case-insensitive duplicates. "
    "Every member is optional; an empty object is valid."
)


@extend_schema_field(VoiceDefinitionSerializer)
class DefinitionField(serializers.Field[Any, Any, Any, Any]):
    """A voice definition, cleaned by ``clean_definition``; errors name the exact member,
    e.g. ``body.definition.traits[3]`` or ``body.definition.examples[0].text``."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return clean_definition(data)
        except DefinitionError as exc:
            detail: dict[str, list[str]] = {}
            for path, message in exc.errors:
                detail.setdefault(path or "non_field_errors", []).append(message)
            raise serializers.ValidationError(detail) from exc


class CleanTextField(serializers.CharField):
    """A string cleaned like definition text (trim, CRLF → LF, no control characters)."""

    def __init__(self, rule: Text, **kwargs: Any) -> None:
        self.rule = rule
        kwargs.setdefault("max_length", rule.max_length)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        text, error = clean_text(data, self.rule)
        if error is not None:
            raise serializers.ValidationError(error)
        return text


# --- Inputs ---------------------------------------------------------------------------------


class VoiceProfileListQuerySerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField(max_length=64)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20, required=False)
    cursor = serializers.CharField(max_length=1024, required=False)


class VoiceProfileCreateInputSerializer(StrictSerializer):
    workspace_id = serializers.CharField(max_length=64)
    name = NameField(
        max_length=NAME_RULE.max_length,
        help_text="Unique in the workspace, case-insensitively, after Unicode NFKC normalization.",
    )
    definition = DefinitionField(required=False, default=dict, help_text=DEFINITION_HELP)


class VoiceProfileReplaceInputSerializer(StrictSerializer):
    definition = DefinitionField(help_text=DEFINITION_HELP)
    expected_revision = serializers.IntegerField(
        min_value=1, help_text="The revision the caller last saw; another one is a 409."
    )
    name = NameField(
        max_length=NAME_RULE.max_length,
        help_text="Unique in the workspace, case-insensitively, after Unicode NFKC normalization.",
    )
    workspace_id = serializers.CharField(max_length=64, help_text="The profile's workspace.")


class VoiceProfileAssignmentInputSerializer(StrictSerializer):
    voice_profile_id = serializers.CharField(
        max_length=64,
        allow_null=True,
        help_text="A profile of the account's workspace; null: follow the workspace default.",
    )


# --- Outputs --------------------------------------------------------------------------------


class VoiceProfileSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    name = serializers.CharField()
    is_default = serializers.BooleanField()
    assigned_account_ids = serializers.SerializerMethodField()
    revision = serializers.IntegerField()
    schema_version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    definition = VoiceDefinitionOutputSerializer()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_assigned_account_ids(self, obj: Any) -> list[str]:
        return assigned_account_ids(obj)


class VoiceProfilePageSerializer(ResponseSerializer):
    items = VoiceProfileSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class VoiceProfileAssignmentSerializer(ResponseSerializer):
    account_id = serializers.CharField()
    workspace_id = serializers.CharField()
    voice_profile_id = serializers.CharField(
        allow_null=True,
        help_text="The assigned profile; null when the account follows the default.",
    )
    effective_voice_profile_id = serializers.CharField(
        allow_null=True, help_text="The profile the account writes with (assignment or default)."
    )
