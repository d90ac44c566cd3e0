"""Content discovery: idea cards from the workspace's own material (docs/decisions/0017-voice-and-discovery.md).

It reads and never writes a draft or a publication, and never calls a provider (the platforms'
capability metadata is static adapter data). The only row it touches is the workspace's
discovery-call counter, which the plan limits (403 ``plan_limit``); a call is counted when it
is admitted, before the engine runs, so an engine failure still counts as a call.
"""

from __future__ import annotations

import math
from typing import Any

from django.utils import timezone

from config.errors import FieldValidationError, NotFoundError, field_error
from config.types import ModelId
from discovery import selectors
from discovery.engines import get_engine
from discovery.throttling import one_in_flight
from publishing.models import Account
from voice import selectors as voice_selectors
from voice.models import VoiceProfile
from workspaces.access import Actor, parse_id, require_workspace
from workspaces.models import WorkspaceMembership
from workspaces.services import usage_consume

LIMIT_DEFAULT, LIMIT_MAX = 5, 8
PLATFORMS_MAX = 5
IN_FLIGHT_MARGIN_SECONDS = 30


def _voice_profile(
    workspace_id: ModelId, voice_profile_id: ModelId | None, platforms: list[str]
) -> VoiceProfile | None:
    """The named profile (404 if it is not one of the workspace's); else the profile every
    connected account of the requested platforms writes with, when they agree; else the
    workspace default."""
    if voice_profile_id is not None:
        pk = parse_id(voice_profile_id, what="voice profile")
        profile = VoiceProfile.objects.filter(pk=pk, workspace_id=workspace_id).first()
        if profile is None:
            raise NotFoundError(f"No voice profile with ID {pk} in this workspace.")
        return profile
    account_ids = list(
        Account.objects.filter(
            workspace_id=workspace_id, provider__in=platforms, status=Account.Status.ACTIVE
        ).values_list("pk", flat=True)
    )
    return voice_selectors.voice_profile_for_accounts(
        workspace_id=workspace_id, account_ids=account_ids
    )


def _check_platforms(platforms: list[str]) -> None:
    available = set(selectors.publishable_providers())
    errors = [
        field_error(
            f"body.platforms[{index}]",
            "Herald cannot publish to this platform on this instance.",
            value=platform,
        )
        for index, platform in enumerate(platforms)
        if platform not in available
    ]
    if errors:
        raise FieldValidationError(errors)


def discovery_run(
    *,
    actor: Actor,
    workspace_id: ModelId,
    platforms: list[str],
    focus: str = "",
    audience: str = "",
    voice_profile_id: ModelId | None = None,
    limit: int = LIMIT_DEFAULT,
) -> dict[str, Any]:
    """``{generated_at, model, opportunities}`` for the workspace (editor or above)."""
    access = require_workspace(actor, workspace_id, role=WorkspaceMembership.Role.EDITOR)
    workspace = access.workspace
    _check_platforms(platforms)
    profile = _voice_profile(workspace.pk, voice_profile_id, platforms)
    engine = get_engine()
    budget = engine.time_budget_seconds
    with one_in_flight(
        actor.user.pk,
        ttl_seconds=budget + IN_FLIGHT_MARGIN_SECONDS,
        retry_after=min(10, max(1, math.ceil(budget / 3))),
    ):
        usage_consume(workspace=workspace, metric="discovery_calls")
        context = selectors.discovery_context(
            workspace=workspace,
            platforms=platforms,
            limit=limit,
            focus=focus,
            audience=audience,
            voice_profile=profile,
        )
        result = engine.discover(context)
    return {
        "generated_at": timezone.now(),
        "model": result.model,
        "opportunities": result.opportunities,
    }
