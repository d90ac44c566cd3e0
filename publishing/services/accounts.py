"""Connected accounts: connect (OAuth or credentials), callback, disconnect, destination options.

Network calls to providers never run inside a transaction that holds locks.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import secrets
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from config.db.integrity import is_unique_violation
from config.errors import (
    FieldValidationError,
    NotFoundError,
    PermissionDeniedError,
    PlanLimitError,
    ServiceUnavailableError,
    field_error,
)
from config.types import ModelId
from providers import PROVIDERS, credentials, feed, get_adapter
from providers.base import (
    AccountContext,
    ConnectedAccount,
    ConnectionCandidates,
    ConnectionMode,
    ProviderError,
    ProviderInputError,
)
from publishing.errors import ProviderConnectError, ReadinessBlockedError
from publishing.models import (
    Account,
    ConnectionChoice,
    Destination,
    OAuthState,
    ProviderApp,
    Publication,
    PublicationEvent,
)
from publishing.services import connection_choices
from readiness import services as readiness
from readiness.subjects import PUBLISH_OPERATIONS
from workspaces.access import Actor, parse_id, require_workspace, require_workspace_role
from workspaces.models import WorkspaceMembership
from workspaces.services import plan_check_current

logger = logging.getLogger(__name__)

# RFC 6749 §4.1.2.1 error codes, each with Herald's own words. A provider's ``error`` outside this
# list, and any ``error_description``, are never shown: the callback's query is anyone's text.
OAUTH_ERROR_MESSAGES = {
    "access_denied": "The authorization was declined at the provider (access_denied).",
    "invalid_request": "The provider rejected Herald's authorization request (invalid_request).",
    "unauthorized_client": "The provider does not allow Herald's app to connect accounts this "
    "way (unauthorized_client).",
    "unsupported_response_type": "The provider does not support Herald's kind of authorization "
    "(unsupported_response_type).",
    "invalid_scope": "The provider rejected the permissions Herald asked for (invalid_scope).",
    "server_error": "The provider failed while authorizing (server_error); try again later.",
    "temporarily_unavailable": "The provider is temporarily unavailable "
    "(temporarily_unavailable); try again later.",
}
OAUTH_ERROR_GENERIC = "The provider did not grant access."
OAUTH_EXCHANGE_FAILED = (
    "The provider did not complete the connection; start it again. If it keeps failing, the "
    "server log has the provider's answer."
)
OAUTH_NONCE_COOKIE_PREFIX = "herald_oauth_"
_START_UNAVAILABLE = (
    "This connection link is unknown, was already opened in a browser, or has expired; start "
    "the connection again from Herald."
)
_UNKNOWN_STATE = "This authorization request is unknown or has expired; connect again."


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def account_context(account: Account) -> AccountContext:
    app = credentials.decrypt(account.app.credentials_encrypted) if account.app else {}
    return AccountContext(
        external_id=account.external_id,
        credentials=credentials.decrypt(account.credentials_encrypted),
        instance_url=account.instance_url,
        app=app,
        username=account.username,
        on_credentials_changed=partial(account_credentials_store, account_id=account.pk),
    )


def account_credentials_store(new_credentials: dict[str, str], *, account_id: ModelId) -> None:
    """Persist rotated credentials (e.g. a Bluesky session refreshed mid-call). A refresh token
    is never replaced by an empty one (docs/decisions/0012-credentials-encryption.md)."""
    with transaction.atomic():
        account = Account.objects.select_for_update().filter(pk=account_id).first()
        if account is None or account.status == Account.Status.DISCONNECTED:
            return
        merged = credentials.decrypt(account.credentials_encrypted)
        for key, value in new_credentials.items():
            if value or not key.startswith("refresh"):
                merged[key] = value
        account.credentials_encrypted = credentials.encrypt(merged)
        account.save(update_fields=["credentials_encrypted", "updated_at"])


def _merge_credentials(old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    """A stored refresh token is never overwritten with an empty one (docs/decisions/0012-credentials-encryption.md)."""
    merged = dict(new)
    for key, value in old.items():
        if key.startswith("refresh") and not merged.get(key):
            merged[key] = value
    return merged


def normalize_instance_url(url: str) -> str:
    """``https://Mastodon.Social/`` and ``https://mastodon.social`` are one instance."""
    parts = urlsplit(url.strip())
    if parts.scheme and parts.netloc:
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
    return url.strip().rstrip("/")


