"""The catalogue behind every problem ``type`` URI (``/docs/problems/<code>``).

One source of truth: each :class:`config.errors.DomainError` subclass carries its ``code``,
``status``, ``title`` and description (``description`` or its own docstring); the catalogue walks
those subclasses. Codes that no class of ours carries (raised by DRF, the middleware, a
permission class, or a service that passes ``code=`` to a shared class) are listed once in
:data:`OTHER_PROBLEMS`. ``tests/api/test_problem_catalogue.py`` scans the source for every code and
fails when one is missing here.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from dataclasses import dataclass

from django.apps import apps

from config.api.problems import status_phrase
from config.errors import DomainError


@dataclass(frozen=True)
class ProblemType:
    code: str
    status: int
    title: str
    description: str

    @property
    def status_phrase(self) -> str:
        return status_phrase(self.status)


def _p(code: str, status: int, title: str, description: str) -> ProblemType:
    return ProblemType(code, status, title, description)


OTHER_PROBLEMS: tuple[ProblemType, ...] = (
    # Framework-level problems (config.api.problems, config.api.middleware, config.urls).
    _p("malformed_body", 400, "Malformed body", "The body is not valid JSON."),
    _p(
        "malformed_request",
        400,
        "Malformed request",
        "The request itself is malformed (for example an invalid Content-Length).",
    ),
    _p(
        "not_authenticated",
        401,
        "Not authenticated",
        "Credentials are missing, malformed, unknown, expired or revoked. Send a valid "
        "`Authorization: Bearer <token>` header or sign in.",
    ),
    _p(
        "method_not_allowed",
        405,
        "Method not allowed",
        "The HTTP method is not allowed on this path.",
    ),
    _p(
        "not_acceptable",
        406,
        "Not acceptable",
        "None of the media types in the Accept header can be produced.",
    ),
    _p(
        "length_required",
        411,
        "Length required",
        "The request has a body without a Content-Length header (for example sent with "
        "`Transfer-Encoding: chunked`); send the body with its Content-Length.",
    ),
    _p(
        "payload_too_large",
        413,
        "Payload too large",
        "The request body exceeds the instance's limit.",
    ),
    _p(
        "unsupported_media_type",
        415,
        "Unsupported media type",
        "The body's media type is not accepted here; send application/json.",
    ),
    _p(
        "internal_error",
        500,
        "Internal error",
        "An unexpected error occurred; it was logged on the server. The response carries no detail.",
    ),
    _p(
        "dependency_unavailable",
        503,
        "Dependency unavailable",
        "A service the request needs (the database, Redis, the broker or storage) cannot be "
        "reached; the `failing` member names it. Retry after the seconds in Retry-After.",
    ),
    # Authorization (workspaces.access, workspaces.permissions, workspaces.authentication).
    _p(
        "token_permission",
        403,
        "Token lacks permission",
        "The API token lacks the permission (api:read or api:write) this needs.",
    ),
    _p(
        "token_workspace_scope",
        403,
        "Token bound to another workspace",
        "The API token is bound to another workspace, or cannot reach organization resources.",
    ),
    _p(
        "session_required",
        403,
        "Browser session required",
        "This operation needs a signed-in browser session; API tokens are refused.",
    ),
    _p(
        "csrf_failed",
        403,
        "CSRF check failed",
        "A browser-session request that changes state must carry the CSRF token.",
    ),
    _p(
        "no_workspace_access",
        403,
        "No workspace access",
        "The caller is not an active member of the workspace.",
    ),
    _p(
        "no_organization_access",
        403,
        "No organization access",
        "The caller is not a member of the organization.",
    ),
    _p(
        "role_too_low",
        403,
        "Role too low",
        "The caller's workspace or organization role is too low for this operation; the role "
        "matrix of docs/people-and-roles.md lists which role each operation needs.",
    ),
    _p(
        "instance_admin_required",
        403,
        "Instance administrator required",
        "Only an instance administrator's browser session may do this.",
    ),
    _p(
        "certification_test_forbidden",
        403,
        "Certification test forbidden",
        "Only an instance administrator may choose the certification_test execution intent.",
    ),
    _p(
        "invitation_email_mismatch",
        403,
        "Invitation e-mail mismatch",
        "The invitation was sent to another e-mail address than the signed-in user's.",
    ),
    _p(
        "account_not_in_workspace",
        403,
        "Account not in workspace",
        "A destination account belongs to another workspace (or is not connected to this one).",
    ),
    _p(
        "oauth_denied",
        403,
        "Provider denied access",
        "The provider did not grant access during the OAuth connection flow.",
    ),
    _p(
        "oauth_user_mismatch",
        403,
        "Authorization started by another user",
        "The OAuth callback came from a browser signed in as another user than the one who "
        "started the connection; the pending connection is discarded.",
    ),
    _p(
        "oauth_browser_mismatch",
        403,
        "Authorization from another browser",
        "The OAuth callback came from a browser that did not confirm Herald's start page for "
        "this connection (its nonce cookie is missing or wrong); the connection stays pending "
        "for the browser that did.",
    ),
    # Conflicts raised through the shared ConflictError with their own code.
    _p(
        "already_member",
        409,
        "Already a member",
        "The invited person is already a member of the workspace.",
    ),
    _p(
        "invitation_exists",
        409,
        "Invitation exists",
        "A pending invitation for this e-mail exists; resend it instead.",
    ),
    _p(
        "idempotency_in_progress",
        409,
        "Idempotency key in progress",
        "A request with this Idempotency-Key is still being processed; retry later to get its "
        "stored response.",
    ),
    # Discovery engine (discovery.engines).
    _p(
        "discovery_unavailable",
        503,
        "Discovery unavailable",
        "The configured discovery engine is unknown or not configured on this instance.",
    ),
    _p(
        "model_unavailable",
        503,
        "Discovery model unavailable",
        "The discovery model is unreachable.",
    ),
    _p(
        "model_failed",
        502,
        "Discovery model failed",
        "The discovery model's request failed, broke off or answered an HTTP error.",
    ),
    _p(
        "model_invalid_reply",
        502,
        "Discovery model reply invalid",
        "The discovery model's reply was too large or not the expected shape.",
    ),
    _p(
        "model_timeout",
        504,
        "Discovery model timed out",
        "The discovery model did not answer within the configured timeout.",
    ),
)


def _load_error_modules() -> None:
    """Import ``<app>.errors`` for every installed app so that every error class is defined."""
    for config in apps.get_app_configs():
        name = f"{config.name}.errors"
        if importlib.util.find_spec(config.name) and importlib.util.find_spec(name):
            importlib.import_module(name)


def _subclasses(cls: type[DomainError]) -> list[type[DomainError]]:
    found: list[type[DomainError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def _title(code: str) -> str:
    return code.replace("_", " ").capitalize()


def _from_class(cls: type[DomainError]) -> ProblemType:
    own = vars(cls)
    description = (
        own.get("description") or inspect.cleandoc(own.get("__doc__") or "") or (cls.default_detail)
    )
    return ProblemType(
        cls.code,
        int(cls.status),
        own.get("title") or _title(cls.code),
        " ".join(description.split()),
    )


def catalogue() -> dict[str, ProblemType]:
    """Every documented problem type by code, sorted by code."""
    _load_error_modules()
    entries: dict[str, ProblemType] = {p.code: p for p in OTHER_PROBLEMS}
    classes: list[type[DomainError]] = [DomainError, *_subclasses(DomainError)]
    for cls in classes:
        own = vars(cls)
        if cls.__module__.split(".")[0] == "tests" or "code" not in own:
            continue  # test doubles; subclasses that only reword the parent's detail
        if cls.code in entries and not (own.get("__doc__") or own.get("description")):
            continue  # a bare class (e.g. config.health.DependencyUnavailable) keeps the table's words
        entries[cls.code] = _from_class(cls)
    return dict(sorted(entries.items()))
