"""``herald events tail`` against a live instance: the events in order, resuming from the cursor
it prints, and following the list as new events arrive."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from cli.commands import events as events_command
from events import selectors
from events.services.record import record_event
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selectors, "SETTLE", timedelta(0))


def lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def resume_cursor(stderr: str) -> str:
    return stderr.strip().rsplit("--after ", 1)[1]


def test_tail_prints_in_order_and_resumes_from_its_cursor(
    cli: Cli, url: str, token: str, workspace: Any
) -> None:
    base = ["--instance", url, "--token", token]
    for n in range(3):
        record_event(workspace_id=workspace.pk, type="publication.failed", data={"id": f"p{n}"})
    first = cli(*base, "events", "tail", "--json")
    assert first.exit_code == 0, first.output
    assert [e["data"]["id"] for e in lines(first.stdout)] == ["p0", "p1", "p2"]
    cursor = resume_cursor(first.stderr)

    record_event(workspace_id=workspace.pk, type="destination.held", data={"id": "d1"})
    second = cli(*base, "events", "tail", "--after", cursor)
    assert second.exit_code == 0, second.output
    assert "destination.held" in second.stdout
    assert "p0" not in second.stdout
    assert "d1" in second.stdout


def test_tail_follows_new_events(
    cli: Cli, url: str, token: str, workspace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_event(workspace_id=workspace.pk, type="publication.failed", data={"id": "before"})
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 1:  # an event arrives while the command waits
            record_event(
                workspace_id=workspace.pk, type="publication.published", data={"id": "new"}
            )
            return
        raise KeyboardInterrupt  # the person stops it

    monkeypatch.setattr(events_command.time, "sleep", sleep)
    result = cli(
        "--instance", url, "--token", token, "events", "tail", "-f", "--json", "--interval", "1"
    )
    assert result.exit_code == 0, result.output
    assert [e["data"]["id"] for e in lines(result.stdout)] == ["before", "new"]
    assert sleeps == [1.0, 1.0]
    assert "--after " in result.stderr
