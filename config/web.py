"""Server-rendered pages: sign-in / sign-out and the developer settings (API tokens).

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
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import DomainError
from workspaces import selectors, services
from workspaces.access import Actor
from workspaces.authentication import failure_budget_exhausted, record_failure
from workspaces.models import ApiToken

SESSION_AUTHENTICATED_AT = "herald_authenticated_at"


class HeraldLoginView(LoginView):
    """Records the sign-in time: workspace deletion needs a recent authentication."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if failure_budget_exhausted(request):
            response = render(
                request,
                self.template_name,
                {"form": self.get_form(), "rate_limited": True},
                status=429,
            )
            response["Retry-After"] = "60"
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        self.request.session[SESSION_AUTHENTICATED_AT] = timezone.now().timestamp()
        return response

    def form_invalid(self, form: Any) -> HttpResponse:
        record_failure(self.request)
        return super().form_invalid(form)


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


def home(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("developer-settings")
    return redirect("login")


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=120)
    can_write = forms.BooleanField(
        required=False, initial=False, label="Allow writes (api:write)"
    )
    workspace = forms.ChoiceField(required=False, label="Workspace access")
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=365, label="Expires in (days, optional)"
    )

    def __init__(self, *args: Any, workspaces: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "All of my workspaces")]
        choices += [(str(w.pk), f"Only {w.name}") for w in workspaces]
        self.fields["workspace"].choices = choices  # type: ignore[attr-defined]


@login_required
@require_http_methods(["GET", "POST"])
def developer_settings(request: HttpRequest) -> HttpResponse:
    actor = Actor(user=request.user)  # type: ignore[arg-type]
    workspaces = list(selectors.workspace_list_for_actor(actor=actor).order_by("name"))
    form = TokenCreateForm(request.POST or None, workspaces=workspaces)
    created_token: str | None = None
    if request.method == "POST" and request.POST.get("action") == "revoke":
        try:
            services.api_token_revoke(user=request.user, token_id=request.POST.get("token_id", ""))  # type: ignore[arg-type]
            messages.success(request, "Token revoked.")
        except DomainError as exc:
            messages.error(request, exc.detail)
        return HttpResponseRedirect(request.path)
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data.get("expires_in_days")
        permissions = ["api:read"] + (["api:write"] if form.cleaned_data["can_write"] else [])
        try:
            _, created_token = services.api_token_create(
                user=request.user,  # type: ignore[arg-type]
                name=form.cleaned_data["name"],
                permissions=permissions,
                workspace_id=form.cleaned_data.get("workspace") or None,
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            form = TokenCreateForm(workspaces=workspaces)
    tokens: list[ApiToken] = list(
        selectors.api_token_list(user=request.user).select_related("workspace")
    )
    response = render(
        request,
        "herald/developer_settings.html",
        {"form": form, "tokens": tokens, "created_token": created_token},
    )
    response["Cache-Control"] = "no-store"  # the one-time token must not be cached
    return response


PROBLEM_TYPES = {
    "invalid": "The request does not match the endpoint schema; see errors[] for each location.",
    "malformed_body": "The body is not valid JSON.",
    "not_authenticated": "Credentials are missing, malformed, unknown, expired or revoked.",
    "permission_denied": "The caller lacks a permission, role, or workspace access.",
    "not_found": "The path or resource does not exist on this instance.",
    "method_not_allowed": "The HTTP method is not allowed on this path.",
    "payload_too_large": "The request body exceeds the instance's limit.",
    "rate_limited": "Too many requests; retry after the number of seconds in Retry-After.",
    "revision_conflict": "The resource changed since the caller read it; reload and retry.",
    "internal_error": "An unexpected error occurred; it was logged on the server.",
    "bad_request": "The request is well-formed but cannot be acted on.",
    "malformed_request": "The request itself is malformed (for example an invalid Content-Length).",
    "unsupported_media_type": "The body's media type is not accepted here; send application/json.",
    "not_acceptable": "None of the media types in the Accept header can be produced.",
    "token_permission": "The API token lacks the permission (api:read or api:write) this needs.",
    "token_workspace_scope": "The API token is bound to another workspace, or cannot reach organization resources.",
    "session_required": "This operation needs a signed-in browser session; API tokens are refused.",
    "csrf_failed": "A browser-session request that changes state must carry the CSRF token.",
    "no_workspace_access": "The caller is not an active member of the workspace.",
    "no_organization_access": "The caller is not a member of the organization.",
    "role_too_low": "The caller's workspace or organization role is too low for this operation.",
    "instance_admin_required": "Only an instance administrator's browser session may do this.",
    "plan_limit": "The workspace plan's limit has been reached.",
    "conflict": "The request conflicts with the current state of the resource.",
    "name_taken": "Another resource in the same scope already has this name.",
    "last_admin": "A workspace must keep at least one active admin.",
    "already_member": "The invited person is already a member of the workspace.",
    "invitation_exists": "A pending invitation for this e-mail exists; resend it instead.",
    "invitation_not_pending": "The invitation was already accepted, revoked, or has expired.",
    "invitation_email_mismatch": "The invitation was sent to another e-mail address.",
    "recent_authentication_required": "Sign in again, or send current_password, to confirm this operation.",
    "deletion_blocked": "The workspace has deletion blockers; see its deletion preview.",
    "upstream_error": "An upstream service (provider or model) failed.",
    "unavailable": "A required dependency is unavailable.",
    "upstream_timeout": "An upstream service timed out.",
}


def problem_type(request: HttpRequest, code: str) -> HttpResponse:
    """Human documentation of one problem ``type`` URI."""
    description = PROBLEM_TYPES.get(code)
    if description is None:
        raise Http404
    return render(request, "herald/problem_type.html", {"code": code, "description": description})
