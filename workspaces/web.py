"""Pages where people join and manage themselves.

* ``/invitations/<accept_token>/``: the invitation link. Signed out, the page is the same
  whether or not the address has an account: sign in to accept, or choose a password (and a
  display name): ``services.invitation_sign_up`` creates the account with exactly the invited
  e-mail, or, when the link came by e-mail, sets the password of the existing one like a reset,
  and accepts the invitation in one transaction; the page signs the person in. Signed in as the
  invitee it is one "Accept" button; signed in as someone else the page says so. Unknown tokens
  answer 404, used, revoked or withdrawn or expired ones 410, each with words.
* ``/settings/`` (profile, whether the e-mail address is verified, the person's API tokens,
  password, developer settings), ``/settings/profile/`` (display name, the names rule),
  ``/settings/password/`` (a wrong current password spends the password budgets:
  ``workspaces.authentication.check_password_within_budget``; a change ends the other sessions), ``/settings/verify-email/`` (e-mails a verification link).
* ``/verify-email/<token>/``: the verification link; confirming proves the mailbox
  (``services.account_prove_mailbox``: every session ends, earlier tokens are revoked).
* ``/password-reset/…``: Django's reset views, rate limited per client address
  (``config.limits``), answering the same whether or not the address has an account. A reset
  proves the mailbox too.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout, password_validation, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import (
    PasswordChangeView,
    PasswordResetCompleteView,
    PasswordResetConfirmView,
    PasswordResetDoneView,
    PasswordResetView,
)
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework import exceptions

from config.errors import DomainError, FieldValidationError
from config.limits import client_ip, window_hit
from config.names import DISPLAY_NAME_MAX_LENGTH, InvalidName, clean_display_name
from workspaces import services
from workspaces.access import Actor, request_user
from workspaces.authentication import check_password_within_budget
from workspaces.errors import InvitationAccountExistsError
from workspaces.mail import base_url, send_verification
from workspaces.models import ApiToken, Invitation
from workspaces.signin import RATE_LIMITED, RATE_LIMITED_MESSAGE
from workspaces.web_session import SESSION_AUTHENTICATED_AT  # the sign-in time a deletion checks

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
PASSWORD_RESET_WINDOW_SECONDS = 3600


def see_other(url: str) -> HttpResponseRedirect:
    """303: the browser follows with a GET, and reloading the result posts nothing again."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def _retry_after(response: HttpResponse, seconds: float) -> HttpResponse:
    response["Retry-After"] = str(max(1, int(seconds)))
    return response


# --- Invitations ----------------------------------------------------------------------------

UNAVAILABLE = {
    "unknown": (
        404,
        "This invitation link is not valid. Check that you copied the whole link, or "
        "ask the person who invited you for a new one.",
    ),
    Invitation.Status.ACCEPTED: (410, "This invitation has already been used."),
    Invitation.Status.REVOKED: (
        410,
        "This invitation was withdrawn, by a workspace administrator or with the authority of "
        "the person who sent it.",
    ),
    Invitation.Status.EXPIRED: (
        410,
        "This invitation has expired. Ask the person who invited you to send it again.",
    ),
}


