"""The sign-in forms (``/login/`` and ``/admin/login/``) inside the failed-authentication budget.

Both pages check a password, so both spend the same per-client budget as bearer tokens and the
password that confirms a workspace deletion (``workspaces.authentication``): every wrong
password counts, and once the budget of the minute is spent the form refuses every attempt, the
right password included, before the password is even checked. ``/login/`` answers that refusal
with status 429 (``workspaces.web_session.HeraldLoginView``); the admin shows it as its form error.

The admin's form is installed through ``AdminSite.login_form`` (``WorkspacesConfig.ready``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from workspaces.authentication import failure_budget_exhausted, record_failure

RATE_LIMITED = "rate_limited"
RATE_LIMITED_MESSAGE = "Too many failed sign-ins from your address. Wait a minute and try again."


class FailureBudgetMixin:
    """``clean()`` of an ``AuthenticationForm`` within the client's failed-authentication budget."""

    request: Any

    def clean(self) -> dict[str, Any]:
        if self.request is not None and failure_budget_exhausted(self.request):
            raise forms.ValidationError(RATE_LIMITED_MESSAGE, code=RATE_LIMITED)
        try:
            return super().clean()  # type: ignore[misc, no-any-return]  # a form mixin
        except forms.ValidationError:
            # A wrong e-mail or password, an inactive user, a non-staff user on the admin.
            if self.request is not None:
                record_failure(self.request)
            raise

    def rate_limited(self) -> bool:
        errors = self.non_field_errors()  # type: ignore[attr-defined]  # a form mixin
        return any(e.code == RATE_LIMITED for e in errors.as_data())


class SignInForm(FailureBudgetMixin, AuthenticationForm):
    """``/login/``."""


class AdminSignInForm(FailureBudgetMixin, AdminAuthenticationForm):
    """``/admin/login/``."""
