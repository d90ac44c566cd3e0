"""``herald publication list|create|schedule|queue|publish-now|status``.

A successful queue is not a delivery: ``status`` follows each destination until none is in
flight any more, and the exit code says whether every destination published.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from datetime import datetime
from typing import Any

import click

from cli.client import HeraldClient
from cli.errors import EXIT_FAILED, UsageProblem
from cli.main import current, global_options, polling_options
from cli.output import clear_line, echo, echo_table, emit_json, shorten, table
from cli.redact import redact

# Destination statuses that are still moving (docs/decisions/0006); the others have settled or wait
# for a schedule (draft, scheduled).
IN_FLIGHT = frozenset({"queued", "sending", "retry_wait", "ambiguous"})
UNSUCCESSFUL = frozenset({"failed", "blocked"})

_sleep = time.sleep  # the pause between polls (tests replace it)
_monotonic = time.monotonic


@click.group("publication")
def group() -> None:
    """Publications and their delivery."""


def _summary(destinations: list[dict[str, Any]]) -> str:
    counts = Counter(str(d.get("status")) for d in destinations)
    return ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))


def _who(destination: dict[str, Any]) -> str:
    return f"{destination.get('provider')} @{destination.get('username')}"


def _detail(destination: dict[str, Any], *, with_action: bool = True) -> str:
    return redact(_raw_detail(destination, with_action=with_action))


def _raw_detail(destination: dict[str, Any], *, with_action: bool) -> str:
    status = destination.get("status")
    if status == "published":
        return str(destination.get("external_url") or destination.get("external_id") or "")
    if status == "retry_wait":
        return f"retry at {destination.get('next_attempt_at')}: {destination.get('error_message') or ''}"
    if status in ("failed", "blocked", "ambiguous"):
        message = destination.get("error_message") or ""
        readiness = destination.get("readiness") or {}
        if not message and isinstance(readiness, dict):
            message = "; ".join(str(b.get("detail")) for b in readiness.get("blockers") or [])
        action = destination.get("action") if with_action else None
        return f"{message} (action: {action})" if action else str(message)
    return ""


def _destination_table(publication: dict[str, Any]) -> str:
    rows = [
        (
            d.get("id"),
            _who(d),
            d.get("status"),
            d.get("attempts"),
            d.get("action") if d.get("status") != "published" else "",
            shorten(_detail(d, with_action=False), 70),
        )
        for d in publication.get("destinations") or []
    ]
    return table(["DESTINATION", "ACCOUNT", "STATUS", "ATTEMPTS", "ACTION", "DETAIL"], rows)


def _headline(publication: dict[str, Any]) -> str:
    scheduled = publication.get("scheduled_at")
    when = f", scheduled for {scheduled}" if scheduled else ""
    return (
        f"Publication {publication.get('id')}: {publication.get('status')}{when} "
        f"(revision {publication.get('revision')})"
    )


@group.command("list")
@click.option("--status", help="Only publications in this status.")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor", help="Continue a previous listing.")
@global_options
def list_publications(status: str | None, limit: int, cursor: str | None) -> None:
    """List the workspace's publications, newest first."""
    hx = current()
    client = hx.client()
    page = client.publications(
        hx.require_workspace(client), limit=limit, cursor=cursor, status=status
    )
    if hx.json:
        emit_json(page)
        return
    rows = [
        (
            p.get("id"),
            p.get("status"),
            p.get("scheduled_at"),
            _summary(p.get("destinations") or []),
            shorten(p.get("text"), 40),
        )
        for p in page.get("items") or []
    ]
    echo_table(["ID", "STATUS", "SCHEDULED", "DESTINATIONS", "TEXT"], rows, "No publications.")
    if page.get("next_cursor"):
        echo(f"More: --cursor {page['next_cursor']}")


