"""Meta's deauthorize and data-deletion callbacks (developers.facebook.com/docs/facebook-login/
guides/advanced/deauthorize-callback and /docs/development/create-an-app/app-dashboard/
data-deletion-callback).

Meta posts a ``signed_request`` (``providers.meta.signed_request``: HMAC-SHA256 with the app
secret) naming one of its users. Every live ``facebook`` or ``instagram`` account connected
through that user loses its credentials (erased, not kept encrypted) and becomes
``reconnect_required``, its scheduled posts held; each one writes an access-audit event in its
workspace. The data-deletion callback answers ``{"url", "confirmation_code"}``: the URL shows the
request's state to anyone holding the code.
"""

from __future__ import annotations

import hashlib
import logging
import secrets

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from config.errors import FieldValidationError, NotFoundError
from providers import credentials
from providers.meta.signed_request import SignedRequestError, parse_signed_request
from publishing.models import Account, MetaDataDeletion
from publishing.services.accounts import account_mark_reconnect_required
from workspaces.models import AccessAuditEvent
from workspaces.services.audit import audit_record

logger = logging.getLogger(__name__)

META_PROVIDERS = ("facebook", "instagram")
MAX_AGE_SECONDS = 24 * 3600  # Meta may retry a callback for some time; older ones are refused
DEAUTHORIZED = "Access was removed at Meta (deauthorized); connect the account again."
DATA_DELETED = "Meta asked Herald to delete this connection's data; connect the account again."


def _meta_user(signed_request: str) -> str:
    secret = str((settings.PROVIDER_OAUTH_APPS.get("facebook") or {}).get("client_secret") or "")
    try:
        payload = parse_signed_request(signed_request, secret, max_age_seconds=MAX_AGE_SECONDS)
    except SignedRequestError as exc:
        raise FieldValidationError.at("body.signed_request", str(exc)) from None
    user_id = str(payload.get("user_id") or "")
    if not user_id:
        raise FieldValidationError.at("body.signed_request", "The signed request names no user.")
    return user_id


def _accounts_of(user_id: str) -> list[Account]:
    """Live Meta accounts connected through ``user_id`` (matched in their decrypted
    credentials: a Facebook Login's user, or an Instagram Login account itself)."""
    found = []
    live = Account.objects.filter(provider__in=META_PROVIDERS).exclude(
        status=Account.Status.DISCONNECTED
    )
    for account in live.iterator():
        try:
            stored = credentials.decrypt(account.credentials_encrypted)
        except Exception:  # an unreadable row (another key): not matched, but said
            logger.warning("Meta callback: credentials of account %s cannot be read", account.pk)
            continue
        if stored.get("meta_user_id") == user_id or (
            stored.get("login") == "instagram" and account.external_id == user_id
        ):
            found.append(account)
    return found


_AUDIT_STATUS: dict[str, str] = {str(Account.Status.RECONNECT_REQUIRED): "reconnect"}


def _erase(accounts: list[Account], *, action: str, reason: str) -> int:
    for account in accounts:
        with transaction.atomic():
            previous = account.status
            account_mark_reconnect_required(account_id=account.pk, reason=reason)
            Account.objects.filter(pk=account.pk).update(
                credentials_encrypted="", status_reason=reason[:300]
            )
            audit_record(
                workspace_id=account.workspace_id,
                action=action,
                actor=None,
                subject_user=account.connected_by,
                # The audit's status columns hold 16 characters: "revoked" says what happened
                # (credentials erased; the account asks to be connected again).
                previous_status=_AUDIT_STATUS.get(str(previous), str(previous)),
                status="revoked",
                subject_account_id=str(account.pk),
            )
    return len(accounts)


def meta_deauthorize(*, signed_request: str) -> int:
    """The person removed Herald's app at Meta: the accounts erased (how many)."""
    user_id = _meta_user(signed_request)
    erased = _erase(
        _accounts_of(user_id),
        action=AccessAuditEvent.Action.CONNECTION_DEAUTHORIZED,
        reason=DEAUTHORIZED,
    )
    logger.info("Meta deauthorize: %s account(s) erased", erased)
    return erased


def meta_data_deletion(*, signed_request: str) -> MetaDataDeletion:
    """The person asked Meta to have their data deleted: erase it now and record the request
    under a fresh confirmation code."""
    user_id = _meta_user(signed_request)
    erased = _erase(
        _accounts_of(user_id),
        action=AccessAuditEvent.Action.CONNECTION_DATA_DELETED,
        reason=DATA_DELETED,
    )
    return MetaDataDeletion.objects.create(
        confirmation_code=secrets.token_hex(10),
        meta_user_hash=hashlib.sha256(user_id.encode()).hexdigest(),
        accounts_erased=erased,
    )


def status_url(deletion: MetaDataDeletion, *, origin: str) -> str:
    path = reverse("publishing:meta-data-deletion-status", args=[deletion.confirmation_code])
    return f"{(settings.HERALD_PUBLIC_URL or origin).rstrip('/')}{path}"


def meta_data_deletion_get(*, confirmation_code: str) -> MetaDataDeletion:
    deletion = MetaDataDeletion.objects.filter(confirmation_code=confirmation_code[:40]).first()
    if deletion is None:
        raise NotFoundError("No data-deletion request with this confirmation code.")
    return deletion
