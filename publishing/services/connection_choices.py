"""Connects that reach several accounts at once (Meta's Facebook Login: the Pages a person
manages and the Instagram professional accounts linked to them).

The OAuth callback stores the candidates (encrypted, with their tokens) as a
:class:`~publishing.models.ConnectionChoice`; the user who started the connect reads them and
chooses which become accounts (API ``/accounts/choices/{id}``, CLI ``herald account choose``).
A choice is single use and expires with ``HERALD_OAUTH_STATE_SECONDS``; the candidates not
chosen are forgotten with it.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, field_error
from config.types import ModelId
from providers import PROVIDERS, credentials
from providers.base import Candidate, ConnectedAccount, ConnectionCandidates
from publishing.models import Account, ConnectionChoice, OAuthState
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import WorkspaceMembership

_UNKNOWN = "No pending choice of accounts with ID {pk}: it was used, has expired, or is not yours."


def _candidate_row(candidate: Candidate) -> dict[str, Any]:
    account = candidate.account
    return {
        "key": candidate.key,
        "provider": candidate.provider,
        "label": candidate.label,
        "external_id": account.external_id,
        "username": account.username,
        "display_name": account.display_name,
        "avatar_url": account.avatar_url,
        "profile_url": account.profile_url,
        "instance_url": account.instance_url,
        "account_kind": account.account_kind,
        "granted_scopes": list(account.granted_scopes),
        "expires_at": account.expires_at.isoformat() if account.expires_at else None,
        "credentials": dict(account.credentials),
    }


def choice_create(*, pending: OAuthState, found: ConnectionCandidates) -> ConnectionChoice:
    """Keep the candidates of a completed login for the user who started it."""
    rows = [_candidate_row(c) for c in found.candidates]
    return ConnectionChoice.objects.create(
        workspace_id=pending.workspace_id,
        user_id=pending.user_id,
        provider=pending.provider,
        app=pending.app,
        candidates_encrypted=credentials.encrypt({"candidates": json.dumps(rows)}),
        expires_at=timezone.now() + timedelta(seconds=settings.HERALD_OAUTH_STATE_SECONDS),
    )


def _rows(choice: ConnectionChoice) -> list[dict[str, Any]]:
    stored = credentials.decrypt(choice.candidates_encrypted).get("candidates") or "[]"
    rows = json.loads(stored)
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def choice_candidates(choice: ConnectionChoice) -> list[dict[str, Any]]:
    """The candidates as API callers see them: no credentials; ``available`` says whether this
    server can connect that provider."""
    rows = _rows(choice)
    return [
        {
            **{k: v for k, v in row.items() if k != "credentials"},
            "available": row.get("provider") in PROVIDERS,
        }
        for row in rows
    ]


def _pending_choice(actor: Actor, choice_id: ModelId) -> ConnectionChoice:
    pk = parse_id(choice_id, what="choice")
    choice = (
        ConnectionChoice.objects.filter(pk=pk, expires_at__gt=timezone.now())
        .select_related("app")
        .first()
    )
    if choice is None or choice.user_id != actor.user.pk:
        raise NotFoundError(_UNKNOWN.format(pk=pk))
    require_workspace(actor, choice.workspace_id, role=WorkspaceMembership.Role.EDITOR)
    return choice


def choice_get(*, actor: Actor, choice_id: ModelId) -> ConnectionChoice:
    return _pending_choice(actor, choice_id)


def _connected(row: dict[str, Any]) -> ConnectedAccount:
    expires = row.get("expires_at")
    return ConnectedAccount(
        external_id=str(row["external_id"]),
        username=str(row.get("username") or ""),
        display_name=str(row.get("display_name") or ""),
        avatar_url=str(row.get("avatar_url") or ""),
        profile_url=str(row.get("profile_url") or ""),
        instance_url=str(row.get("instance_url") or ""),
        account_kind=str(row.get("account_kind") or "user"),
        granted_scopes=tuple(row.get("granted_scopes") or ()),
        expires_at=datetime.fromisoformat(expires) if expires else None,
        credentials={str(k): str(v) for k, v in (row.get("credentials") or {}).items()},
    )


def choice_apply(*, actor: Actor, choice_id: ModelId, keys: list[str]) -> list[Account]:
    """Connect the chosen candidates (each its own account), then forget the choice. Every key
    must name a candidate of a provider this server has; nothing is connected otherwise."""
    # Imported here: the accounts service imports this module.
    from publishing.services import accounts

    choice = _pending_choice(actor, choice_id)
    rows = {row["key"]: row for row in _rows(choice)}
    errors = []
    for index, key in enumerate(keys):
        row = rows.get(key)
        if row is None:
            errors.append(
                field_error(f"body.candidates[{index}]", "Not a candidate of this choice.")
            )
        elif row["provider"] not in PROVIDERS:
            errors.append(
                field_error(
                    f"body.candidates[{index}]",
                    f"This server cannot connect {row['provider']} accounts.",
                )
            )
    if errors:
        raise FieldValidationError(errors)
    for provider in sorted({rows[key]["provider"] for key in keys}):
        accounts.require_connectable(provider)
    access = require_workspace(actor, choice.workspace_id, role=WorkspaceMembership.Role.EDITOR)
    with transaction.atomic():
        connected = [
            accounts.store_account(
                actor=actor,
                workspace=access.workspace,
                provider=rows[key]["provider"],
                connected=_connected(rows[key]),
                app=choice.app,
            )
            for key in dict.fromkeys(keys)
        ]
        ConnectionChoice.objects.filter(pk=choice.pk).delete()
    return connected