@group.command("create")
@click.option("--text", help="The text of the publication.")
@click.option(
    "--text-file",
    type=click.File("r", encoding="utf-8"),
    help="Read the text from a file ('-': standard input).",
)
@click.option(
    "--account",
    "accounts",
    multiple=True,
    required=True,
    metavar="ID",
    help="A destination account (repeat for several).",
)
@click.option(
    "--media", "media_ids", multiple=True, metavar="ID", help="Attach an uploaded media item."
)
@click.option(
    "--format",
    "profiles",
    multiple=True,
    metavar="[ACCOUNT:]KEY",
    help="The format (output profile) of every destination, or of one account's "
    "(e.g. youtube.short).",
)
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="[ACCOUNT:]NAME=VALUE",
    help="A destination option for every destination, or for one account's (repeat).",
)
@click.option(
    "--voice-profile",
    "voice_profile_id",
    metavar="ID",
    help="Write with this voice profile (default: the account's or the workspace's).",
)
@click.option(
    "--idempotency-key",
    metavar="KEY",
    help="Repeat a create safely: the same key returns the first result.",
)
@click.option(
    "--publish-now",
    is_flag=True,
    help="Then queue it for delivery at once (publish-now at the revision just created).",
)
@click.option(
    "--follow/--no-follow",
    default=False,
    help="With --publish-now: follow the destinations until they settle.",
)
@polling_options(
    "Seconds between polls when following.",
    "Stop following after this many seconds.",
)
@global_options
def create(
    text: str | None,
    text_file: Any,
    accounts: tuple[str, ...],
    media_ids: tuple[str, ...],
    profiles: tuple[str, ...],
    options: tuple[str, ...],
    voice_profile_id: str | None,
    idempotency_key: str | None,
    publish_now: bool,
    follow: bool,
    interval: float,
    timeout: float,
) -> None:
    """Create a draft publication with one destination per --account.

    With --publish-now it is then queued for delivery (and with --follow, followed until every
    destination settled, like `herald publication status`: exit 1 when one did not publish).
    """
    body_text = _create_text(text, text_file, follow=follow, publish_now=publish_now)
    hx = current()
    client = hx.client()
    publication = client.publication_create(
        workspace_id=hx.require_workspace(client),
        text=body_text,
        destinations=_destinations(accounts, profiles, options),
        media_ids=list(media_ids),
        voice_profile_id=voice_profile_id,
        idempotency_key=idempotency_key,
    )
    if publish_now:
        # Queue exactly the revision just created: a concurrent edit is refused (409), not sent.
        if not hx.json:
            echo(f"Created publication {publication['id']} (revision {publication['revision']}).")
        queued = client.publication_publish_now(
            publication["id"], expected_revision=publication["revision"]
        )
        if follow:
            _follow_and_report(
                client, publication["id"], interval=interval, timeout=timeout, as_json=hx.json
            )
            return
        if hx.json:
            emit_json(queued)
            return
        echo(_headline(queued))
        echo(f"Queued: not delivered yet. Follow with: herald publication status {queued['id']}")
        return
    if hx.json:
        emit_json(publication)
        return
    echo(_headline(publication))
    echo(_destination_table(publication))
    echo(
        f"Next: herald publication schedule {publication['id']} --at TIME, "
        f"or herald publication publish-now {publication['id']}"
    )


def _create_text(text: str | None, text_file: Any, *, follow: bool, publish_now: bool) -> str:
    """The publication's text, once the flags make sense together."""
    if (text is None) == (text_file is None):
        raise UsageProblem("Give the text with exactly one of --text or --text-file.")
    if follow and not publish_now:
        raise UsageProblem("--follow needs --publish-now (or use `herald publication status`).")
    return str(text if text is not None else text_file.read())


def _scoped(value: str, accounts: tuple[str, ...]) -> tuple[str | None, str]:
    """``ACCOUNT:REST`` when the prefix names one of ``accounts`` (``None``: every one)."""
    account, colon, rest = value.partition(":")
    return (account, rest) if colon and account in accounts else (None, value)


def _destinations(
    accounts: tuple[str, ...], profiles: tuple[str, ...], options: tuple[str, ...]
) -> list[dict[str, Any]]:
    """One destination per account, with the ``--format`` and ``--option`` values that apply
    to it (a value scoped to an account applies to that account only)."""
    destinations: dict[str, dict[str, Any]] = {a: {"account_id": a} for a in accounts}
    for value in profiles:
        account, key = _scoped(value, accounts)
        for target in [account] if account else accounts:
            destinations[target]["profile"] = key
    for value in options:
        account, pair = _scoped(value, accounts)
        name, equals, chosen = pair.partition("=")
        if not equals or not name:
            raise UsageProblem(f"--option takes NAME=VALUE, not {value!r}.")
        for target in [account] if account else accounts:
            destinations[target].setdefault("options", {})[name] = chosen
    return list(destinations.values())


