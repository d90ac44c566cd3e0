"""``herald workspace list|use|invite``."""

from __future__ import annotations

import click

from cli.client import normalize_instance
from cli.errors import UsageProblem
from cli.main import current, global_options
from cli.output import echo, echo_table, emit_json, fields


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


@group.command("invite")
@click.argument("email")
@click.option(
    "--role",
    type=click.Choice(["admin", "editor", "viewer"]),
    default="editor",
    show_default=True,
    help="The role the invitee gets.",
)
@global_options
def invite(email: str, role: str) -> None:
    """Invite EMAIL to the workspace (a workspace admin's token with api:write).

    When the instance sends e-mail, the link goes to the invitee's mailbox only and is never
    printed. Only an instance that cannot send e-mail answers the link, to pass on by hand.
    """
    hx = current()
    client = hx.client()
    invitation = client.invitation_create(hx.require_workspace(client), email=email, role=role)
    if hx.json:
        emit_json(invitation)
        return
    echo(
        fields(
            [
                ("ID", invitation.get("id")),
                ("E-mail", invitation.get("email")),
                ("Role", invitation.get("role")),
                ("Expires", invitation.get("expires_at")),
            ]
        )
    )
    if invitation.get("delivery") == "manual" and invitation.get("accept_url"):
        echo("This instance cannot send e-mail: pass this link on to the invitee yourself.")
        echo("An account created from it stays unverified until its mailbox is proven.")
        echo(invitation["accept_url"])
    else:
        echo("The invitation link was e-mailed to the invitee (and only to them).")
