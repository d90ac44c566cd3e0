"""Server-rendered pages of the browser session: sign-in / sign-out and the developer settings
(API tokens).

The session these pages start is the spec's "browser session"; token management lives only here
and on the session-only API routes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.errors import DomainError, FieldValidationError
from workspaces import selectors, services
from workspaces.access import Actor, request_user
from workspaces.models import ApiToken
from workspaces.signin import SignInForm

SESSION_AUTHENTICATED_AT = "herald_authenticated_at"
SESSION_CREATED_TOKEN = "herald_created_api_token"  # noqa: S105 - a session key, not a secret
DEVELOPER_SETTINGS_TAG = "developer-settings"


def _see_other(url: str) -> HttpResponseRedirect:
    response = HttpResponseRedirect(url)
    response.status_code = 303  # the browser follows with a GET
    return response


class HeraldLoginView(LoginView):
    """Records the sign-in time: workspace deletion needs a recent authentication. Wrong
    passwords spend the password budgets (workspaces.signin); while the client or the account
    must wait the page answers 429 with ``Retry-After``, the right password included."""

    template_name = "workspaces/login.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        self.request.session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
        return response

    def form_invalid(self, form: Any) -> HttpResponse:
        if not form.rate_limited():
            return super().form_invalid(form)
        context = self.get_context_data(form=form, rate_limited=True, retry_after=form.retry_after)
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(form.retry_after)
        return response


@require_http_methods(["GET", "POST"])
def logout_view(request: HttpRequest) -> HttpResponse:
    """POST signs out. GET (a typed or bookmarked /logout/) shows a page whose button POSTs here:
    signing out on a GET would let any page sign a visitor out with an image tag."""
    if request.method == "GET":
        return render(request, "workspaces/logout_confirm.html")
    logout(request)
    return redirect("login")


def home(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("developer-settings")
    return redirect("login")


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=120)
    can_write = forms.BooleanField(required=False, initial=False, label="Allow writes (api:write)")
    workspace = forms.ChoiceField(required=False, label="Workspace access")
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=365, label="Expires in (days, optional)"
    )

    def __init__(self, *args: Any, workspaces: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "All of my workspaces")]
        choices += [(str(w.pk), f"Only {w.name}") for w in workspaces]
        self.fields["workspace"].choices = choices  # type: ignore[attr-defined]  # a ChoiceField


@login_required
@require_http_methods(["GET", "POST"])
def developer_settings(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    actor = Actor(user=user)
    workspaces = list(selectors.workspace_list_for_actor(actor=actor).order_by("name"))
    form = TokenCreateForm(request.POST or None, workspaces=workspaces)
    if request.method == "POST" and request.POST.get("action") == "revoke":
        try:
            services.api_token_revoke(user=user, token_id=request.POST.get("token_id", ""))
            messages.success(request, "Token revoked.", extra_tags=DEVELOPER_SETTINGS_TAG)
        except DomainError as exc:
            messages.error(request, exc.detail, extra_tags=DEVELOPER_SETTINGS_TAG)
        return _see_other(request.path)
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data.get("expires_in_days")
        permissions = ["api:read"] + (["api:write"] if form.cleaned_data["can_write"] else [])
        try:
            _, created_token = services.api_token_create(
                user=user,
                name=form.cleaned_data["name"],
                permissions=permissions,
                workspace_id=form.cleaned_data.get("workspace") or None,
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except FieldValidationError as exc:  # e.g. the names' rule: shown at its field
            for error in exc.errors:
                field = str(error["location"]).removeprefix("body.")
                form.add_error(field if field in form.fields else None, error["message"])
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            # Post/redirect/get: the secret waits in the session for the next GET, which shows
            # it once; reloading that page neither creates a token nor shows the secret again.
            request.session[SESSION_CREATED_TOKEN] = created_token
            return _see_other(request.path)
    shown_token = (  # the secret created by the previous POST, shown this once
        request.session.pop(SESSION_CREATED_TOKEN, None) if request.method == "GET" else None
    )
    # Only this page's own messages: reading the storage consumes the rest (the admin's
    # "… was changed successfully" must not surface here).
    page_messages = [
        m for m in messages.get_messages(request) if DEVELOPER_SETTINGS_TAG in m.tags.split()
    ]
    tokens: list[ApiToken] = list(
        selectors.api_token_list(user=request.user).select_related("workspace")
    )
    response = render(
        request,
        "workspaces/developer_settings.html",
        {
            "form": form,
            "tokens": tokens,
            "created_token": shown_token,
            "page_messages": page_messages,
        },
    )
    response["Cache-Control"] = "no-store"  # the one-time token must not be cached
    return response
