"""The CLI never writes a server's control characters to a terminal.

A stand-in server (tests/cli_support.LeakyInstance, a real HTTP server on 127.0.0.1) answers every
route the CLI reads with strings full of terminal escapes: OSC 52 (clipboard write), OSC 8 (a
link), CSI (clear screen), BEL, CR, NUL, DEL and C1 CSI (U+009B). Every human-readable output
escapes them; ``--json`` round-trips them exactly.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from cli.output import json_text, printable
from tests.cli_support import (
    Cli,
    LeakyInstance,
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
)

HOSTILE = (
    "evil\x1b]52;c;aGVsbG8=\x07 \x1b]8;;https://phish.example/\x1b\\link\x1b]8;;\x1b\\"
    " \x1b[2J\x1b[31mred \x9b31m c1 \x07bell \x7fdel \x00nul \rcr\x85nel"
    # Format characters and separators: a bidi override, isolates, zero-width characters, the
    # BOM, line and paragraph separators, a tag character (outside the BMP).
    " \u202egnp.exe \u2066iso\u2069 zero\u200bwidth\u200d \ufeffbom \u2028ls\u2029ps \U000e0041tag"
)
# What must never reach a terminal raw: C0 (but newline and tab), DEL, C1, and the format and
# separator characters above.
RAW_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
TOKEN = "hrld_0a1b2c3d_" + "ControlCharsToken" * 2 + "abcdefghijk"
PROBLEM = {"Content-Type": "application/problem+json"}


def _destination(status: str) -> dict[str, Any]:
    return {
        "id": "d1",
        "provider": HOSTILE,
        "username": HOSTILE,
        "status": status,
        "attempts": 1,
        "action": HOSTILE,
        "error_message": HOSTILE,
        "external_url": HOSTILE,
        "next_attempt_at": HOSTILE,
        "readiness": {"blockers": [{"detail": HOSTILE}]},
    }


PUBLICATION = {
    "id": "p1",
    "status": HOSTILE,
    "scheduled_at": HOSTILE,
    "revision": 1,
    "text": HOSTILE,
    "destinations": [_destination("failed")],
}
ME = {
    "user": {"id": "u1", "email": HOSTILE},
    "token": {
        "name": HOSTILE,
        "permissions": [HOSTILE],
        "workspace_id": "w1",
        "expires_at": HOSTILE,
    },
    "workspaces": [{"id": "w1", "name": HOSTILE}],
}
WORKSPACE = {
    "id": "w1",
    "name": HOSTILE,
    "role": HOSTILE,
    "plan": {"name": HOSTILE},
    "member_count": 1,
}
ACCOUNTS = {
    "items": [
        {
            "id": "a1",
            "provider": HOSTILE,
            "username": HOSTILE,
            "status": HOSTILE,
            "status_reason": HOSTILE,
        }
    ],
    "next_cursor": HOSTILE,
}
ACCOUNT = {
    **ACCOUNTS["items"][0],  # type: ignore[index]
    "display_name": HOSTILE,
    "profile_url": HOSTILE,
}
CONNECTED = {"account": ACCOUNT, "authorization_url": None}
READINESS = {
    "providers": [
        {
            "provider": HOSTILE,
            "state": HOSTILE,
            "connected_accounts": [HOSTILE],
            "blocking_issues": [{"code": HOSTILE}],
            "next_action": HOSTILE,
        }
    ]
}
PUBLICATIONS = {"items": [PUBLICATION], "next_cursor": HOSTILE}
ROUTES: dict[str, tuple[int, dict[str, str], Any]] = {
    "GET /api/v1/health": (200, {}, {"status": HOSTILE}),
    "GET /api/v1/ready": (
        503,
        PROBLEM,
        {"title": HOSTILE, "status": 503, "detail": HOSTILE, "failing": [HOSTILE]},
    ),
    "GET /api/v1/me": (200, {}, ME),
    "GET /api/v1/workspaces": (200, {}, {"items": [WORKSPACE], "next_cursor": None}),
    "GET /api/v1/workspaces/w1": (200, {}, WORKSPACE),
    "GET /api/v1/workspaces/w1/usage": (
        200,
        {},
        {
            "plan": {"code": HOSTILE, "name": HOSTILE},
            "limits": {HOSTILE: 1},
            "usage": {HOSTILE: 1},
            "period_start": HOSTILE,
            "period_end": HOSTILE,
        },
    ),
    "GET /api/v1/accounts": (200, {}, ACCOUNTS),
    "GET /api/v1/account-providers": (
        200,
        {},
        {
            "providers": [
                {
                    "provider": "mastodon",
                    "display_name": HOSTILE,
                    "connection": HOSTILE,
                    "readiness": {
                        "state": HOSTILE,
                        "blockers": [{"code": HOSTILE, "detail": HOSTILE}],
                    },
                }
            ]
        },
    ),
    "GET /api/v1/provider-readiness": (200, {}, READINESS),
    "POST /api/v1/accounts/connect": (201, {}, CONNECTED),
    "GET /api/v1/accounts/a1": (200, {}, ACCOUNT),
    "DELETE /api/v1/accounts/a1": (204, {}, b""),
    "GET /api/v1/publications": (200, {}, PUBLICATIONS),
    "POST /api/v1/publications": (201, {}, PUBLICATION),
    "GET /api/v1/publications/p1": (200, {}, PUBLICATION),
    "POST /api/v1/publications/p1/schedule": (200, {}, PUBLICATION),
    "POST /api/v1/publications/p1/publish-now": (200, {}, PUBLICATION),
    # Problems whose detail, title and errors[] carry the escapes.
    "POST /api/v1/publications/bad/publish-now": (
        409,
        PROBLEM,
        {"title": HOSTILE, "status": 409, "detail": HOSTILE, "code": HOSTILE},
    ),
    "POST /api/v1/publications/bad/schedule": (
        422,
        PROBLEM,
        {
            "title": HOSTILE,
            "status": 422,
            "detail": HOSTILE,
            "code": "invalid",
            "errors": [{"location": HOSTILE, "message": HOSTILE}],
        },
    ),
    "GET /api/v1/publications/bad": (
        500,
        PROBLEM,
        {"title": HOSTILE, "status": 500, "detail": HOSTILE},
    ),
}

# (arguments, whether --json prints the server's document to compare, which document)
COMMANDS: list[tuple[list[str], Any]] = [
    (["auth", "status"], None),
    (["workspace", "list"], {"items": [WORKSPACE]}),
    (["workspace", "use", "w1"], None),
    (["account", "list"], ACCOUNTS),
    (["provider", "readiness"], READINESS),
    (["account", "providers"], ROUTES["GET /api/v1/account-providers"][2]),
    (["account", "connect", "feed", "--field", "title=x"], CONNECTED),
    (["account", "disconnect", "a1"], None),  # the confirmation prompt (no answer: declined)
    (["account", "disconnect", "a1", "--yes"], None),
    (["publication", "list"], PUBLICATIONS),
    (["publication", "create", "--text", "hello", "--account", "a1"], PUBLICATION),
    (
        ["publication", "create", "--text", "hi", "--account", "a1", "--publish-now", "--follow"],
        PUBLICATION,
    ),
    (["publication", "schedule", "p1", "--at", "2030-01-31T09:00:00+01:00"], PUBLICATION),
    (["publication", "publish-now", "p1"], PUBLICATION),
    (["publication", "publish-now", "p1", "--follow", "--interval", "0.1"], PUBLICATION),
    (["publication", "status", "p1"], PUBLICATION),
    (["publication", "status", "p1", "--once"], PUBLICATION),
    (["publication", "publish-now", "bad"], None),
    (["publication", "schedule", "bad", "--at", "2030-01-31T09:00:00+01:00"], None),
    (["publication", "status", "bad", "--once"], None),
    (["instance", "health"], None),
    (["instance", "diagnostics"], None),
    (["instance", "diagnostics", "--provider", "mastodon"], None),
]


@pytest.fixture(scope="module")
def server() -> Any:
    with LeakyInstance(ROUTES) as leaky:
        yield leaky


def _assert_no_raw_control(result: Result, *, json_stdout: bool = False) -> None:
    streams = (
        {"stderr": result.stderr}
        if json_stdout
        else {"stdout": result.stdout, "stderr": result.stderr}
    )
    for name, text in streams.items():
        found = RAW_CONTROL.findall(text.replace("\n", "").replace("\t", ""))
        assert not found, f"{name} carries raw control characters {found!r}:\n{text!r}"


def _run(cli: Cli, server: Any, args: list[str], *extra: str) -> Result:
    base = ["--instance", server.url, "--token", TOKEN, "--workspace", "w1"]
    if args[0] == "auth" or args[:2] == ["workspace", "use"]:
        cli("instance", "add", "stand-in", server.url)
    return cli(*base, *args, *extra)


@pytest.mark.parametrize("args", [c[0] for c in COMMANDS], ids=[" ".join(c[0]) for c in COMMANDS])
def test_human_output_escapes_every_control_character(
    cli: Cli, server: Any, args: list[str]
) -> None:
    result = _run(cli, server, args)
    assert result.stdout or result.stderr
    _assert_no_raw_control(result)
    shown = result.stdout + result.stderr
    # The server's words are still there, their control characters spelled out.
    assert "\\x1b]52;c;aGVsbG8=\\x07" in shown or "\\x1b]52" in shown, shown
    assert "HOSTILE" not in shown


@pytest.mark.parametrize(
    ("args", "document"),
    [c for c in COMMANDS if c[1] is not None],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_json_output_round_trips_the_exact_strings(
    cli: Cli, server: Any, args: list[str], document: Any
) -> None:
    result = _run(cli, server, args, "--json")
    _assert_no_raw_control(result, json_stdout=True)
    assert json.loads(result.stdout) == document
    # Exact JSON that a terminal cannot misread: C0 as \\u001b (json), DEL and C1 as \\u escapes.
    assert not RAW_CONTROL.search(result.stdout.replace("\n", ""))
    assert "\\u009b31m" in result.stdout


def test_printable_escapes_c0_del_and_c1_but_keeps_layout() -> None:
    assert printable("a\x1b[2Jb\x07\x7f\x9b\x00\r") == "a\\x1b[2Jb\\x07\\x7f\\u009b\\x00\\x0d"
    assert printable("line 1\nline 2\tcell") == "line 1\nline 2\tcell"
    assert printable("naïve ünïcode ✓ 日本") == "naïve ünïcode ✓ 日本"


def test_printable_escapes_format_characters_and_separators() -> None:
    """Bidi controls reorder what a person reads ("exe.png" shown for "gnp.exe" reversed), and
    zero-width characters hide in names: every Unicode format character (category Cf) and the
    line and paragraph separators are spelled out; ordinary non-ASCII text is untouched."""
    assert printable("invoice\u202egnp.exe") == "invoice\\u202egnp.exe"
    assert printable("\u2066a\u2069\u200e\u200f\u061c") == "\\u2066a\\u2069\\u200e\\u200f\\u061c"
    assert printable("pay\u200bpal\u200c\u200d\u2060\ufeff\u00ad") == (
        "pay\\u200bpal\\u200c\\u200d\\u2060\\ufeff\\u00ad"
    )
    assert printable("a\u2028b\u2029c") == "a\\u2028b\\u2029c"
    assert printable("tag\U000e0041") == "tag\\U000e0041"
    assert printable("\ud800") == "\\ud800"  # a lone surrogate cannot even be encoded
    assert printable("Ünïcode — “quotes” 日本語 🙂 שלום مرحبا") == (
        "Ünïcode — “quotes” 日本語 🙂 שלום مرحبا"
    )


def test_json_output_spells_format_characters_as_escapes() -> None:
    document = {"name": "a\u202eb\u200b\u2028\U000e0041\x9b 日本 🙂"}
    text = json_text(document)
    assert json.loads(text) == document
    assert all(escape in text for escape in ("\\u202e", "\\u200b", "\\u2028"))
    assert "\\udb40\\udc41" in text  # the tag character as its surrogate pair
    assert "日本 🙂" in text
    assert not RAW_CONTROL.search(text.replace("\n", ""))


def test_nothing_in_cli_writes_to_the_terminal_around_the_chokepoint() -> None:
    """Every human-readable write goes through cli.output (echo, echo_table, emit_json)."""
    root = Path(__file__).resolve().parents[2] / "cli"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "output.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                owner = func.value if isinstance(func, ast.Attribute) else None
                owner_name = getattr(owner, "id", getattr(owner, "attr", ""))
                if (
                    (owner_name == "click" and name in {"echo", "secho", "echo_via_pager"})
                    or name == "print"
                    or (name == "write" and owner_name in {"stdout", "stderr"})
                ):
                    offenders.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert offenders == []
