"""Add-only admin pages for the four readiness ledgers.

A row can be viewed and appended, never changed or deleted. The add forms ask for the same
plain inputs as the admin API routes and call the same ledger services, which fill every
fingerprint, digest, revision and snapshot themselves.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from config.admin import ServiceAdmin, ServiceForm
from providers import PROVIDERS
from readiness import ledgers
from readiness.models import (
    OPERATIONS,
    ApprovalReview,
    CertificationCheck,
    CertificationRun,
    RuntimeControl,
)

OPERATION_CHOICES = [(op, op) for op in OPERATIONS]
OPTIONAL_OPERATION_CHOICES = [("", "every operation"), *OPERATION_CHOICES]


def _provider_choices() -> list[tuple[str, str]]:
    return [(p, p) for p in PROVIDERS]


class LedgerAddForm(ServiceForm):
    """Collects the plain inputs of the admin API route (none of the model's fields) and appends
    them through the ledger service."""

    def given(self) -> dict[str, Any]:
        """The inputs filled in (a blank one is left to the service's default)."""
        return {k: v for k, v in self.cleaned_data.items() if v not in (None, "")}


class ApprovalReviewAddForm(LedgerAddForm):
    provider = forms.ChoiceField(choices=_provider_choices)
    outcome = forms.ChoiceField(choices=ApprovalReview.Outcome.choices)
    operations = forms.MultipleChoiceField(
        choices=OPERATION_CHOICES,
        required=False,
        help_text="Permitted operations; none selected: all",
    )
    review_reference = forms.CharField(
        max_length=500, required=False, help_text="Stored only as a fingerprint"
    )
    expires_at = forms.DateTimeField(required=False)

    class Meta:
        model = ApprovalReview
        fields: list[str] = []

    def call_service(self) -> ApprovalReview:
        data = self.given()
        data["operations"] = list(data.get("operations") or ()) or None  # none selected: all
        return ledgers.approval_review_append(operator=self.request.user, **data)


class RuntimeControlAddForm(LedgerAddForm):
    provider = forms.ChoiceField(choices=_provider_choices)
    output_profile = forms.CharField(max_length=80, required=False, help_text="Blank: every format")
    operation = forms.ChoiceField(choices=OPTIONAL_OPERATION_CHOICES, required=False)
    mode = forms.ChoiceField(choices=RuntimeControl.Mode.choices)
    reason = forms.ChoiceField(choices=RuntimeControl.Reason.choices)

    class Meta:
        model = RuntimeControl
        fields: list[str] = []

    def call_service(self) -> RuntimeControl:
        return ledgers.runtime_control_append(operator=self.request.user, **self.given())


CHECK_RESULT_CHOICES = [("", "not recorded"), *CertificationCheck.Outcome.choices]


class CertificationRunAddForm(LedgerAddForm):
    kind = forms.ChoiceField(choices=CertificationRun.Kind.choices)
    provider = forms.ChoiceField(choices=_provider_choices)
    operation = forms.ChoiceField(choices=OPERATION_CHOICES)
    output_profile = forms.CharField(max_length=80, required=False)
    account_id = forms.UUIDField(
        required=False, help_text="Live runs: the account used (stored as a hash)"
    )
    account_kind = forms.ChoiceField(
        choices=[
            ("", "the account's or provider's kind"),
            *((kind, kind) for kind in ledgers.ACCOUNT_KINDS),
        ],
        required=False,
    )
    instance_url = forms.URLField(max_length=300, required=False, assume_scheme="https")
    external_result_reference = forms.CharField(max_length=500, required=False)
    retest_days = forms.IntegerField(min_value=1, max_value=365, required=False)

    class Meta:
        model = CertificationRun
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, label in CertificationCheck.Name.choices:
            self.fields[f"check_{name}"] = forms.ChoiceField(
                choices=CHECK_RESULT_CHOICES, required=False, label=f"Check: {label}"
            )
            self.fields[f"reason_{name}"] = forms.CharField(
                max_length=40, required=False, label=f"Not-applicable reason: {label}"
            )

    def call_service(self) -> CertificationRun:
        data = self.given()
        checks = []
        for name, _ in CertificationCheck.Name.choices:
            outcome = data.pop(f"check_{name}", "")
            reason = data.pop(f"reason_{name}", "")
            if outcome:
                checks.append({"name": name, "outcome": outcome, "reason": reason})
        return ledgers.certification_append(operator=self.request.user, checks=checks, **data)


class AddOnlyLedgerAdmin(ServiceAdmin):
    add_form: type[LedgerAddForm] | None = None

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.add_form is not None and bool(getattr(request.user, "is_superuser", False))

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in self.model._meta.fields] if obj is not None else []

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["fields"] = []  # the add form's own inputs only (the checks' are per instance)
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None and self.add_form is not None:
            return [(None, {"fields": list(self.add_form().fields)})]
        return super().get_fieldsets(request, obj)


@admin.register(ApprovalReview)
class ApprovalReviewAdmin(AddOnlyLedgerAdmin):
    add_form = ApprovalReviewAddForm
    list_display = (
        "id",
        "provider",
        "provider_environment",
        "outcome",
        "reviewed_at",
        "expires_at",
        "created_at",
    )
    list_filter = ("provider", "outcome")
    search_fields = ("provider", "app_fingerprint")


@admin.register(RuntimeControl)
class RuntimeControlAdmin(AddOnlyLedgerAdmin):
    add_form = RuntimeControlAddForm
    list_display = ("id", "provider", "output_profile", "operation", "mode", "reason", "created_at")
    list_filter = ("provider", "mode")
    search_fields = ("provider", "output_profile")


class CertificationCheckInline(admin.TabularInline[CertificationCheck, CertificationRun]):
    model = CertificationCheck
    fields = ("name", "outcome", "reason", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CertificationRun)
class CertificationRunAdmin(AddOnlyLedgerAdmin):
    add_form = CertificationRunAddForm
    list_display = (
        "id",
        "kind",
        "provider",
        "output_profile",
        "operation",
        "outcome",
        "tested_at",
        "expires_at",
    )
    list_filter = ("kind", "provider", "outcome")
    search_fields = ("provider", "output_profile", "subject_digest", "contract_digest")

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
        return [CertificationCheckInline] if obj is not None else []


@admin.register(CertificationCheck)
class CertificationCheckAdmin(AddOnlyLedgerAdmin):
    """Checks are appended with their run (the run's add page); here they are only listed."""

    list_display = ("id", "run", "name", "outcome", "reason", "created_at")
    list_filter = ("name", "outcome")
    list_select_related = ("run",)