class DisplayNameField(forms.CharField):
    """A display name under the names rule (``config.names.clean_display_name``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.TextInput(attrs={"autocomplete": "name"}))
        super().__init__(max_length=DISPLAY_NAME_MAX_LENGTH, strip=False, **kwargs)

    def clean(self, value: Any) -> str:
        try:
            return clean_display_name(super().clean(value))
        except InvalidName as exc:
            raise forms.ValidationError(str(exc), "invalid_name") from None


class InvitationSignUpForm(forms.Form):
    name = DisplayNameField(required=False, label="Display name (optional)")
    password1 = forms.CharField(
        label="Choose a password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password2 = forms.CharField(
        label="Repeat the password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_password2(self) -> str:
        first, second = self.cleaned_data.get("password1"), self.cleaned_data["password2"]
        if first and first != second:
            # (form codes are passed positionally: they are not problem codes of the API)
            raise forms.ValidationError("The two passwords differ.", "password_mismatch")
        return str(second)


def _find_invitation(token: str) -> Invitation | None:
    token_hash = hashlib.sha256(token.encode()).hexdigest()
    return (
        Invitation.objects.select_related("workspace", "invited_by")
        .filter(token_hash=token_hash)
        .first()
    )


def _unavailable(request: HttpRequest, reason: str) -> HttpResponse:
    status, text = UNAVAILABLE[reason]
    return render(
        request,
        "workspaces/invitation_unavailable.html",
        {"text": text, "reason": reason},
        status=status,
    )


def _joined(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    messages.success(
        request,
        f"You joined {invitation.workspace.name} as {invitation.role}.",
        extra_tags="settings",
    )
    return see_other(reverse("settings"))


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    invitation = _find_invitation(token)
    if invitation is None:
        return _unavailable(request, "unknown")
    if invitation.effective_status != Invitation.Status.PENDING:
        return _unavailable(request, invitation.effective_status)
    if not services.invitation_issuer_may_grant(invitation):  # withdrawn with their authority
        return _unavailable(request, Invitation.Status.REVOKED)
    context: dict[str, Any] = {
        "invitation": invitation,
        "inviter": invitation.invited_by,
        "by_email": invitation.delivery == Invitation.Delivery.EMAIL,
        "login_url": reverse("login") + "?" + urlencode({"next": request.path}),
    }
    user = request.user
    if user.is_authenticated:
        return _signed_in(request, token, invitation, user, context)
    form = InvitationSignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            membership = services.invitation_sign_up(
                token=token,
                password=form.cleaned_data["password1"],
                display_name=form.cleaned_data["name"],
            )
        except ValidationError as error:  # the password validators
            form.add_error("password1", error)
        except FieldValidationError as exc:  # the names rule
            form.add_error("name", exc.errors[0]["message"])
        except InvitationAccountExistsError:
            # Only for a link passed on by hand, which proves no mailbox: whoever holds it may
            # not take over an existing account. (An instance without e-mail cannot keep this
            # answer from the administrator who holds the link.)
            form.add_error(
                None,
                "No account was created. If you already have one, sign in to accept the "
                "invitation.",
            )
        except DomainError:  # accepted, revoked or expired meanwhile; no account was created
            return _unavailable(request, _current_status(invitation))
        else:
            login(request, membership.user, backend=MODEL_BACKEND)
            request.session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
            return _joined(request, invitation)
    context.update(mode="signed_out", form=form)
    return render(request, "workspaces/invitation.html", context)


def _signed_in(
    request: HttpRequest, token: str, invitation: Invitation, user: Any, context: dict[str, Any]
) -> HttpResponse:
    if user.email.lower() != invitation.email.lower():
        context["mode"] = "other_user"
        return render(
            request,
            "workspaces/invitation.html",
            context,
            status=403 if request.method == "POST" else 200,
        )
    if request.method == "POST":
        try:
            services.invitation_accept(actor=Actor(user=user), token=token)
        except DomainError:  # accepted, revoked or expired meanwhile
            return _unavailable(request, _current_status(invitation))
        # Accepting a link that came by e-mail may have proven the mailbox, which ends every
        # session: this one, which proved it, stays signed in.
        update_session_auth_hash(request, user)
        return _joined(request, invitation)
    context["mode"] = "accept"
    return render(request, "workspaces/invitation.html", context)


def _current_status(invitation: Invitation) -> str:
    """Why an acceptance just failed: still pending means its issuer lost the authority to grant
    it (withdrawn, like a revocation)."""
    invitation.refresh_from_db()
    status = invitation.effective_status
    if status == Invitation.Status.PENDING:
        return Invitation.Status.REVOKED
    return status if status in UNAVAILABLE else "unknown"


# --- Settings -------------------------------------------------------------------------------


def _page_messages(request: HttpRequest, tag: str) -> list[Any]:
    """The messages this page wrote (``extra_tags=tag``). Reading the storage consumes every
    message, so the admin's ("The user … was changed") never shows up on these pages later."""
    return [m for m in messages.get_messages(request) if tag in m.tags.split()]


@login_required
@require_http_methods(["GET"])
def settings_index(request: HttpRequest) -> HttpResponse:
    """The profile, whether the address is verified, and every API token of the person: after a
    password reset (which revokes the tokens created before it) they see what exists."""
    tokens = ApiToken.objects.filter(user=request_user(request)).order_by("-created_at")
    return render(
        request,
        "workspaces/settings.html",
        {
            "page_messages": _page_messages(request, "settings"),
            "tokens": list(tokens.select_related("workspace")[:100]),
            "email_enabled": settings.HERALD_EMAIL_ENABLED,
        },
    )


class ProfileForm(forms.Form):
    name = DisplayNameField(required=False, label="Display name")


