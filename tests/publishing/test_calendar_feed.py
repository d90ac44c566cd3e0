"""The iCalendar feed of a workspace's scheduled posts: its secret URL (get, rotate) and the
document, checked strictly against RFC 5545 (CRLF lines of at most 75 octets, folding, escaping,
required properties)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from rest_framework.test import APIClient

from publishing.calendar_feed import escape_text, fold
from tests.publishing_support import API, create_publication, make_account, ok

pytestmark = pytest.mark.django_db


def _parse(raw: bytes) -> list[dict[str, list[tuple[str, str]]]]:
    """A strict reading of one VCALENDAR: returns its components as property lists."""
    text = raw.decode("utf-8")
    assert text.endswith("\r\n")
    physical = text[:-2].split("\r\n")
    assert "\n" not in "".join(physical)
    assert "\r" not in "".join(physical)
    for line in physical:
        assert len(line.encode()) <= 75, line
    lines: list[str] = []
    for line in physical:  # unfold
        if line.startswith(" "):
            lines[-1] += line[1:]
        else:
            lines.append(line)
    assert lines[0] == "BEGIN:VCALENDAR"
    assert lines[-1] == "END:VCALENDAR"
    components: list[dict[str, list[tuple[str, str]]]] = []
    stack: list[dict[str, list[tuple[str, str]]]] = []
    for line in lines:
        name, _, value = line.partition(":")
        assert name, line
        assert name == name.upper(), line
        if name == "BEGIN":
            stack.append({"_kind": [("", value)]})
        elif name == "END":
            component = stack.pop()
            assert component["_kind"][0][1] == value
            components.append(component)
        else:
            stack[-1].setdefault(name.split(";")[0], []).append((name, value))
    assert stack == []
    return components


def _one(component: dict[str, list[tuple[str, str]]], name: str) -> str:
    values = component.get(name, [])
    assert len(values) == 1, (name, component)
    return values[0][1]


def _unescape(value: str) -> str:
    out, i = "", 0
    while i < len(value):
        if value[i] == "\\":
            nxt = value[i + 1]
            out += "\n" if nxt in "nN" else nxt
            i += 2
        else:
            assert value[i] not in ";,", value
            out += value[i]
            i += 1
    return out


def test_fold_and_escape() -> None:
    line = "SUMMARY:" + "é" * 60
    folded = fold(line)
    assert all(len(part.encode()) <= 75 for part in folded.split("\r\n"))
    assert folded.replace("\r\n ", "") == line
    assert escape_text("a,b;c\\d\ne\x07") == "a\\,b\\;c\\\\d\\ne"


def test_calendar_url_rotation_and_document(
    owner_client: APIClient, api_client: APIClient, workspace: Any
) -> None:
    url = f"{API}/workspaces/{workspace.pk}/calendar-feed"
    assert ok(owner_client.get(url)) == {
        "$schema": ok(owner_client.get(url))["$schema"],
        "url": None,
        "created_at": None,
    }
    first = ok(owner_client.post(url, format="json"))["url"]
    assert first.startswith("http://testserver/feeds/calendar/")
    assert first.endswith(".ics")
    assert ok(owner_client.get(url))["url"] == first

    hook = make_account(workspace, "discord_webhook")
    text = 'Launch day, at last; see "notes"\\nsoon\nSecond line ' + "long words " * 20
    with time_machine.travel(datetime(2027, 1, 3, 12, tzinfo=UTC), tick=False):
        scheduled = create_publication(owner_client, workspace, [str(hook.pk)], text=text)
        ok(
            owner_client.post(
                f"{API}/publications/{scheduled['id']}/schedule",
                {"scheduled_at": "2027-01-04T09:30:00+01:00"},
                format="json",
            )
        )
        create_publication(owner_client, workspace, [str(hook.pk)], text="a draft")
        response = api_client.get(first.removeprefix("http://testserver"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    assert response["Cache-Control"] == "no-store"
    components = _parse(response.content)
    calendar = components[-1]
    assert _one(calendar, "VERSION") == "2.0"
    assert _one(calendar, "PRODID")
    events = [c for c in components if c["_kind"][0][1] == "VEVENT"]
    assert len(events) == 1  # the draft is not in the calendar
    event = events[0]
    assert _one(event, "UID") == f"{scheduled['id']}@herald"
    assert _one(event, "DTSTART") == "20270104T083000Z"
    assert _one(event, "DTSTAMP") == "20270103T120000Z"
    summary = _unescape(_one(event, "SUMMARY"))
    assert summary.startswith('Launch day, at last; see "notes"\\nsoon Second line long words')
    assert len(summary) <= 80
    assert summary.endswith("…")
    assert _one(event, "URL") == f"http://testserver{API}/publications/{scheduled['id']}"

    # Rotating: a new URL; the old one is gone.
    second = ok(owner_client.post(url, format="json"))["url"]
    assert second != first
    assert api_client.get(first.removeprefix("http://testserver")).status_code == 404
    assert api_client.get(second.removeprefix("http://testserver")).status_code == 200
    assert api_client.get("/feeds/calendar/" + "0" * 32 + ".ics").status_code == 404
