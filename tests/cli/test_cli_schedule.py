"""``herald schedule show|set`` and ``herald publication queue`` against a live instance."""

from __future__ import annotations

from typing import Any

import pytest

from cli.commands.schedule import parse_slot
from cli.errors import UsageProblem
from tests.cli_support import (
    Cli,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
    json_of,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_parse_slot() -> None:
    assert parse_slot("Mon 09:30") == {"weekday": 0, "time": "09:30", "account_id": None}
    assert parse_slot("sun 23:59@abc") == {"weekday": 6, "time": "23:59", "account_id": "abc"}
    for bad in ("monday 09:30", "xyz 09:30", "mon 9:30", "mon"):
        with pytest.raises(UsageProblem):
            parse_slot(bad)


def test_schedule_set_show_and_queue(
    cli: Cli, url: str, token: str, workspace: Any, owner_client: Any
) -> None:
    from tests.publishing_support import create_publication, make_account

    hook = make_account(workspace, "discord_webhook")
    base = ["--instance", url, "--token", token]
    set_ = cli(
        *base,
        "schedule",
        "set",
        "--timezone",
        "Europe/Paris",
        "--slot",
        "mon 09:30",
        "--slot",
        f"thu 17:00@{hook.pk}",
    )
    assert set_.exit_code == 0, set_.output
    assert "Time zone: Europe/Paris" in set_.stdout
    assert "mon" in set_.stdout
    assert "every account" in set_.stdout

    shown = cli(*base, "schedule", "show", "--json")
    assert shown.exit_code == 0, shown.output
    document = json_of(shown)
    assert [s["time"] for s in document["slots"]] == ["09:30", "17:00"]
    next_free = document["next_slots"][0]["next_free"]
    assert len(next_free) == 3

    draft = create_publication(owner_client, workspace, [str(hook.pk)], text="Queued")
    queued = cli(*base, "publication", "queue", draft["id"], "--expected-revision", "1", "--json")
    assert queued.exit_code == 0, queued.output
    assert json_of(queued)["scheduled_at"] == next_free[0]

    refused = cli(*base, "schedule", "set", "--timezone", "Mars/Olympus", "--slot", "mon 09:30")
    assert refused.exit_code != 0
    assert "body.timezone" in refused.stderr
    bad_slot = cli(*base, "schedule", "set", "--timezone", "UTC", "--slot", "someday 09:30")
    assert bad_slot.exit_code == 2
    assert "Not a slot" in bad_slot.stderr
