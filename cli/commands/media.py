"""``herald media upload|list|show|delete``.

``upload`` sends the file over the resumable protocol (tus, ``cli.uploads``) in 8 MiB PATCHes
with a progress bar on stderr (bytes, speed, time left); interrupted (Ctrl-C, a dropped
connection), the same command run again resumes where the instance says the upload stopped.
``--wait`` then polls the media item until its ``status`` is ``ready`` or ``failed`` (an
instance whose media have no ``status`` has them ready at once).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from cli.errors import EXIT_FAILED
from cli.main import current, global_options, polling_options
from cli.output import clear_line, echo, echo_table, emit_json, fields, shorten
from cli.uploads import upload_file

_sleep = time.sleep  # the pause between polls (tests replace it)
_monotonic = time.monotonic


@click.group("media")
def group() -> None:
    """Media items of the workspace: upload (resumable), list, show, delete."""


class _Progress:
    """One progress line on stderr: percent, bytes, speed and time left; redrawn in place on a
    terminal, else printed at most once a second (and at the end) so logs stay short."""

    def __init__(self, name: str, enabled: bool) -> None:
        self.name, self.enabled = shorten(name, 30), enabled
        self.tty = sys.stderr.isatty()
        self.start = self.last = _monotonic()
        self.first: int | None = None
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = _monotonic()
        if self.first is None:
            self.first, self.start = done, now
        elif done < total and now - self.last < (0.1 if self.tty else 1.0):
            return
        self.last = now
        rate = (done - self.first) / max(now - self.start, 1e-6)
        left = (total - done) / rate if rate > 0 else 0.0
        percent = 100 * done // max(total, 1)
        line = (
            f"{self.name}  {percent:3d}%  {done / 1e6:.1f}/{total / 1e6:.1f} MB  "
            f"{rate / 1e6:.1f} MB/s  {int(left) // 60:02d}:{int(left) % 60:02d} left"
        )
        if self.tty:
            clear_line(err=True)
        echo(line, err=True, nl=not self.tty)
        self.drawn = True

    def close(self) -> None:
        if self.enabled and self.tty and self.drawn:
            echo("", err=True)


@group.command("upload")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--alt", "alt_text", default="", help="Alternative text for the media item.")
@click.option("--wait", is_flag=True, help="Wait until the media item is ready (or failed).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
@polling_options("Seconds between status checks with --wait.", "Give up waiting after this.")
@global_options
def upload(
    file: Path, alt_text: str, wait: bool, no_progress: bool, interval: float, timeout: float
) -> None:
    """Upload FILE (resumable: run again after an interruption to continue)."""
    hx = current()
    client = hx.client()
    workspace_id = hx.require_workspace(client)
    progress = _Progress(file.name, enabled=not no_progress and not hx.json)
    try:
        media_id = upload_file(client, workspace_id, file, alt_text=alt_text, progress=progress)
    finally:
        progress.close()
    item = client.media(media_id)
    if wait:
        deadline = _monotonic() + timeout
        while item.get("status", "ready") not in ("ready", "failed"):
            if _monotonic() >= deadline:
                echo(f"Still {item.get('status')} after {timeout:g} s: {media_id}", err=True)
                sys.exit(EXIT_FAILED)
            _sleep(interval)
            item = client.media(media_id)
    _show(item, hx.json)
    if wait and item.get("status") == "failed":
        sys.exit(EXIT_FAILED)


@group.command("list")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor", help="Continue a previous listing.")
@global_options
def list_media(limit: int, cursor: str | None) -> None:
    """List the workspace's media items, newest first."""
    hx = current()
    client = hx.client()
    page = client.media_list(hx.require_workspace(client), limit=limit, cursor=cursor)
    if hx.json:
        emit_json(page)
        return
    rows = [
        (
            m.get("id"),
            shorten(m.get("name"), 30),
            m.get("mime_type"),
            m.get("size_bytes"),
            m.get("status", "ready"),
        )
        for m in page.get("items") or []
    ]
    echo_table(["ID", "NAME", "TYPE", "BYTES", "STATUS"], rows, "No media.")
    if page.get("next_cursor"):
        echo(f"More: --cursor {page['next_cursor']}")


@group.command("show")
@click.argument("media_id")
@global_options
def show(media_id: str) -> None:
    """Show one media item."""
    hx = current()
    _show(hx.client().media(media_id), hx.json)


@group.command("delete")
@click.argument("media_id")
@global_options
def delete(media_id: str) -> None:
    """Delete a media item no open publication uses."""
    hx = current()
    hx.client().media_delete(media_id)
    if not hx.json:
        echo(f"Deleted media {media_id}.")


def _show(item: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(item)
        return
    pairs = [
        ("ID", item.get("id")),
        ("Name", item.get("name")),
        ("Type", item.get("mime_type")),
        ("Bytes", item.get("size_bytes")),
        ("Status", item.get("status", "ready")),
    ]
    if item.get("status_reason") or item.get("failure_reason"):
        pairs.append(("Reason", item.get("status_reason") or item.get("failure_reason")))
    if item.get("width"):
        pairs.append(("Size", f"{item.get('width')}x{item.get('height')}"))
    if item.get("alt_text"):
        pairs.append(("Alt text", item.get("alt_text")))
    echo(fields(pairs))