def _parse_time(value: str) -> str:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise UsageProblem(
            f"Not an ISO 8601 time: {value!r} (e.g. 2030-01-31T09:00:00+01:00)."
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a time without offset is local time
    return moment.isoformat()


@group.command("schedule")
@click.argument("publication_id")
@click.option(
    "--at",
    "at",
    required=True,
    metavar="TIME",
    help="ISO 8601 time; without an offset it is local time.",
)
@click.option(
    "--expected-revision",
    type=click.IntRange(min=1),
    help="Refuse (409) if the publication changed since this revision.",
)
@global_options
def schedule(publication_id: str, at: str, expected_revision: int | None) -> None:
    """Schedule PUBLICATION_ID for delivery at --at."""
    hx = current()
    publication = hx.client().publication_schedule(
        publication_id, scheduled_at=_parse_time(at), expected_revision=expected_revision
    )
    if hx.json:
        emit_json(publication)
        return
    echo(_headline(publication))
    echo(f"Follow delivery with: herald publication status {publication['id']}")


@group.command("queue")
@click.argument("publication_id")
@click.option(
    "--expected-revision",
    type=click.IntRange(min=1),
    help="Refuse (409) if the publication changed since this revision.",
)
@global_options
def queue(publication_id: str, expected_revision: int | None) -> None:
    """Schedule PUBLICATION_ID at the next slot of the posting schedule free for all its
    accounts (see herald schedule show)."""
    hx = current()
    publication = hx.client().publication_queue(publication_id, expected_revision=expected_revision)
    if hx.json:
        emit_json(publication)
        return
    echo(_headline(publication))
    echo(f"Follow delivery with: herald publication status {publication['id']}")


@group.command("publish-now")
@click.argument("publication_id")
@click.option(
    "--expected-revision",
    type=click.IntRange(min=1),
    help="Refuse (409) if the publication changed since this revision.",
)
@click.option(
    "--follow/--no-follow", default=False, help="Follow the destinations until they settle."
)
@polling_options(
    "Seconds between polls when following.",
    "Stop following after this many seconds.",
)
@global_options
def publish_now(
    publication_id: str,
    expected_revision: int | None,
    follow: bool,
    interval: float,
    timeout: float,
) -> None:
    """Queue PUBLICATION_ID for delivery now (queued is not yet delivered)."""
    hx = current()
    client = hx.client()
    publication = client.publication_publish_now(
        publication_id, expected_revision=expected_revision
    )
    if follow:
        _follow_and_report(
            client, publication_id, interval=interval, timeout=timeout, as_json=hx.json
        )
        return
    if hx.json:
        emit_json(publication)
        return
    echo(_headline(publication))
    echo(f"Queued: not delivered yet. Follow with: herald publication status {publication['id']}")


@group.command("status")
@click.argument("publication_id")
@click.option("--once", is_flag=True, help="Show the current state without following.")
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=2.0,
    show_default=True,
    help="Seconds between polls.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=600,
    show_default=True,
    help="Stop following after this many seconds.",
)
@global_options
def status(publication_id: str, once: bool, interval: float, timeout: float) -> None:
    """Show PUBLICATION_ID's destinations, following them until they settle.

    Exits 1 when a destination failed or is blocked, or when following timed out.
    """
    hx = current()
    client = hx.client()
    if once:
        publication = client.publication(publication_id)
        if hx.json:
            emit_json(publication)
        else:
            echo(_headline(publication))
            echo(_destination_table(publication))
        if any(d.get("status") in UNSUCCESSFUL for d in publication.get("destinations") or []):
            raise click.exceptions.Exit(EXIT_FAILED)
        return
    _follow_and_report(client, publication_id, interval=interval, timeout=timeout, as_json=hx.json)


class _Progress:
    """Change lines ("sending → published") and, on a terminal, one live summary line."""

    def __init__(self, as_json: bool) -> None:
        self.err = as_json  # with --json, stdout carries only the JSON document
        stream = sys.stderr if as_json else sys.stdout
        self.live = stream.isatty()
        self.shown = False

    def _clear(self) -> None:
        if self.shown:
            clear_line(err=self.err)
            self.shown = False

    def change(self, text: str) -> None:
        self._clear()
        echo(text, err=self.err)

    def tick(self, text: str) -> None:
        if self.live:
            self._clear()
            echo(text, nl=False, err=self.err)
            self.shown = True

    def done(self) -> None:
        self._clear()


def follow_publication(
    client: HeraldClient,
    publication_id: str,
    *,
    interval: float,
    timeout: float,
    progress: _Progress,
) -> tuple[dict[str, Any], bool]:
    """Poll until no destination is in flight; returns (publication, settled).

    The server settles the publication in the transaction that settles its last destination,
    but one GET reads the publication and its destinations in separate statements: a read that
    falls between them can show every destination settled and the publication still
    ``publishing``. Polling goes on until the publication has settled too."""
    started = _monotonic()
    seen: dict[str, str] = {}
    while True:
        publication = client.publication(publication_id)
        destinations = publication.get("destinations") or []
        for destination in destinations:
            key, state = str(destination.get("id")), str(destination.get("status"))
            if seen.get(key) != state:
                before = f"{seen[key]} → " if key in seen else ""
                detail = _detail(destination)
                progress.change(
                    f"{_who(destination)}: {before}{state}" + (f"  {detail}" if detail else "")
                )
                seen[key] = state
        moving = [d for d in destinations if d.get("status") in IN_FLIGHT]
        if not moving and publication.get("status") != "publishing":
            progress.done()
            return publication, True
        elapsed = _monotonic() - started
        if elapsed >= timeout:
            progress.done()
            return publication, False
        settled = len(destinations) - len(moving)
        progress.tick(
            f"[{elapsed:4.0f}s] {settled}/{len(destinations)} settled ({_summary(destinations)})"
        )
        _sleep(interval)


def _follow_and_report(
    client: HeraldClient, publication_id: str, *, interval: float, timeout: float, as_json: bool
) -> None:
    progress = _Progress(as_json)
    publication, settled = follow_publication(
        client, publication_id, interval=interval, timeout=timeout, progress=progress
    )
    destinations = publication.get("destinations") or []
    if as_json:
        emit_json(publication)
    else:
        echo(_headline(publication))
        echo(_destination_table(publication))
    if not settled:
        echo(
            f"herald: still in flight after {timeout:.0f} s ({_summary(destinations)}); "
            f"run `herald publication status {publication_id}` again.",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_FAILED)
    if any(d.get("status") in UNSUCCESSFUL for d in destinations):
        raise click.exceptions.Exit(EXIT_FAILED)
