"""Readiness API shapes. The projection's serializers document the JSON that
``readiness.projection`` builds (the view returns that JSON as built, see the view)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from readiness.decisions import HEALTHY, INTENTS, STATES
from readiness.ledgers import ACCOUNT_KINDS
from readiness.models import (
    OPERATIONS,
    ApprovalReview,
    CertificationCheck,
    CertificationRun,
    RuntimeControl,
)

# --- The projection -------------------------------------------------------------------------


class ReadinessQuerySerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField(max_length=64)


class ReadinessBlockerSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    detail = serializers.CharField()


class ReadinessFactSerializer(serializers.Serializer[Any]):
    status = serializers.CharField(
        help_text="The fact's normalized status, e.g. present, passed, valid, enabled"
    )
    source = serializers.CharField(  # type: ignore[assignment]  # a field named like Field.source
        required=False, help_text="configuration/control: where it comes from"
    )
    mode = serializers.CharField(required=False, help_text="policy: the policy mode")
    tested_at = serializers.DateTimeField(required=False, allow_null=True)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class ReadinessFactsSerializer(serializers.Serializer[Any]):
    configuration = ReadinessFactSerializer()
    local_test = ReadinessFactSerializer()
    live_certification = ReadinessFactSerializer()
    approval = ReadinessFactSerializer()
    authorization = ReadinessFactSerializer()
    policy = ReadinessFactSerializer()
    control = ReadinessFactSerializer()


class ReadinessSubjectSerializer(serializers.Serializer[Any]):
    provider = serializers.CharField()
    app_fingerprint = serializers.CharField()
    deployment_environment = serializers.CharField()
    provider_environment = serializers.CharField()
    instance_fingerprint = serializers.CharField()
    account_kind = serializers.CharField()
    output_profile = serializers.CharField()
    operation = serializers.ChoiceField(choices=OPERATIONS)
    policy_mode = serializers.CharField()


class ReadinessDecisionSerializer(serializers.Serializer[Any]):
    state = serializers.ChoiceField(choices=(HEALTHY, *STATES))
    executable = serializers.BooleanField()
    connectable = serializers.BooleanField()
    publishable = serializers.BooleanField()
    advertisable = serializers.BooleanField()
    intent = serializers.ChoiceField(choices=INTENTS)
    facts = ReadinessFactsSerializer()
    blockers = ReadinessBlockerSerializer(many=True)
    contract_digest = serializers.CharField()
    subject_digest = serializers.CharField()
    subject = ReadinessSubjectSerializer(allow_null=True)


class ReadinessIssueSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    detail = serializers.CharField()
    count = serializers.IntegerField(help_text="How many decisions of this provider it blocks")


class ReadinessProfileSerializer(serializers.Serializer[Any]):
    account_id = serializers.CharField()
    output_profile = serializers.CharField()
    immediate = ReadinessDecisionSerializer()
    scheduled = ReadinessDecisionSerializer()


class ProviderReadinessEntrySerializer(ReadinessDecisionSerializer):
    provider = serializers.CharField()
    display_name = serializers.CharField()
    configured_app_state = serializers.CharField(
        help_text="builtin, dynamic, database, missing or unknown"
    )
    connected_accounts = serializers.IntegerField()
    blocking_issues = ReadinessIssueSerializer(many=True)
    profiles = ReadinessProfileSerializer(many=True)


class ProviderReadinessSerializer(ResponseSerializer):
    workspace_id = serializers.CharField()
    deployment = serializers.ChoiceField(choices=("self_hosted", "cloud"))
    enforced = serializers.BooleanField(
        help_text="Evidence gaps block (cloud and the enforcement flag)"
    )
    providers = ProviderReadinessEntrySerializer(many=True)


# --- Ledger appends -------------------------------------------------------------------------


class ApprovalReviewInputSerializer(StrictSerializer):
    provider = serializers.CharField(max_length=40)
    outcome = serializers.ChoiceField(choices=ApprovalReview.Outcome.choices)
    operations = serializers.ListField(
        child=serializers.ChoiceField(choices=OPERATIONS),
        required=False,
        allow_empty=False,
        max_length=len(OPERATIONS),
        help_text="Permitted operations; default all",
    )
    review_reference = serializers.CharField(
        max_length=500, required=False, default="", help_text="Stored only as a one-way fingerprint"
    )
    reviewed_at = serializers.DateTimeField(required=False)
    expires_at = serializers.DateTimeField(required=False)


class RuntimeControlInputSerializer(StrictSerializer):
    provider = serializers.CharField(max_length=40)
    output_profile = serializers.CharField(
        max_length=80, required=False, default="", allow_blank=True
    )
    operation = serializers.ChoiceField(
        choices=OPERATIONS, required=False, default="", allow_blank=True
    )
    mode = serializers.ChoiceField(choices=RuntimeControl.Mode.choices)
    reason = serializers.ChoiceField(choices=RuntimeControl.Reason.choices)


class CertificationCheckInputSerializer(StrictSerializer):
    name = serializers.ChoiceField(choices=CertificationCheck.Name.choices)
    outcome = serializers.ChoiceField(choices=CertificationCheck.Outcome.choices)
    reason = serializers.RegexField(
        r"^[a-z][a-z0-9_]{0,39}$",
        required=False,
        default="",
        help_text="A contract-approved not-applicable reason",
    )


class CertificationInputSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=CertificationRun.Kind.choices)
    provider = serializers.CharField(max_length=40)
    operation = serializers.ChoiceField(choices=OPERATIONS)
    output_profile = serializers.CharField(
        max_length=80, required=False, default="", allow_blank=True
    )
    account_id = serializers.UUIDField(
        required=False, help_text="Live runs: the account used (stored as a hash)"
    )
    account_kind = serializers.ChoiceField(
        choices=ACCOUNT_KINDS,
        required=False,
        default="",
        allow_blank=True,
        help_text="Runs without account_id; default: the provider's kind",
    )
    instance_url = serializers.URLField(
        max_length=300,
        required=False,
        default="",
        help_text="Federated providers without account_id (stored as a hash)",
    )
    # many=True hands max_length to the ListSerializer; the stubs' __init__ does not list it.
    checks = CertificationCheckInputSerializer(  # type: ignore[call-arg]
        many=True, allow_empty=False, max_length=6
    )
    external_result_reference = serializers.CharField(
        max_length=500,
        required=False,
        default="",
        help_text="Required for publish operations (the provider's "
        "post reference); stored only as a one-way fingerprint",
    )
    tested_at = serializers.DateTimeField(required=False)
    retest_days = serializers.IntegerField(min_value=1, max_value=365, required=False)


class ApprovalReviewSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    provider = serializers.CharField()
    app_fingerprint = serializers.CharField()
    provider_environment = serializers.CharField()
    outcome = serializers.CharField()
    operations = serializers.ListField(child=serializers.CharField())
    reference_fingerprint = serializers.CharField()
    operator_fingerprint = serializers.CharField()
    reviewed_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class RuntimeControlSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    provider = serializers.CharField()
    output_profile = serializers.CharField()
    operation = serializers.CharField()
    mode = serializers.CharField()
    reason = serializers.CharField()
    operator_fingerprint = serializers.CharField()
    created_at = serializers.DateTimeField()


class CertificationCheckSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    outcome = serializers.CharField()
    reason = serializers.CharField()


class CertificationRunSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    provider = serializers.CharField()
    app_fingerprint = serializers.CharField()
    deployment_environment = serializers.CharField()
    provider_environment = serializers.CharField()
    instance_fingerprint = serializers.CharField()
    account_kind = serializers.CharField()
    output_profile = serializers.CharField()
    operation = serializers.CharField()
    policy_mode = serializers.CharField()
    subject_digest = serializers.CharField()
    contract_digest = serializers.CharField()
    tested_revision = serializers.CharField()
    operator_fingerprint = serializers.CharField()
    account_fingerprint = serializers.CharField()
    external_result_fingerprint = serializers.CharField()
    required_scopes = serializers.ListField(child=serializers.CharField())
    granted_scopes = serializers.ListField(child=serializers.CharField())
    outcome = serializers.CharField()
    tested_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    checks = CertificationCheckSerializer(many=True, source="checks.all")


@extend_schema_field(ProviderReadinessEntrySerializer)
class ProviderReadinessEntryField(serializers.JSONField):
    """One provider entry of the projection, passed through as the projection built it
    (documented as ProviderReadinessEntry): the catalogue and capability resolution embed it."""
