"""Accounts: who owns an e-mail address, and the person's display name.

Nobody owns an address they have not proven. Whoever held a link an administrator passed on by
hand could create the account of that address, so such an account stays *unverified*
(``User.email_verified_at`` is ``None``) until the mailbox is proven: by an invitation link that
came by e-mail, a verification link, a password reset, or an instance administrator who vouches
for it. Each proof (:func:`account_prove_mailbox`) ends every browser session of the account,
revokes every API token created before it, and writes an ``account.email_verified`` access-audit
event in each workspace the person belongs to: whatever a squatter built on the account before
the owner took it over is gone.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from config.errors import NotFoundError
from config.names import display_name_or_invalid
from workspaces.models import AccessAuditEvent, ApiToken, User, WorkspaceMembership
from workspaces.services.audit import audit_record

logger = logging.getLogger(__name__)

VERIFICATION_SALT = "herald.workspaces.verify-email"


@transaction.atomic
def account_prove_mailbox(*, user: User, actor: User | None = None) -> int:
    """Record that ``user``'s mailbox was just proven (``actor``: who proved it, the person
    themself unless an instance administrator vouches). Ends every session (the caller may keep
    the one that proved it, with ``update_session_auth_hash``), revokes the tokens created before
    now and audits the proof. ``user`` is updated in place. Returns how many tokens were revoked."""
    now = timezone.now()
    locked = User.objects.select_for_update().get(pk=user.pk)
    previous_status = "verified" if locked.email_verified_at else "unverified"
    revoked = ApiToken.objects.filter(
        user=locked, revoked_at__isnull=True, created_at__lte=now
    ).update(revoked_at=now)
    user.email_verified_at = now
    user.session_epoch = locked.session_epoch + 1
    user.save(update_fields=["email_verified_at", "session_epoch"])
    workspace_ids = WorkspaceMembership.objects.filter(user=locked).values_list(
        "workspace_id", flat=True
    )
    for workspace_id in workspace_ids:
        audit_record(
            workspace_id=workspace_id,
            action=AccessAuditEvent.Action.ACCOUNT_EMAIL_VERIFIED,
            actor=actor or user,
            subject_user=user,
            previous_status=previous_status,
            status="verified",
        )
    logger.info(
        "Mailbox of user %s proven: sessions ended, %d earlier API token(s) revoked",
        user.pk,
        revoked,
    )
    return revoked


def account_rename(*, user: User, name: str, location: str = "body.name") -> User:
    """Set the display name under the names rule (``config.names.clean_display_name``)."""
    user.name = display_name_or_invalid(name, location=location)
    user.save(update_fields=["name"])
    return user


# --- Verification links ------------------------------------------------------------------------


def account_verification_token(user: User) -> str:
    """A signed token for the verification link. It names the account's current session epoch,
    so any proof (this link, a reset, another link) makes it stale: each link works once."""
    return signing.dumps(
        {"u": str(user.pk), "e": user.session_epoch}, salt=VERIFICATION_SALT, compress=True
    )


def account_from_verification_token(token: str) -> User:
    """The active account ``token`` verifies, or ``NotFoundError`` (forged, stale, expired)."""
    try:
        data = signing.loads(token, salt=VERIFICATION_SALT, max_age=settings.PASSWORD_RESET_TIMEOUT)
        user = User.objects.filter(pk=data["u"], is_active=True).first()
    except (signing.BadSignature, KeyError, TypeError, ValueError, ValidationError):
        user = None
    if user is None or user.session_epoch != data.get("e"):
        raise NotFoundError("This verification link is not valid (any more).")
    return user
