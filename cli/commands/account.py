"""``herald account list``."""

from __future__ import annotations

import click

from cli.main import current, global_options
from cli.output import echo, echo_table, emit_json, shorten


@click.group("account")
def group() -> None:
    """Connected social accounts."""


@group.command("list")
@click.option("--provider", help="Only accounts of this provider.")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor", help="Continue a previous listing.")
@global_options
def list_accounts(provider: str | None, limit: int, cursor: str | None) -> None:
    """List the workspace's connected accounts."""
    hx = current()
    client = hx.client()
    page = client.accounts(
        hx.require_workspace(client), limit=limit, cursor=cursor, provider=provider
    )
    if hx.json:
        emit_json(page)
        return
    rows = [
        (
            a.get("id"),
            a.get("provider"),
            a.get("username"),
            a.get("status"),
            shorten(a.get("status_reason"), 40),
        )
        for a in page.get("items") or []
    ]
    echo_table(["ID", "PROVIDER", "USERNAME", "STATUS", "REASON"], rows, "No connected accounts.")
    if page.get("next_cursor"):
        echo(f"More: --cursor {page['next_cursor']}")
