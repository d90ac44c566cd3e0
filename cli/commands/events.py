"""``herald events tail``: the workspace's events in order, from a cursor on (GET /api/v1/events),
optionally following the list as new events arrive."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from cli.main import current, global_options
from cli.output import echo


@click.group("events")
def group() -> None:
    """The workspace's event record (docs/events.md)."""


def _line(event: dict[str, Any]) -> str:
    data = event.get("data") or {}
    subject = data.get("id", "")
    status = data.get("status", "")
    return f"{event['occurred_at']}  {event['type']:<34} {subject}  {status}".rstrip()


@group.command("tail")
@click.option("--after", "cursor", default=None, help="A cursor printed earlier: start after it.")
@click.option("--follow", "-f", is_flag=True, help="Keep polling for new events (Ctrl-C stops).")
@click.option(
    "--interval",
    type=click.FloatRange(0.5, 300),
    default=5.0,
    show_default=True,
    help="Seconds between polls with --follow.",
)
@global_options
def tail(cursor: str | None, follow: bool, interval: float) -> None:
    """Print the workspace's events after --after (from the first without it), oldest first, and
    the cursor to resume from. --json prints one event object per line."""
    hx = current()
    client = hx.client()
    workspace_id = hx.require_workspace(client)
    try:
        while True:
            page = client.get("/events", workspace_id=workspace_id, after=cursor, limit=200)
            for event in page["items"]:
                if hx.json:
                    echo(json.dumps(event))  # one object per line, ASCII only (JSON Lines)
                else:
                    echo(_line(event))
            cursor = page["next_cursor"]
            if page["has_more"]:
                continue
            if not follow:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    echo(f"Resume with: --after {cursor}", err=True)
