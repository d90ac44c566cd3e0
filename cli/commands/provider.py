"""``herald provider readiness``: the readiness projection."""

from __future__ import annotations

from typing import Any

import click

from cli.main import current, global_options
from cli.output import echo_table, emit_json, shorten

# What an operator does about each actionable state (in readiness's order of states).
NEXT_ACTIONS = {
    "healthy": "",
    "unsupported": "none: Herald has no adapter for it",
    "disabled": "re-enable the provider (setting or runtime control)",
    "needs_configuration": "configure the provider app",
    "reconnect_required": "reconnect the affected accounts",
    "degraded": "check the provider's status; retry later",
    "approval_required": "record a current approval review",
    "trial_only": "finish the provider's app review",
    "policy_restricted": "change the account, format or policy mode",
    "expired_proof": "re-run the certification tests",
    "certification_required": "run the local and live certification",
}


@click.group("provider")
def group() -> None:
    """Provider readiness."""


def _count(value: Any) -> Any:
    if isinstance(value, list):
        return len(value)
    return value if value is not None else 0


def _blockers(entry: dict[str, Any]) -> str:
    issues = entry.get("blocking_issues") or entry.get("blockers") or []
    codes = [str(issue.get("code")) if isinstance(issue, dict) else str(issue) for issue in issues]
    return ", ".join(dict.fromkeys(codes))


def next_action(entry: dict[str, Any]) -> str:
    explicit = entry.get("next_action")
    if isinstance(explicit, str) and explicit:
        return explicit
    state = str(entry.get("state") or "")
    return NEXT_ACTIONS.get(state, f"see the blockers ({state})" if state else "")


@group.command("readiness")
@global_options
def readiness() -> None:
    """Print the readiness projection: provider, state, accounts, blockers, next action.

    With --json, the projection exactly as GET /provider-readiness returns it.
    """
    hx = current()
    client = hx.client()
    workspace_id = hx.require_workspace(client)
    projection = client.provider_readiness(workspace_id)
    if hx.json:
        emit_json(projection)
        return
    rows = [
        (
            entry.get("provider"),
            entry.get("state"),
            _count(entry.get("connected_accounts")),
            shorten(_blockers(entry), 48),
            shorten(next_action(entry), 48),
        )
        for entry in projection.get("providers") or []
    ]
    echo_table(
        ["PROVIDER", "STATE", "ACCOUNTS", "BLOCKERS", "NEXT ACTION"],
        rows,
        "This instance reports no providers.",
    )