def _require_provider(provider: str, instance_url: str = "") -> None:
    if provider not in PROVIDERS:
        raise FieldValidationError.at(
            "body.provider", f"Unknown provider; one of {', '.join(PROVIDERS)}.", value=provider
        )
    _require_connectable(provider, instance_url)


def _mode_instance(provider: str, mode: str) -> str:
    """The API base of ``provider``'s connection mode ``mode``, or a 422 at ``body.mode``."""
    found = get_adapter(provider).connection_mode_instance(mode) if provider in PROVIDERS else None
    if found is None:
        raise FieldValidationError.at(
            "body.mode", f"{provider} has no connection mode {mode}.", value=mode
        )
    return found


# The settings of an app whose names do not follow HERALD_<PROVIDER>_CLIENT_ID / _SECRET.
_APP_SETTINGS = {
    "facebook": "HERALD_META_APP_ID and HERALD_META_APP_SECRET",
    "instagram": "HERALD_META_APP_ID and HERALD_META_APP_SECRET (Facebook Login), or "
    "HERALD_INSTAGRAM_CLIENT_ID and HERALD_INSTAGRAM_CLIENT_SECRET (Instagram Login)",
}


def _app_settings(provider: str) -> str:
    prefix = f"HERALD_{provider.upper()}"
    return f"{prefix}_CLIENT_ID and {prefix}_CLIENT_SECRET"


def _require_connectable(provider: str, instance_url: str = "") -> None:
    # The exact subject: a federated provider's connect is decided for the chosen instance.
    decision = readiness.decide_provider(
        provider=provider, operation="connect", instance_url=instance_url
    )
    if not decision.executable:
        reasons = " ".join(b.detail for b in decision.blockers)
        if any(b.code == "app_missing" for b in decision.blockers) and (
            provider in settings.PROVIDER_OAUTH_APPS
        ):
            reasons += (
                f" Set {_APP_SETTINGS.get(provider) or _app_settings(provider)} on the server."
            )
        raise ReadinessBlockedError(
            f"{provider} cannot be connected now ({decision.state}). {reasons}".strip(),
            decision=decision.as_dict(),
        )


def require_connectable(provider: str) -> None:
    """Readiness allows connecting ``provider`` now (or a 409 saying why not)."""
    _require_connectable(provider)


def _provider_failure(exc: ProviderError) -> ProviderConnectError:
    return ProviderConnectError(f"The provider refused the connection: {exc.message}")


def _input_invalid(exc: ProviderInputError) -> FieldValidationError:
    """The adapter's own check of the user's input failed: a 422 at that input (no value echoed,
    it may be a secret), not a 502, since no provider was asked."""
    location = "body.instance_url" if exc.field == "instance_url" else f"body.fields.{exc.field}"
    return FieldValidationError.at(location, exc.message)


def account_connect(
    *,
    actor: Actor,
    workspace_id: ModelId,
    provider: str,
    redirect_uri: str,
    instance_url: str = "",
    fields: dict[str, str] | None = None,
    mode: str = "",
) -> tuple[Account | None, str | None]:
    """Returns ``(account, None)`` for credential providers or ``(None, authorization_url)``,
    where the URL is Herald's start page (see :func:`oauth_bind_browser`), not the provider's.
    ``mode``: a connection mode of the provider (it names the API base the connect uses)."""
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    if mode:
        instance_url = _mode_instance(provider, mode)
    _require_provider(provider, instance_url)
    workspace = access.workspace
    live = Account.objects.filter(workspace=workspace).exclude(status=Account.Status.DISCONNECTED)
    plan_check_current(workspace=workspace, metric="connected_accounts", current=live.count())
    adapter = get_adapter(provider)
    caps = adapter.capabilities
    if caps.connection == ConnectionMode.OAUTH2:
        state = _oauth_begin(
            actor=actor,
            workspace=workspace,
            provider=provider,
            redirect_uri=redirect_uri,
            instance_url=instance_url,
        )
        return None, oauth_start_url(redirect_uri=redirect_uri, state=state)
    missing = [name for name in caps.credential_fields if not (fields or {}).get(name)]
    if missing:
        raise FieldValidationError(
            [field_error(f"body.fields.{name}", "This field is required.") for name in missing]
        )
    connect_fields = dict(fields or {})
    if provider == feed.PROVIDER:
        # Herald serves the feed itself: its URLs start at the origin the user reaches Herald
        # at (HERALD_PUBLIC_URL when set, else this request's), never at one the user typed.
        parts = urlsplit(redirect_uri)
        connect_fields[feed.ORIGIN_FIELD] = (
            f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""
        )
    try:
        connected = adapter.connect_with_credentials(fields=connect_fields)
    except ProviderInputError as exc:
        raise _input_invalid(exc) from None
    except ProviderError as exc:
        raise _provider_failure(exc) from None
    return _store_account(
        actor=actor, workspace=workspace, provider=provider, connected=connected, app=None
    ), None


