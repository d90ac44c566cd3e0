"""Links and e-mails to people: the invitation page's address and the invitation e-mail.

Links are absolute: ``HERALD_PUBLIC_URL`` when it is set, otherwise the origin of the request
that produced them (``base_url``). An invitation e-mail is sent after the transaction that issued
its token commits (``workspaces.services.invitations`` schedules it); a failure to send is logged
(never with the token or the link) and never fails the request: the API answer carries
``accept_url`` for the inviter to pass on by any channel.
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

from workspaces.models import Invitation

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


def _send_invitation(invitation: Invitation, accept_url: str) -> None:
    inviter = invitation.invited_by
    context = {
        "workspace": invitation.workspace.name,
        "inviter": (inviter.name or inviter.email) if inviter else "An administrator",
        "role": invitation.role,
        "accept_url": accept_url,
        "expires_at": invitation.expires_at,
    }
    subject = f"You are invited to {invitation.workspace.name} on Herald"
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
