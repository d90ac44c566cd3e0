"""The sign-in forms (``/login/`` and ``/admin/login/``) inside the password budgets.

Both pages check a password, so both spend the password budgets of ``workspaces.authentication``
(per client address and account, per account with back-off, per client address for addresses
without an account), shared with the password change and the password confirming a workspace
deletion. While the client or the account must wait, the form refuses every attempt, the right
password included, before the password is even checked. ``/login/`` answers that refusal with
status 429 and ``Retry-After`` (``workspaces.web_session.HeraldLoginView``); the admin shows it as
its form error. Bad bearer tokens never count here.

The admin's form is installed through ``AdminSite.login_form`` (``WorkspacesConfig.ready``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from workspaces.authentication import password_wait, record_password_failure
from workspaces.models import User

RATE_LIMITED = "rate_limited"
RATE_LIMITED_MESSAGE = "Too many failed sign-ins. Wait a little and try again."


class FailureBudgetMixin:
    """``clean()`` of an ``AuthenticationForm`` within the password budgets."""

    request: Any
    cleaned_data: dict[str, Any]
    retry_after = 0

    def clean(self) -> dict[str, Any]:
        identifier = str(self.cleaned_data.get("username") or "")
        if self.request is None or not identifier or not self.cleaned_data.get("password"):
            return super().clean()  # type: ignore[misc, no-any-return]  # a form mixin
        self._refuse_while_waiting(password_wait(self.request, identifier))
        try:
            return super().clean()  # type: ignore[misc, no-any-return]  # a form mixin
        except forms.ValidationError:
            # A wrong e-mail or password, an inactive user, a non-staff user on the admin.
            exists = User.objects.filter(email__iexact=identifier.strip()).exists()
            wait = record_password_failure(self.request, identifier, account_exists=exists)
            self._refuse_while_waiting(wait)
            raise

    def _refuse_while_waiting(self, wait: int) -> None:
        if wait:
            self.retry_after = wait
            raise forms.ValidationError(RATE_LIMITED_MESSAGE, code=RATE_LIMITED)

    def rate_limited(self) -> bool:
        errors = self.non_field_errors()  # type: ignore[attr-defined]  # a form mixin
        return any(e.code == RATE_LIMITED for e in errors.as_data())


class SignInForm(FailureBudgetMixin, AuthenticationForm):
    """``/login/``."""


class AdminSignInForm(FailureBudgetMixin, AdminAuthenticationForm):
    """``/admin/login/``."""
