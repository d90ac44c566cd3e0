"""API tokens: create (optionally scoped to one workspace, with an expiry) and revoke."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError
from config.names import name_or_invalid
from config.types import ModelId
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import ApiToken, User
from workspaces.tokens import new_token

TOKEN_NAME_MAX = 120


@transaction.atomic
def api_token_create(
    *,
    user: User,
    name: str,
    permissions: list[str],
    workspace_id: ModelId | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    name = name_or_invalid(name, max_length=TOKEN_NAME_MAX)  # the page and the command too
    if workspace_id is not None:
        require_workspace(Actor(user=user), workspace_id)
    if expires_at is not None:
        now = timezone.now()
        if expires_at <= now:
            raise FieldValidationError.at("body.expires_at", "Must be in the future.")
        if expires_at > now + timedelta(days=settings.HERALD_TOKEN_MAX_DAYS):
            raise FieldValidationError.at("body.expires_at", "At most 365 days ahead.")
    for _ in range(5):
        token_id, full_token, secret_hash = new_token()
        if not ApiToken.objects.filter(pk=token_id).exists():
            break
    token = ApiToken.objects.create(
        id=token_id,
        user=user,
        name=name,
        secret_hash=secret_hash,
        permissions=sorted(set(permissions)),
        workspace_id=parse_id(workspace_id, what="workspace") if workspace_id else None,
        expires_at=expires_at,
    )
    return token, full_token


@transaction.atomic
def api_token_revoke(*, user: User, token_id: str) -> ApiToken:
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFoundError(f"No API token with ID {token_id[:16]!r}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