def oauth_start_url(*, redirect_uri: str, state: str) -> str:
    """Herald's start page on the origin of the callback, so that the nonce cookie it sets is
    the one the callback reads."""
    parts = urlsplit(redirect_uri)
    origin = f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""
    return f"{origin}{reverse('connections:oauth-authorize', args=[state])}"


def oauth_nonce_cookie_name(state: str) -> str:
    """One cookie per pending connect (two connects in one browser do not overwrite each
    other); the name carries a prefix of the state's hash, never the state."""
    return f"{OAUTH_NONCE_COOKIE_PREFIX}{_hash(state)[:16]}"


def _oauth_begin(
    *, actor: Actor, workspace: Any, provider: str, redirect_uri: str, instance_url: str
) -> str:
    """Store the pending connect; returns its state."""
    adapter = get_adapter(provider)
    if adapter.capabilities.federated and not instance_url:
        raise FieldValidationError.at("body.instance_url", "The account's server URL is required.")
    instance_url = normalize_instance_url(instance_url)
    # One app registration per instance and callback URL: a registration is bound to its
    # redirect URI, so a second public origin needs (and gets) its own.
    app = ProviderApp.objects.filter(
        provider=provider, instance_url=instance_url, redirect_uri=redirect_uri
    ).first()
    stored_app = credentials.decrypt(app.credentials_encrypted) if app else None
    state = secrets.token_urlsafe(32)
    try:
        start = adapter.begin_authorization(
            redirect_uri=redirect_uri,
            state=state,
            instance_url=instance_url,
            app=stored_app,
        )
    except ProviderInputError as exc:
        raise _input_invalid(exc) from None
    except ProviderError as exc:
        raise _provider_failure(exc) from None
    with transaction.atomic():
        if app is None and start.app:
            app, _ = ProviderApp.objects.get_or_create(
                provider=provider,
                instance_url=instance_url,
                redirect_uri=redirect_uri,
                defaults={"credentials_encrypted": credentials.encrypt(start.app)},
            )
        elif app is not None and start.app and start.app != stored_app:
            # The adapter had to register again (the stored registration was unusable): the
            # authorization URL names the new client, so the callback must use it too.
            app.credentials_encrypted = credentials.encrypt(start.app)
            app.save(update_fields=["credentials_encrypted"])
        OAuthState.objects.create(
            state_hash=_hash(state),
            workspace=workspace,
            user=actor.user,
            provider=provider,
            instance_url=instance_url,
            app=app,
            redirect_uri=redirect_uri,
            code_verifier_encrypted=credentials.encrypt({"v": start.code_verifier})
            if start.code_verifier
            else "",
            authorization_url_encrypted=credentials.encrypt({"u": start.authorization_url}),
            expires_at=timezone.now() + timedelta(seconds=settings.HERALD_OAUTH_STATE_SECONDS),
        )
    return state


def oauth_start_pending(*, state: str) -> OAuthState:
    """The pending connect a start link names, while no browser has bound it yet (what the
    start page shows before the person confirms)."""
    pending = (
        OAuthState.objects.select_related("workspace", "user")
        .filter(state_hash=_hash(state), browser_nonce_hash="", expires_at__gt=timezone.now())
        .exclude(authorization_url_encrypted="")
        .first()
    )
    if pending is None:
        raise NotFoundError(_START_UNAVAILABLE)
    return pending


