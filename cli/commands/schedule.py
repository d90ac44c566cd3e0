"""``herald schedule show|set``: the workspace's posting schedule (weekly slots in its time zone)
used by ``herald publication queue``."""

from __future__ import annotations

import re
from typing import Any

import click

from cli.errors import UsageProblem
from cli.main import current, global_options
from cli.output import echo, echo_table, emit_json

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SLOT = re.compile(r"^(?P<day>[a-z]{3})\s+(?P<time>\d{2}:\d{2})(?:@(?P<account>\S+))?$")


@click.group("schedule")
def group() -> None:
    """The workspace's posting schedule: show it and its next free slots, or replace it."""


def parse_slot(value: str) -> dict[str, Any]:
    """``"mon 09:30"`` or ``"thu 17:00@ACCOUNT_ID"`` → a slot of the API."""
    found = _SLOT.match(value.strip().lower())
    if not found or found["day"] not in DAYS:
        raise UsageProblem(f"Not a slot: {value!r} (e.g. 'mon 09:30' or 'thu 17:00@ACCOUNT_ID').")
    return {
        "weekday": DAYS.index(found["day"]),
        "time": found["time"],
        "account_id": found["account"],
    }


def _show(document: dict[str, Any]) -> None:
    echo(f"Time zone: {document['timezone']}")
    rows = [
        (DAYS[s["weekday"]], s["time"], s.get("account_id") or "every account")
        for s in document["slots"]
    ]
    echo_table(("DAY", "TIME", "ACCOUNT"), rows, "No slots: herald schedule set --slot 'mon 09:30'")
    nexts = [(r["account_id"], ", ".join(r["next_free"]) or "-") for r in document["next_slots"]]
    if nexts:
        echo("")
        echo_table(("ACCOUNT", "NEXT FREE SLOTS (UTC)"), nexts, "")


@group.command("show")
@global_options
def show() -> None:
    """Show the posting schedule and each account's next free slots."""
    hx = current()
    client = hx.client()
    document = client.posting_schedule_get(hx.require_workspace(client))
    if hx.json:
        emit_json(document)
        return
    _show(document)


@group.command("set")
@click.option("--timezone", "tz", required=True, help="IANA time zone, e.g. Europe/Paris.")
@click.option(
    "--slot",
    "slots",
    multiple=True,
    metavar="'DAY HH:MM[@ACCOUNT]'",
    help="A weekly slot (repeat the option); DAY is mon…sun; @ACCOUNT limits it to one account.",
)
@global_options
def set_schedule(tz: str, slots: tuple[str, ...]) -> None:
    """Replace the posting schedule (no --slot: no slots)."""
    hx = current()
    client = hx.client()
    parsed = [parse_slot(slot) for slot in slots]
    document = client.posting_schedule_set(hx.require_workspace(client), timezone=tz, slots=parsed)
    if hx.json:
        emit_json(document)
        return
    _show(document)
