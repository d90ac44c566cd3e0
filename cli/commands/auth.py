"""``herald auth login|status|logout``: the API token of a profile."""

from __future__ import annotations

import sys
from typing import Any

import click

from cli.client import HeraldClient
from cli.errors import NotSignedIn, UsageProblem
from cli.main import current, global_options
from cli.output import echo, emit_json, fields

DEFAULT_PROFILE = "default"


@click.group("auth")
def group() -> None:
    """Sign in with an API token (created at /settings/developer/ of the instance)."""


def _interactive() -> bool:
    return sys.stdin.isatty()


def _read_token() -> str:
    """From a hidden prompt on a terminal, else the first line of standard input."""
    if _interactive():
        token = click.prompt("API token (input hidden)", hide_input=True, err=True)
    else:
        token = sys.stdin.readline()
    token = str(token).strip()
    if not token or any(ch.isspace() for ch in token):
        raise UsageProblem("No token read: paste the whole token (hrld_…) on one line.")
    return token


def _describe_token(me: dict[str, Any]) -> str:
    token = me.get("token") or {}
    scope = token.get("workspace_id") or "all of the user's workspaces"
    permissions = ", ".join(token.get("permissions") or []) or "no permissions"
    expires = token.get("expires_at") or "never"
    return f"{token.get('name', '?')!r}: {permissions}; {scope}; expires {expires}"


@group.command("login")
@global_options
def login() -> None:
    """Save a token for the profile (read from a hidden prompt or from stdin).

    The token is checked against the instance before it is saved to credentials.json
    (mode 0600). It is never echoed.
    """
    hx = current()
    instance = hx.require_instance()
    name = hx.profile_setting.value or DEFAULT_PROFILE
    profile = hx.store.profile(name)
    if profile is not None and profile.instance != instance:
        raise UsageProblem(
            f"Profile {name!r} is for {profile.instance}; sign in to {instance} under another "
            "profile (--profile NAME)."
        )
    token = hx.options.token or _read_token()
    me = HeraldClient(instance, token).me()  # 401 here: the token is not saved
    if profile is None:
        hx.store.save_profile(name, instance)
    hx.store.set_token(name, token)
    email = (me.get("user") or {}).get("email", "?")
    if hx.json:
        emit_json({"profile": name, "instance": instance, "user": email, "saved": True})
        return
    echo(f"Signed in to {instance} as {email} (token {_describe_token(me)}).")
    echo(f"Token saved for profile {name!r} in {hx.store.credentials_path} (mode 0600).")


@group.command("status")
@global_options
def status() -> None:
    """Show the instance, the token's presence and source, and whom it signs in as."""
    hx = current()
    instance = hx.require_instance()
    token = hx.token_setting
    profile = hx.profile_setting
    report: dict[str, Any] = {
        "instance": instance,
        "profile": profile.value,
        "token": {"present": token.is_set, "source": token.source},
    }
    if not token.is_set:
        if hx.json:
            emit_json(report)
        raise NotSignedIn()
    me = HeraldClient(instance, token.value).me()
    user = me.get("user") or {}
    report["user"] = {"id": user.get("id"), "email": user.get("email")}
    report["token"].update({k: v for k, v in (me.get("token") or {}).items() if k != "id"})
    report["workspaces"] = len(me.get("workspaces") or [])
    if hx.json:
        emit_json(report)
        return
    echo(
        fields(
            [
                ("Instance", instance),
                ("Profile", f"{profile.value or 'none'} ({profile.source})"),
                ("Token", f"present ({token.source})"),
                ("Signed in as", user.get("email", "?")),
                ("Token", _describe_token(me)),
                ("Workspaces", report["workspaces"]),
            ]
        )
    )


@group.command("logout")
@global_options
def logout() -> None:
    """Forget the profile's saved token (revoke it at /settings/developer/)."""
    hx = current()
    name = hx.profile_setting.value
    if name is None:
        raise UsageProblem("No profile selected; nothing to sign out of.")
    removed = hx.store.clear_token(name)
    if hx.json:
        emit_json({"profile": name, "removed": removed})
        return
    if removed:
        echo(
            f"Removed the saved token of profile {name!r}. It is still valid until you "
            "revoke it in the instance's developer settings (/settings/developer/)."
        )
    else:
        echo(f"Profile {name!r} has no saved token.")
    if hx.environ.get("HERALD_TOKEN"):
        echo("Note: HERALD_TOKEN is set in the environment and still applies.", err=True)