def oauth_provider_origin(pending: OAuthState) -> str:
    """``scheme://host[:port]`` of the provider's authorization URL (the start page's form
    leads there)."""
    url = credentials.decrypt(pending.authorization_url_encrypted).get("u", "")
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def oauth_bind_browser(*, state: str) -> tuple[str, str, int]:
    """The start page was confirmed: bind the pending connect to this browser.

    Returns ``(nonce, provider authorization URL, seconds left)``; the caller sets the nonce as
    an HttpOnly cookie. Only the first browser binds (a conditional UPDATE): a start link opened
    elsewhere afterwards, or the provider's URL opened without it, cannot complete the connect.
    """
    nonce = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        bound = (
            OAuthState.objects.filter(
                state_hash=_hash(state), browser_nonce_hash="", expires_at__gt=now
            )
            .exclude(authorization_url_encrypted="")
            .update(browser_nonce_hash=_hash(nonce))
        )
        pending = OAuthState.objects.filter(state_hash=_hash(state)).first() if bound else None
    if pending is None or not pending.authorization_url_encrypted:
        raise NotFoundError(_START_UNAVAILABLE)
    url = credentials.decrypt(pending.authorization_url_encrypted).get("u", "")
    seconds_left = int((pending.expires_at - now).total_seconds())
    return nonce, url, max(1, min(seconds_left, settings.HERALD_OAUTH_STATE_SECONDS))


def _claim_pending(*, state: str, browser_nonce: str) -> OAuthState:
    """Spend the pending connect, but only in the browser that confirmed its start page: a
    callback without that browser's nonce cookie leaves it pending for the right browser."""
    with transaction.atomic():
        pending = (
            OAuthState.objects.select_for_update(of=("self",))  # app is a nullable join
            .select_related("app", "user")
            .filter(state_hash=_hash(state))
            .first()
        )
        if pending is None or pending.expires_at <= timezone.now():
            raise NotFoundError(_UNKNOWN_STATE)
        expected = pending.browser_nonce_hash
        presented = _hash(browser_nonce) if browser_nonce else ""
        if not expected or not hmac.compare_digest(presented, expected):
            raise PermissionDeniedError(
                "This browser did not start this connection. Open the link Herald gave you (the "
                "command's or page's authorization link) in the browser you authorize in.",
                code="oauth_browser_mismatch",
            )
        pending.delete()  # single use, even if the exchange fails
    return pending


def account_oauth_abort(*, state: str, browser_nonce: str, error: str) -> None:
    """The provider sent the browser back without a grant: the pending connect is spent all the
    same (single use), and the answer is Herald's words for a known RFC 6749 code, never the
    provider's (or whoever wrote the query's) text."""
    _claim_pending(state=state, browser_nonce=browser_nonce)
    raise PermissionDeniedError(
        OAUTH_ERROR_MESSAGES.get(error, OAUTH_ERROR_GENERIC), code="oauth_denied"
    )


