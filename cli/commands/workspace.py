"""``herald workspace list|use``."""

from __future__ import annotations

import click

from cli.client import normalize_instance
from cli.errors import UsageProblem
from cli.main import current, global_options
from cli.output import echo, echo_table, emit_json


@click.group("workspace")
def group() -> None:
    """Workspaces the token can reach."""


@group.command("list")
@global_options
def list_workspaces() -> None:
    """List workspaces (* marks the selected one)."""
    hx = current()
    workspaces = hx.client().workspaces()
    if hx.json:
        emit_json({"items": workspaces})
        return
    selected = hx.workspace_setting.value
    rows = [
        (
            "*" if str(w.get("id")) == selected else " ",
            w.get("id"),
            w.get("name"),
            w.get("role"),
            (w.get("plan") or {}).get("name"),
            w.get("member_count"),
        )
        for w in workspaces
    ]
    echo_table(
        ["", "ID", "NAME", "ROLE", "PLAN", "MEMBERS"], rows, "The token reaches no workspace."
    )


@group.command("use")
@click.argument("workspace_id")
@global_options
def use(workspace_id: str) -> None:
    """Select WORKSPACE_ID in the current profile (checked against the instance)."""
    hx = current()
    profile = hx.profile
    if profile is None:
        raise UsageProblem(
            "`workspace use` saves into a profile: add one with `herald instance add`."
        )
    client = hx.client()
    if client.instance != normalize_instance(profile.instance):
        raise UsageProblem(
            f"Profile {profile.name!r} is for {profile.instance}, not {client.instance}."
        )
    workspace = client.workspace(workspace_id)
    hx.store.set_workspace(profile.name, str(workspace["id"]))
    if hx.json:
        emit_json({"profile": profile.name, "workspace": workspace})
        return
    echo(
        f"Profile {profile.name!r} now uses workspace {workspace['id']} ({workspace.get('name')})."
    )