@login_required
@require_http_methods(["GET", "POST"])
def settings_profile(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    form = ProfileForm(request.POST or None, initial={"name": user.name})
    if request.method == "POST" and form.is_valid():
        services.account_rename(user=user, name=form.cleaned_data["name"])
        messages.success(request, "Display name saved.", extra_tags="settings")
        return see_other(reverse("settings"))
    return render(request, "workspaces/settings_profile.html", {"form": form})


@login_required
@require_http_methods(["POST"])
def settings_verify_email(request: HttpRequest) -> HttpResponse:
    """E-mail a verification link to the person's address (a few per hour)."""
    user = request_user(request)
    if not settings.HERALD_EMAIL_ENABLED:
        messages.error(request, "This instance cannot send e-mail.", extra_tags="settings")
        return see_other(reverse("settings"))
    count, seconds_left = window_hit(f"verifymail:{user.pk}", PASSWORD_RESET_WINDOW_SECONDS)
    if count > settings.HERALD_VERIFICATION_EMAILS_PER_HOUR:
        response = render(
            request,
            "workspaces/verify_email.html",
            {"mode": "rate_limited"},
            status=429,
        )
        return _retry_after(response, seconds_left)
    token = services.account_verification_token(user)
    link = base_url(request) + reverse("verify-email", args=[token])
    if send_verification(user, link):
        messages.success(
            request, f"A verification link is on its way to {user.email}.", extra_tags="settings"
        )
    else:
        messages.error(request, "The e-mail could not be sent; try later.", extra_tags="settings")
    return see_other(reverse("settings"))


@never_cache
@require_http_methods(["GET", "POST"])
def verify_email(request: HttpRequest, token: str) -> HttpResponse:
    """The verification link. GET asks to confirm (a mail scanner that follows links must not
    end anyone's sessions); POST proves the mailbox: every session of the account ends, this
    browser's included, and its tokens created before now are revoked."""
    try:
        user = services.account_from_verification_token(token)
    except DomainError:
        return render(request, "workspaces/verify_email.html", {"mode": "invalid"}, status=404)
    if request.method == "GET":
        return render(
            request, "workspaces/verify_email.html", {"mode": "confirm", "email": user.email}
        )
    revoked = services.account_prove_mailbox(user=user)
    if request.user.pk == user.pk:  # this browser's session ended with the others
        logout(request)
    return render(
        request,
        "workspaces/verify_email.html",
        {"mode": "done", "email": user.email, "revoked": revoked},
    )


class BudgetPasswordChangeForm(PasswordChangeForm):
    """The current password is checked inside the password budgets: a wrong one is a counted
    failure, and while the client or the account must wait even the right one is refused."""

    retry_after = 0

    def __init__(self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self) -> str:
        old_password = str(self.cleaned_data["old_password"])
        try:
            check_password_within_budget(self.request, self.user, old_password)
        except exceptions.Throttled as exc:
            self.retry_after = int(getattr(exc, "wait", None) or 1)
            raise forms.ValidationError(RATE_LIMITED_MESSAGE, code=RATE_LIMITED) from exc
        except DomainError as exc:
            raise forms.ValidationError(
                self.error_messages["password_incorrect"], "password_incorrect"
            ) from exc
        return old_password

    def rate_limited(self) -> bool:
        return self.has_error("old_password", RATE_LIMITED)


class SettingsPasswordView(PasswordChangeView):
    form_class = BudgetPasswordChangeForm
    template_name = "workspaces/settings_password.html"
    success_url = reverse_lazy("settings")

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def form_valid(self, form: Any) -> HttpResponse:
        super().form_valid(form)  # saves, keeps this session signed in
        self.request.session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
        messages.success(self.request, "Password changed.", extra_tags="settings")
        return see_other(str(self.success_url))

    def form_invalid(self, form: Any) -> HttpResponse:
        limited = form.rate_limited()
        response = self.render_to_response(
            self.get_context_data(form=form), status=429 if limited else 200
        )
        if limited:
            _retry_after(response, form.retry_after)
        return response


# --- Password reset -------------------------------------------------------------------------


class HeraldPasswordResetView(PasswordResetView):
    """Always the same answer ("if an account exists, an e-mail is on its way"). Each client
    address may ask ``HERALD_PASSWORD_RESETS_PER_HOUR`` times an hour; beyond, 429."""

    template_name = "workspaces/password_reset_form.html"
    email_template_name = "workspaces/email/password_reset.txt"
    subject_template_name = "workspaces/email/password_reset_subject.txt"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {
            **super().get_context_data(**kwargs),
            "email_enabled": settings.HERALD_EMAIL_ENABLED,
        }

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.HERALD_EMAIL_ENABLED:
            return self.render_to_response(self.get_context_data(), status=503)
        count, seconds_left = window_hit(
            f"pwreset:{client_ip(request)}", PASSWORD_RESET_WINDOW_SECONDS
        )
        if count > settings.HERALD_PASSWORD_RESETS_PER_HOUR:
            response = self.render_to_response(self.get_context_data(rate_limited=True), status=429)
            return _retry_after(response, seconds_left)
        self.extra_email_context = {"base_url": base_url(request)}
        return super().post(request, *args, **kwargs)


class HeraldPasswordResetDoneView(PasswordResetDoneView):
    template_name = "workspaces/password_reset_done.html"


class HeraldPasswordResetConfirmView(PasswordResetConfirmView):
    """A reset proves the mailbox: besides the new password (which alone ends every session),
    the tokens created before it are revoked and the proof is audited
    (``services.account_prove_mailbox``)."""

    template_name = "workspaces/password_reset_confirm.html"

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        services.account_prove_mailbox(user=form.user)
        return response


class HeraldPasswordResetCompleteView(PasswordResetCompleteView):
    template_name = "workspaces/password_reset_complete.html"