def account_oauth_complete(
    *, state: str, code: str, browser_nonce: str, session_user: Any = None
) -> Account | ConnectionChoice:
    """The OAuth callback: single-use state, PKCE verifier, token exchange, store the account.

    The state is bound to the user and workspace that started the connect, and to the browser
    that confirmed Herald's start page (its nonce cookie): a victim who opens someone else's
    link does not connect their account into that person's workspace. The callback itself needs
    no Herald session (a CLI user's browser has none), but a browser signed in as another user
    is refused too. A login that reached several accounts (Meta) answers the
    :class:`ConnectionChoice` to choose from instead of an account."""
    pending_copy = _claim_pending(state=state, browser_nonce=browser_nonce)
    if session_user is not None and session_user.pk != pending_copy.user_id:
        raise PermissionDeniedError(
            "This authorization was started by another Herald user; sign in as that user, or "
            "connect the account again yourself.",
            code="oauth_user_mismatch",
        )
    # The world may have changed since the connect started: the user's role, the provider's
    # readiness, the plan.
    actor = Actor(user=pending_copy.user)
    access = require_workspace(
        actor, pending_copy.workspace_id, role=WorkspaceMembership.Role.EDITOR
    )
    _require_connectable(pending_copy.provider, pending_copy.instance_url)
    adapter = get_adapter(pending_copy.provider)
    verifier = credentials.decrypt(pending_copy.code_verifier_encrypted).get("v", "")
    app = pending_copy.app
    try:
        connected = adapter.complete_authorization(
            code=code,
            redirect_uri=pending_copy.redirect_uri,
            code_verifier=verifier,
            instance_url=pending_copy.instance_url,
            app=credentials.decrypt(app.credentials_encrypted) if app else None,
        )
    except ProviderError as exc:
        # The provider's words go to the log only: the callback shows Herald's text.
        logger.warning("OAuth code exchange with %s failed: %s", pending_copy.provider, exc.message)
        raise ProviderConnectError(OAUTH_EXCHANGE_FAILED) from None
    if isinstance(connected, ConnectionCandidates):
        # One login reached several accounts: the person chooses (connection_choices).
        return connection_choices.choice_create(pending=pending_copy, found=connected)
    try:
        return _store_account(
            actor=actor,
            workspace=access.workspace,
            provider=pending_copy.provider,
            connected=connected,
            app=app,
        )
    except PlanLimitError:
        _give_back(adapter, connected, app)
        raise


def _give_back(adapter: Any, connected: ConnectedAccount, app: ProviderApp | None) -> None:
    """The grant exists at the provider but will not be kept: give it back (best effort)."""
    if adapter.capabilities.supports_revoke:
        with contextlib.suppress(ProviderError):
            adapter.revoke(
                account=AccountContext(
                    external_id=connected.external_id,
                    credentials=dict(connected.credentials),
                    instance_url=connected.instance_url,
                    app=credentials.decrypt(app.credentials_encrypted) if app else {},
                )
            )


def store_account(
    *,
    actor: Actor,
    workspace: Any,
    provider: str,
    connected: ConnectedAccount,
    app: ProviderApp | None,
) -> Account:
    """Create or refresh the account of one connect (also one chosen candidate)."""
    return _store_account(
        actor=actor, workspace=workspace, provider=provider, connected=connected, app=app
    )


@transaction.atomic
def _store_account(
    *,
    actor: Actor,
    workspace: Any,
    provider: str,
    connected: ConnectedAccount,
    app: ProviderApp | None,
) -> Account:
    """Create the account, or refresh a live connection of the same external account (its
    stored refresh token kept when the provider sends none)."""
    instance_url = connected.instance_url.rstrip("/")
    account = (
        Account.objects.select_for_update()
        .filter(
            workspace=workspace,
            provider=provider,
            instance_url=instance_url,
            external_id=connected.external_id,
        )
        .exclude(status=Account.Status.DISCONNECTED)
        .first()
    )
    new_credentials = dict(connected.credentials)
    reconnected = account is not None and account.status != Account.Status.ACTIVE
    if account is not None:
        new_credentials = _merge_credentials(
            credentials.decrypt(account.credentials_encrypted), new_credentials
        )
    else:
        account = _new_account(
            actor=actor,
            workspace=workspace,
            provider=provider,
            instance_url=instance_url,
            external_id=connected.external_id,
        )
    _apply_connection(account, connected, new_credentials, app)
    _save_account(account)
    if reconnected:
        _destinations_release(account_id=account.pk)
    return account


def _new_account(
    *, actor: Actor, workspace: Any, provider: str, instance_url: str, external_id: str
) -> Account:
    """An unsaved account, once the plan has room for it: checked again here, since an OAuth
    connect was checked when it started and other connects may have filled the plan since."""
    live = Account.objects.filter(workspace=workspace).exclude(status=Account.Status.DISCONNECTED)
    plan_check_current(workspace=workspace, metric="connected_accounts", current=live.count())
    return Account(
        workspace=workspace,
        provider=provider,
        instance_url=instance_url,
        external_id=external_id,
        connected_by=actor.user,
    )


