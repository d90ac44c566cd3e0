from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.names import NameField
from config.api.request import StrictSerializer
from config.api.schema import FlatRows, ResponseSerializer, datetime_representation
from workspaces.models import (
    AccessAuditEvent,
    ApiToken,
    Invitation,
    OrganizationMembership,
    WorkspaceMembership,
)

# --- Inputs ---------------------------------------------------------------------------------


class OrganizationCreateInputSerializer(StrictSerializer):
    name = NameField(max_length=120)


class WorkspaceCreateInputSerializer(StrictSerializer):
    organization_id = serializers.CharField(max_length=64)
    name = NameField(max_length=80)
    timezone = serializers.CharField(max_length=64, required=False, default="UTC")

    def validate_timezone(self, value: str) -> str:
        return _valid_timezone(value)


class WorkspaceUpdateInputSerializer(StrictSerializer):
    name = NameField(max_length=80, required=False)
    timezone = serializers.CharField(max_length=64, required=False)

    def validate_timezone(self, value: str) -> str:
        return _valid_timezone(value)


def _valid_timezone(value: str) -> str:
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise serializers.ValidationError("Unknown IANA time zone.") from exc
    return value


class MemberUpdateInputSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=WorkspaceMembership.Role.choices, required=False)
    status = serializers.ChoiceField(choices=WorkspaceMembership.Status.choices, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError({"role": ["Send role, status or both."]})
        return attrs


class InvitationCreateInputSerializer(StrictSerializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=WorkspaceMembership.Role.choices)


class InvitationAcceptInputSerializer(StrictSerializer):
    token = serializers.CharField(min_length=10, max_length=200)


CURRENT_PASSWORD_MAX_LENGTH = 256


class PasswordField(serializers.CharField):
    """A password: a JSON string only. ``CharField`` would take the number ``123`` as the text
    ``"123"``; a password is never a number, and the deletion view checks only strings."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class WorkspaceDeleteInputSerializer(StrictSerializer):
    confirm_name = serializers.CharField(max_length=200, trim_whitespace=False)
    current_password = PasswordField(
        max_length=CURRENT_PASSWORD_MAX_LENGTH,
        required=False,
        trim_whitespace=False,
        write_only=True,
    )


class AuditQuerySerializer(serializers.Serializer[Any]):
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50, required=False)


class ApiTokenCreateInputSerializer(StrictSerializer):
    name = NameField(max_length=120)
    permissions = serializers.ListField(
        child=serializers.ChoiceField(choices=[(p, p) for p in ApiToken.PERMISSIONS]),
        min_length=1,
        max_length=2,
    )
    workspace_id = serializers.CharField(max_length=64, required=False, allow_null=True)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


# --- Outputs --------------------------------------------------------------------------------

_PERMISSIONS = [(permission, permission) for permission in ApiToken.PERMISSIONS]


class OrganizationSerializer(ResponseSerializer):
    id = serializers.CharField()
    name = serializers.CharField()
    role = serializers.ChoiceField(
        choices=OrganizationMembership.Role.choices, help_text="The caller's organization role."
    )
    created_at = serializers.DateTimeField()


class OrganizationPageSerializer(ResponseSerializer):
    items = OrganizationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class PlanSummarySerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    name = serializers.CharField()


class WorkspaceSerializer(ResponseSerializer):
    id = serializers.CharField()
    organization_id = serializers.CharField()
    name = serializers.CharField()
    timezone = serializers.CharField()
    role = serializers.SerializerMethodField(help_text="The caller's workspace role.")
    member_count = serializers.SerializerMethodField(help_text="Active members.")
    plan = PlanSummarySerializer()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ChoiceField(choices=WorkspaceMembership.Role.choices))
    def get_role(self, instance: Any) -> str:
        roles: dict[str, str] = self.context.get("roles", {})
        return roles.get(str(instance.pk), "")

    def get_member_count(self, instance: Any) -> int:
        return int(getattr(instance, "member_count", 0))

    def to_representation(self, instance: Any) -> dict[str, Any]:
        # Built directly (lists of workspaces are hot): the same JSON as the fields declared above
        # (which remain the schema); tests/api/test_api_representations.py compares the two.
        fields = self.fields
        iso = self.__dict__.get("_iso")  # one per response (a list reuses this instance)
        if iso is None:
            iso = self.__dict__["_iso"] = datetime_representation(fields["created_at"])
        if hasattr(instance, "plan_name"):  # annotated by selectors.workspace_list_for_actor
            plan_code, plan_name = instance.plan_id, instance.plan_name
        else:  # the plan is a required foreign key
            plan_code, plan_name = instance.plan.code, instance.plan.name
        created_at, updated_at = instance.created_at, instance.updated_at
        return {
            "$schema": fields["$schema"].to_representation(instance),
            "id": str(instance.pk),
            "organization_id": str(instance.organization_id),
            "name": str(instance.name),
            "timezone": str(instance.timezone),
            "role": self.get_role(instance),
            "member_count": self.get_member_count(instance),
            "plan": {"code": str(plan_code), "name": str(plan_name)},
            "created_at": None if created_at is None else iso(created_at),
            "updated_at": None if updated_at is None else iso(updated_at),
        }


class WorkspacePageSerializer(ResponseSerializer):
    items = WorkspaceSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class MemberSerializer(ResponseSerializer):
    user_id = serializers.CharField()
    workspace_id = serializers.CharField()
    email = serializers.EmailField(source="user.email")
    name = serializers.CharField(source="user.name", allow_blank=True)
    role = serializers.ChoiceField(choices=WorkspaceMembership.Role.choices)
    status = serializers.ChoiceField(choices=WorkspaceMembership.Status.choices)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MemberPageSerializer(ResponseSerializer):
    items = MemberSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class InvitationSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=WorkspaceMembership.Role.choices)
    status = serializers.SerializerMethodField(
        help_text="A pending invitation past its expiry reads as expired."
    )
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    accepted_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.ChoiceField(choices=Invitation.Status.choices))
    def get_status(self, obj: Invitation) -> str:
        return obj.effective_status


class InvitationWithTokenSerializer(InvitationSerializer):
    delivery = serializers.ChoiceField(
        choices=Invitation.Delivery.choices,
        help_text=(
            "How the link reaches the invitee. email: this instance e-mailed it to the invitee "
            "alone; the answer carries no link. manual: this instance cannot send e-mail, so the "
            "answer carries accept_token and accept_url for an administrator to pass on by hand "
            "(an account created from it stays unverified until its mailbox is proven)."
        ),
    )
    accept_token = serializers.CharField(
        required=False,
        help_text=(
            "Present only when delivery is manual (the instance cannot send e-mail): the "
            "one-time token, shown only here."
        ),
    )
    accept_url = serializers.URLField(
        required=False,
        help_text=(
            "Present only when delivery is manual (the instance cannot send e-mail): the "
            "invitation page (/invitations/{accept_token}/), absolute, to pass on by hand; the "
            "invitee opens it to choose a password or sign in, then accept. Shown only here."
        ),
    )


class InvitationPageSerializer(ResponseSerializer):
    items = InvitationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class AccessAuditEventSerializer(ResponseSerializer):
    id = serializers.CharField()
    workspace_id = serializers.CharField()
    action = serializers.ChoiceField(choices=AccessAuditEvent.Action.choices)
    actor_user_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    invitation_id = serializers.CharField()
    previous_role = serializers.CharField()
    previous_status = serializers.CharField()
    role = serializers.CharField()
    status = serializers.CharField()
    subject_email = serializers.CharField()
    subject_user_id = serializers.CharField()


# The access audit lists up to 200 events per response: built from value rows (same JSON).
ACCESS_AUDIT_ROWS = FlatRows(AccessAuditEventSerializer, AccessAuditEvent)


class ApiTokenSerializer(ResponseSerializer):
    id = serializers.CharField()
    name = serializers.CharField()
    permissions = serializers.ListField(child=serializers.ChoiceField(choices=_PERMISSIONS))
    workspace_id = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    status = serializers.ChoiceField(choices=ApiToken.Status.choices)


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(help_text="The full token. Shown once; store it now.")


class ApiTokenPageSerializer(ResponseSerializer):
    items = ApiTokenSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class MeTokenSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    name = serializers.CharField()
    permissions = serializers.ListField(child=serializers.ChoiceField(choices=_PERMISSIONS))
    workspace_id = serializers.CharField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)


class MeUserSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    email = serializers.EmailField()
    email_verified = serializers.BooleanField(
        help_text=(
            "Whether the mailbox was proven (an invitation link that came by e-mail, a "
            "verification link from /settings/, or a password reset)."
        )
    )
    name = serializers.CharField(allow_blank=True)
    is_instance_admin = serializers.BooleanField(source="is_superuser")


class MeSerializer(ResponseSerializer):
    user = MeUserSerializer()
    organizations = OrganizationSerializer(many=True)
    workspaces = WorkspaceSerializer(many=True)
    token = MeTokenSerializer(allow_null=True)


class BlockerSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    detail = serializers.CharField()


class WorkspaceDeletionPreviewSerializer(ResponseSerializer):
    workspace_id = serializers.CharField()
    workspace_name = serializers.CharField()
    confirm_name = serializers.CharField()
    data_loss = serializers.DictField(child=serializers.IntegerField())
    retained_records = serializers.DictField(child=serializers.IntegerField())
    recovery = serializers.CharField()
    blockers = BlockerSerializer(many=True)
    can_delete = serializers.BooleanField()


class UsageSerializer(ResponseSerializer):
    workspace_id = serializers.CharField()
    plan = PlanSummarySerializer()
    limits = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    usage = serializers.DictField(child=serializers.IntegerField())
    period_start = serializers.DateField()
    period_end = serializers.DateField()
