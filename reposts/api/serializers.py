"""Repost automation: input bounds (every one a 422 at its exact location) and response shapes
(SettingsResponse, RepostAccount, RepostGrant, RepostPolicy, RepostRule)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from config.api.request import StrictSerializer
from config.api.schema import ResponseSerializer
from reposts.models import MAX_SECONDS, RepostExecution, RepostPolicy, RepostStage

MAX_THRESHOLD = 10**12
MAX_POLICIES = 50
MAX_ACCOUNTS = 50
MAX_STAGES = 20

# --- Inputs -----------------------------------------------------------------------------------


class RepostSettingsQuerySerializer(serializers.Serializer[Any]):
    workspace_id = serializers.CharField(max_length=64)


class RepostStageInputSerializer(StrictSerializer):
    delay_seconds = serializers.IntegerField(min_value=0, max_value=MAX_SECONDS)
    unrepost_previous = serializers.BooleanField(default=False)


class RepostRuleInputSerializer(StrictSerializer):
    delay_seconds = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SECONDS,
        default=86_400,
        help_text="Seconds after publishing when a rule without stages becomes eligible (and "
        "reposts once the thresholds pass). A rule with stages uses each stage's delay.",
    )
    evaluation_window_seconds = serializers.IntegerField(
        min_value=900, max_value=MAX_SECONDS, default=604_800
    )
    threshold_mode = serializers.ChoiceField(
        choices=RepostPolicy.ThresholdMode.choices, default="all"
    )
    min_comments = serializers.IntegerField(min_value=0, max_value=MAX_THRESHOLD, default=0)
    min_likes = serializers.IntegerField(min_value=0, max_value=MAX_THRESHOLD, default=0)
    min_reposts = serializers.IntegerField(min_value=0, max_value=MAX_THRESHOLD, default=0)
    min_views = serializers.IntegerField(min_value=0, max_value=MAX_THRESHOLD, default=0)
    plateau_checks = serializers.IntegerField(min_value=2, max_value=12, default=3)
    require_plateau = serializers.BooleanField(default=False)
    stages = serializers.ListField(
        child=RepostStageInputSerializer(),
        max_length=MAX_STAGES,
        default=list,
        help_text="At most 20; delays (seconds after publishing) strictly increasing; the first "
        "never unreposts and is when the execution becomes eligible. Empty: one repost "
        "at delay_seconds.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        stages: list[dict[str, Any]] = attrs.get("stages") or []
        errors: dict[str, Any] = {}
        stage_errors: list[dict[str, list[str]]] = [{} for _ in stages]
        if stages and stages[0]["unrepost_previous"]:
            stage_errors[0]["unrepost_previous"] = [
                "The first stage has no previous repost to remove."
            ]
        for index in range(1, len(stages)):
            if stages[index]["delay_seconds"] <= stages[index - 1]["delay_seconds"]:
                stage_errors[index]["delay_seconds"] = [
                    "Stage delays must be strictly increasing (greater than the previous stage's)."
                ]
        if any(stage_errors):
            errors["stages"] = stage_errors
        # The schedule: the stages, or one repost at delay_seconds (reposts.rules.rule_stages).
        last = stages[-1]["delay_seconds"] if stages else attrs["delay_seconds"]
        if attrs["evaluation_window_seconds"] <= last:
            errors["evaluation_window_seconds"] = [
                f"The evaluation window must end after the last stage ({last} seconds)."
            ]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def _default_rule() -> dict[str, Any]:
    rule = RepostRuleInputSerializer(data={})
    rule.is_valid(raise_exception=True)
    return dict(rule.validated_data)


class RepostPolicyInputSerializer(StrictSerializer):
    id = serializers.CharField(
        max_length=64, required=False, help_text="Keep an existing policy (its ID)."
    )
    name = serializers.CharField(min_length=1, max_length=80)
    enabled = serializers.BooleanField(default=True)
    source_account_ids = serializers.ListField(
        child=serializers.CharField(max_length=64),
        max_length=MAX_ACCOUNTS,
        default=list,
        help_text="Empty: every compatible account of the workspace.",
    )
    target_account_ids = serializers.ListField(
        child=serializers.CharField(max_length=64),
        min_length=1,
        max_length=MAX_ACCOUNTS,
        help_text="Accounts of this workspace, or of another through an active outbound grant.",
    )
    rule = RepostRuleInputSerializer(required=False)
    # Accepted so that a policy read from GET can be sent back as is; the server sets them.
    created_at = serializers.DateTimeField(required=False, help_text="Ignored (set by the server).")
    updated_at = serializers.DateTimeField(required=False, help_text="Ignored (set by the server).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs.pop("created_at", None)
        attrs.pop("updated_at", None)
        if "rule" not in attrs:
            attrs["rule"] = _default_rule()
        errors: dict[str, Any] = {}
        for key in ("source_account_ids", "target_account_ids"):
            seen: set[str] = set()
            duplicates: dict[int, list[str]] = {}
            for index, value in enumerate(attrs.get(key) or []):
                if value.lower() in seen:
                    duplicates[index] = ["This account is listed twice."]
                seen.add(value.lower())
            if duplicates:
                errors[key] = duplicates
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class RepostSettingsReplaceInputSerializer(StrictSerializer):
    workspace_id = serializers.CharField(max_length=64)
    expected_revision = serializers.IntegerField(
        min_value=0, help_text="The revision last read (0 before the first save); stale → 409."
    )
    policies = serializers.ListField(child=RepostPolicyInputSerializer(), max_length=MAX_POLICIES)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        names: dict[str, int] = {}
        ids: set[str] = set()
        errors: dict[int, dict[str, list[str]]] = {}
        for index, policy in enumerate(attrs["policies"]):
            name = policy["name"].casefold()
            if name in names:
                errors.setdefault(index, {})["name"] = [
                    f"Policy names must be unique (the same as policies[{names[name]}])."
                ]
            names.setdefault(name, index)
            policy_id = str(policy.get("id") or "").lower()
            if policy_id and policy_id in ids:
                errors.setdefault(index, {})["id"] = ["This policy is listed twice."]
            ids.add(policy_id)
        if errors:
            # Keyed by the policy's index in the list, as DRF's own ListSerializer errors are.
            raise serializers.ValidationError({"policies": errors})  # type: ignore[dict-item]
        return attrs


class RepostGrantCreateInputSerializer(StrictSerializer):
    source_workspace_id = serializers.CharField(
        max_length=64, help_text="The workspace that may repost through the account."
    )
    target_account_id = serializers.CharField(
        max_length=64, help_text="An account of another workspace."
    )


# --- Outputs ----------------------------------------------------------------------------------


class RepostStageRuleSerializer(serializers.Serializer[Any]):
    delay_seconds = serializers.IntegerField()
    unrepost_previous = serializers.BooleanField()


class RepostRuleSerializer(serializers.Serializer[Any]):
    delay_seconds = serializers.IntegerField()
    evaluation_window_seconds = serializers.IntegerField()
    min_comments = serializers.IntegerField()
    min_likes = serializers.IntegerField()
    min_reposts = serializers.IntegerField()
    min_views = serializers.IntegerField()
    plateau_checks = serializers.IntegerField()
    require_plateau = serializers.BooleanField()
    threshold_mode = serializers.ChoiceField(choices=RepostPolicy.ThresholdMode.choices)
    stages = RepostStageRuleSerializer(many=True)


class RepostAccountSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    platform = serializers.CharField()
    username = serializers.CharField()
    avatar_url = serializers.CharField()
    instance_url = serializers.CharField()
    workspace_id = serializers.CharField()
    workspace_name = serializers.CharField()
    unavailable_reason = serializers.CharField(
        help_text="Empty when the workspace can repost through it now."
    )
    cross_workspace = serializers.BooleanField()
    grant_active = serializers.BooleanField()
    grant_required = serializers.BooleanField()
    supports_repost = serializers.BooleanField()


class RepostGrantSerializer(ResponseSerializer):
    id = serializers.CharField()
    created_at = serializers.DateTimeField()
    platform = serializers.CharField()
    direction = serializers.ChoiceField(
        choices=[("outbound", "outbound"), ("inbound", "inbound")],
        help_text="outbound: this workspace reposts through another workspace's account.",
    )
    source_workspace_id = serializers.CharField()
    source_workspace_name = serializers.CharField()
    target_account_id = serializers.CharField()
    target_username = serializers.CharField()
    target_workspace_id = serializers.CharField()
    target_workspace_name = serializers.CharField()


class RepostPolicySerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    enabled = serializers.BooleanField()
    source_account_ids = serializers.ListField(child=serializers.CharField())
    target_account_ids = serializers.ListField(child=serializers.CharField())
    rule = RepostRuleSerializer()


class RepostMetricsSerializer(serializers.Serializer[Any]):
    likes = serializers.IntegerField()
    comments = serializers.IntegerField()
    reposts = serializers.IntegerField()
    views = serializers.IntegerField()


class RepostStageSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    delay_seconds = serializers.IntegerField()
    unrepost_previous = serializers.BooleanField()
    due_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=RepostStage.Status.choices)
    intent_at = serializers.DateTimeField(allow_null=True)
    repost_id = serializers.CharField()
    repost_url = serializers.CharField()
    reposted_at = serializers.DateTimeField(allow_null=True)
    reconciled = serializers.BooleanField(
        help_text="The outcome was confirmed by asking the provider."
    )
    unreposted_at = serializers.DateTimeField(allow_null=True)
    error_message = serializers.CharField()


class RepostExecutionSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=RepostExecution.Status.choices)
    policy_id = serializers.CharField(allow_null=True)
    policy_name = serializers.SerializerMethodField()
    publication_id = serializers.CharField(source="destination.publication_id")
    destination_id = serializers.CharField()
    platform = serializers.CharField(source="target_account.provider")
    source_account_id = serializers.CharField(source="destination.account_id")
    target_account_id = serializers.CharField()
    target_username = serializers.CharField(source="target_account.username")
    post_url = serializers.CharField(source="destination.external_url")
    published_at = serializers.DateTimeField()
    evaluate_from = serializers.DateTimeField()
    window_ends_at = serializers.DateTimeField()
    next_check_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the engine looks again; null once finished (unless a repost that was in "
        "flight is still being settled with the provider).",
    )
    checks = serializers.IntegerField()
    stable_checks = serializers.IntegerField(
        help_text="Identical consecutive metric reads (plateau)."
    )
    last_metrics = RepostMetricsSerializer(allow_null=True)
    metrics_checked_at = serializers.DateTimeField(allow_null=True)
    thresholds_met_at = serializers.DateTimeField(allow_null=True)
    skip_reason = serializers.CharField(
        help_text="window_closed, target_unavailable, source_unavailable, policy_removed, policy_disabled, "
        "target_removed or source_removed; empty unless skipped."
    )
    unavailable_reason = serializers.CharField(
        help_text="Why the target (target_unavailable) or the source post (source_unavailable) "
        "cannot be used; empty otherwise."
    )
    error_message = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    stages = RepostStageSerializer(many=True, source="stages.all")

    def get_policy_name(self, execution: RepostExecution) -> str:
        return execution.policy.name if execution.policy is not None else ""

    def to_representation(self, instance: RepostExecution) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        settling = any(stage["status"] == RepostStage.Status.IN_FLIGHT for stage in data["stages"])
        if instance.status not in RepostExecution.ACTIVE and not settling:
            data["next_check_at"] = None
        return data


class RepostSettingsSerializer(ResponseSerializer):
    workspace_id = serializers.CharField()
    can_manage = serializers.BooleanField(help_text="True only for a workspace admin.")
    supported_platforms = serializers.ListField(
        child=serializers.CharField(), help_text="Providers whose adapter can repost and unrepost."
    )
    accounts = RepostAccountSerializer(many=True)
    grants = RepostGrantSerializer(many=True)
    policies = RepostPolicySerializer(many=True)
    revision = serializers.IntegerField(
        help_text="Send as expected_revision when replacing the policies."
    )
    executions = RepostExecutionSerializer(many=True, help_text="The 50 most recent, newest first.")