def _apply_connection(
    account: Account,
    connected: ConnectedAccount,
    new_credentials: dict[str, str],
    app: ProviderApp | None,
) -> None:
    """The provider's answer on the account row: profile, grant, credentials, active again."""
    account.username = connected.username
    account.display_name = connected.display_name
    account.avatar_url = connected.avatar_url
    account.profile_url = connected.profile_url[:500]
    account.account_kind = connected.account_kind
    account.granted_scopes = list(connected.granted_scopes)
    account.credentials_encrypted = credentials.encrypt(new_credentials)
    account.token_expires_at = connected.expires_at
    account.token_refreshed_at = timezone.now()  # issued now: the refresh lead's lifetime
    account.app = app
    account.status = Account.Status.ACTIVE
    account.status_reason = ""
    account.refresh_lease_until = None


def _save_account(account: Account) -> None:
    try:
        with transaction.atomic():
            account.save()
    except DatabaseError as exc:
        if isinstance(exc, IntegrityError) and is_unique_violation(exc):
            # A concurrent connect of the same account won.
            raise ProviderConnectError("The account was connected concurrently; reload.") from exc
        # The schema and this code disagree (a release running against another's schema), or
        # the database failed: no conflict of the client's making, and an operator must see it.
        logger.error("Account not saved: the database refused it (%s)", exc)
        raise ServiceUnavailableError(
            "The database refused the account; retry later.",
            code="dependency_unavailable",
            failing=["database"],
        ) from exc


def _get_account(
    actor: Actor,
    account_id: ModelId,
    *,
    role: WorkspaceMembership.Role = WorkspaceMembership.Role.VIEWER,
) -> Account:
    pk = parse_id(account_id, what="account")
    account = Account.objects.select_related("app").filter(pk=pk).first()
    if account is None or account.status == Account.Status.DISCONNECTED:
        raise NotFoundError(f"No connected account with ID {pk}.")
    require_workspace(actor, account.workspace_id, role=role)
    return account


def account_get(*, actor: Actor, account_id: ModelId) -> Account:
    return _get_account(actor, account_id)


def account_disconnect(*, actor: Actor, account_id: ModelId) -> None:
    """Admin-only (docs/people-and-roles.md "Roles"): a connected account belongs to the workspace and every
    member publishes through it, so an editor may not take it away from the others."""
    account = _get_account(actor, account_id)
    require_workspace_role(
        actor,
        account.workspace_id,
        role=WorkspaceMembership.Role.ADMIN,
        operation="Disconnecting a shared account",
    )
    adapter = get_adapter(account.provider)
    if adapter.capabilities.supports_revoke and account.status == Account.Status.ACTIVE:
        # The provider is called only when readiness permits the revoke now (the worker's rule
        # for every provider call); best effort: the grant is dropped here whatever it says.
        decision = readiness.decide_account(account=account, operation="revoke")
        if decision.executable:
            with contextlib.suppress(ProviderError):
                adapter.revoke(account=account_context(account))
    with transaction.atomic():  # the credentials are always removed locally
        Account.objects.filter(pk=account.pk).update(
            status=Account.Status.DISCONNECTED,
            credentials_encrypted="",
            status_reason="Disconnected by a user.",
            token_expires_at=None,
            refresh_lease_until=None,
            updated_at=timezone.now(),
        )


HELD = "held"  # error_kind of a destination held while its account must be reconnected


def account_mark_reconnect_required(*, account_id: ModelId, reason: str) -> bool:
    """The grant is invalid or about to expire without renewal: the account becomes
    ``reconnect_required`` (readiness "authorization" fact) with ``reason``, and its scheduled
    destinations are held (``blocked``, ``error_kind`` "held", action ``reconnect``) with that
    reason instead of failing one by one when due. A reconnect releases them. True when this
    call changed the account."""
    now = timezone.now()
    with transaction.atomic():
        changed = Account.objects.filter(pk=account_id, status=Account.Status.ACTIVE).update(
            status=Account.Status.RECONNECT_REQUIRED,
            status_reason=reason[:300],
            refresh_lease_until=None,
            updated_at=now,
        )
        if changed:
            _destinations_hold(account_id=account_id, reason=reason, now=now)
    return bool(changed)


