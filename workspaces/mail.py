"""Links and e-mails to people: the invitation page's address, the invitation e-mail and the
verification e-mail.

Links are absolute: ``HERALD_PUBLIC_URL`` when it is set, otherwise the origin of the request
that produced them (``base_url``). An invitation e-mail is sent after the transaction that issued
its token commits (``workspaces.services.invitations`` schedules it); a failure to send is logged
(never with the token or the link) and never fails the request: the inviter resends it. The link
is never shown to the inviter when the instance sends e-mail.

Names people chose (the inviter's display name, the workspace's name) appear quoted
(``config.names.quoted``), never as part of the sentence: a name such as ``Your bank. Call…``
reads as the name it is.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse

from config.names import quoted
from workspaces.models import Invitation, User

logger = logging.getLogger(__name__)


def base_url(request: Any) -> str:
    """``https://herald.example`` (no trailing slash) for links that leave the instance."""
    if settings.HERALD_PUBLIC_URL:
        return str(settings.HERALD_PUBLIC_URL)
    return f"{request.scheme}://{request.get_host()}"


def invitation_accept_url(base: str, accept_token: str) -> str:
    """The invitation page's address under ``base`` (a ``base_url``)."""
    return base + reverse("invitation-page", args=[accept_token])


def send_invitation_after_commit(invitation: Invitation, accept_url: str) -> None:
    """E-mail ``accept_url`` to the invitee once the current transaction commits (at once
    outside one). Nothing is sent when the instance has no e-mail backend."""
    if not settings.HERALD_EMAIL_ENABLED:
        return
    transaction.on_commit(partial(_send_invitation, invitation, accept_url))


def inviter_label(inviter: User | None) -> str:
    """Who sent an invitation, for an e-mail: the quoted display name and the address, or the
    address alone."""
    if inviter is None:
        return "an administrator"
    if inviter.name:
        return f"{quoted(inviter.name)} <{inviter.email}>"
    return f"<{inviter.email}>"


def _send_invitation(invitation: Invitation, accept_url: str) -> None:
    context = {
        "workspace": quoted(invitation.workspace.name),
        "inviter": inviter_label(invitation.invited_by),
        "role": invitation.role,
        "accept_url": accept_url,
        "expires_at": invitation.expires_at,
    }
    subject = f"Invitation to the workspace {quoted(invitation.workspace.name)} on Herald"
    try:
        send_mail(
            subject=" ".join(subject.split()),  # no line break from a workspace name
            message=render_to_string("workspaces/email/invitation.txt", context),
            from_email=None,  # DEFAULT_FROM_EMAIL
            recipient_list=[invitation.email],
        )
    except Exception as exc:  # any backend failure: logged, never fatal
        logger.warning(
            "Invitation e-mail for invitation %s not sent (%s)", invitation.pk, type(exc).__name__
        )


def send_verification(user: User, verify_url: str) -> bool:
    """E-mail the verification link to ``user``'s address; False when it could not be sent
    (logged without the link)."""
    try:
        send_mail(
            subject="Confirm your e-mail address on Herald",
            message=render_to_string(
                "workspaces/email/verify_email.txt", {"verify_url": verify_url, "email": user.email}
            ),
            from_email=None,
            recipient_list=[user.email],
        )
    except Exception as exc:  # any backend failure: logged, never fatal
        logger.warning("Verification e-mail for user %s not sent (%s)", user.pk, type(exc).__name__)
        return False
    return True