def _destinations_hold(*, account_id: ModelId, reason: str, now: Any) -> None:
    """Scheduled destinations of the account become ``blocked`` (held) with the reason and the
    readiness decision that blocks them. Conditional UPDATEs: a destination the dispatcher
    queued first is not held here (the worker's readiness check blocks it before any call)."""
    scheduled = Destination.objects.filter(
        account_id=account_id, status=Destination.Status.SCHEDULED
    )
    profiles = sorted(set(scheduled.values_list("profile", flat=True)))
    if not profiles:
        return
    account = Account.objects.get(pk=account_id)
    message = f"Held until the account is reconnected: {reason}"[:500]
    for profile in profiles:
        decision = readiness.decide_account(
            account=account, operation="publish_scheduled", profile=profile
        )
        scheduled.filter(profile=profile).update(
            status=Destination.Status.BLOCKED,
            error_kind=HELD,
            error_message=message,
            action="reconnect",
            readiness=decision.as_dict(),
            updated_at=now,
        )
    held = Destination.objects.filter(
        account_id=account_id, status=Destination.Status.BLOCKED, error_kind=HELD, updated_at=now
    ).values_list("pk", "publication_id")
    PublicationEvent.objects.bulk_create(
        PublicationEvent(
            publication_id=publication_id,
            destination_id=pk,
            kind="destination.held",
            status=Destination.Status.BLOCKED,
            detail=message,
            data={"action": "reconnect"},
        )
        for pk, publication_id in held
    )


def _destinations_release(*, account_id: ModelId) -> None:
    """After a reconnect: held destinations of publications still waiting to go out are
    scheduled again (due ones go with the dispatcher's next tick). A publication that has since
    settled keeps them blocked; its retry-failed action requeues them."""
    rows = list(
        Destination.objects.filter(
            account_id=account_id,
            status=Destination.Status.BLOCKED,
            error_kind=HELD,
            publication__status__in=[Publication.Status.SCHEDULED, Publication.Status.PUBLISHING],
        ).values_list("pk", "publication_id")
    )
    if not rows:
        return
    Destination.objects.filter(
        pk__in=[pk for pk, _ in rows], status=Destination.Status.BLOCKED, error_kind=HELD
    ).update(
        status=Destination.Status.SCHEDULED,
        error_kind="",
        error_message="",
        action="",
        readiness=None,
        updated_at=timezone.now(),
    )
    PublicationEvent.objects.bulk_create(
        PublicationEvent(
            publication_id=publication_id,
            destination_id=pk,
            kind="destination.released",
            status=Destination.Status.SCHEDULED,
            detail="The account was reconnected.",
        )
        for pk, publication_id in rows
    )


def _require_options_ready(account: Account, caps: Any) -> None:
    """Destination options are read from the provider only to publish there, so the lookup is a
    provider call under the publish decision like any other: it runs only while some format of
    the account may be published now. An operator's disable (environment or ledger control)
    therefore refuses it, and unreadable ledgers refuse it too (readiness fails closed)."""
    decisions = readiness.decide_many(
        [
            readiness.DecisionRequest(
                provider=account.provider,
                operation=operation,
                output_profile=profile,
                account=account,
            )
            for profile in [p.key for p in caps.profiles] or [""]  # no format: blocked
            for operation in PUBLISH_OPERATIONS
        ]
    )
    if any(decision.executable for decision in decisions):
        return
    decision = decisions[0]
    raise ReadinessBlockedError(
        f"Destination options of {account.provider} cannot be read now ({decision.state}). "
        + " ".join(b.detail for b in decision.blockers),
        decision=decision.as_dict(),
    )


def account_destination_options(
    *, actor: Actor, account_id: ModelId, region_code: str, language: str
) -> dict[str, list[dict[str, str]]]:
    account = _get_account(actor, account_id)
    adapter = get_adapter(account.provider)
    _require_options_ready(account, adapter.capabilities)
    try:
        return adapter.destination_options(
            account=account_context(account), region_code=region_code, language=language
        )
    except ProviderError as exc:
        if exc.kind == "auth":
            account_mark_reconnect_required(account_id=account.pk, reason=exc.message)
        raise ProviderConnectError(f"The provider failed: {exc.message}") from None
