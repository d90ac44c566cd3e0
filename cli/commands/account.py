"""``herald account list|providers|connect|choose|disconnect``.

``connect`` sends credential fields (``--field KEY=VALUE``, or ``--field KEY`` to be asked for the
value with hidden input) to ``POST /accounts/connect``. A credential provider answers with the
account at once. An OAuth provider answers with an ``authorization_url``, Herald's start page:
the command prints it, opens a browser where there is one, and polls ``GET /accounts`` until the
account appears (or ``--timeout`` passes). The person confirms on that page, which binds the
connect to their browser: only that browser can complete it at the callback. Field values are secrets: they are never printed, and every one but a few
public ones (a feed's title, a handle) is redacted from anything the command prints.
"""

from __future__ import annotations

import os
import re
import sys
import time
import webbrowser
from typing import Any

import click

from cli.client import HeraldClient, UnexpectedResponse
from cli.context import HeraldContext
from cli.errors import EXIT_FAILED, UsageProblem
from cli.main import current, global_options, polling_options
from cli.output import clear_line, echo, echo_table, emit_json, fields, printable, shorten
from cli.redact import redact, remember_secret

# Field values that name or describe an account rather than unlock it; every other value is
# treated as a secret (redacted wherever the CLI prints it).
PUBLIC_FIELDS = frozenset(
    {"title", "description", "handle", "username", "chat_id", "name", "display_name"}
)
# Providers whose login may reach several accounts (Facebook Pages and the Instagram accounts
# linked to them): the callback answers a choice instead of an account.
CHOICE_PROVIDERS = frozenset({"facebook", "instagram"})
_FIELD_NAME = re.compile(r"\A[A-Za-z][A-Za-z0-9_]{0,63}\Z")

_sleep = time.sleep  # the pause between polls (tests replace it)
_monotonic = time.monotonic


@click.group("account")
def group() -> None:
    """Connected social accounts: providers, connect, list, disconnect."""


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


# --- providers ---------------------------------------------------------------------------------


def _blockers(readiness: dict[str, Any]) -> str:
    issues = readiness.get("blockers") or readiness.get("blocking_issues") or []
    codes = [str(i.get("code")) if isinstance(i, dict) else str(i) for i in issues]
    return ", ".join(dict.fromkeys(codes))


def _connect_hint(entry: dict[str, Any]) -> str:
    capabilities = entry.get("capabilities") or {}
    names = [str(n) for n in capabilities.get("credential_fields") or []]
    parts = [f"--field {name}=…" for name in names]
    if capabilities.get("federated"):
        parts.append("--instance-url URL")
    if entry.get("connection") == "oauth2" and not parts:
        return "(browser)"
    return " ".join(parts)


@group.command("providers")
@global_options
def providers() -> None:
    """The providers accounts can be connected with, and whether each can be connected now.

    With --json, the catalogue exactly as GET /account-providers returns it.
    """
    hx = current()
    client = hx.client()
    catalogue = client.account_providers(hx.require_workspace(client))
    if hx.json:
        emit_json(catalogue)
        return
    rows = []
    for entry in catalogue.get("providers") or []:
        readiness = entry.get("readiness") or {}
        connectable = readiness.get("connectable")
        rows.append(
            (
                entry.get("provider"),
                entry.get("connection"),
                "yes" if connectable else "no" if connectable is not None else "?",
                readiness.get("state"),
                shorten(_connect_hint(entry), 44),
                shorten(_blockers(readiness), 40),
            )
        )
    echo_table(
        ["PROVIDER", "CONNECTION", "CONNECTABLE", "STATE", "CONNECT WITH", "BLOCKERS"],
        rows,
        "This instance offers no providers.",
    )


# --- connect -----------------------------------------------------------------------------------


def _interactive() -> bool:
    return sys.stdin.isatty()


def _ask(name: str) -> str:
    """The value of field ``name``: a hidden prompt on a terminal, else a line of stdin."""
    if _interactive():
        value = click.prompt(f"{name} (input hidden)", hide_input=True, err=True)
    else:
        value = sys.stdin.readline().rstrip("\r\n")
    if not str(value).strip():
        raise UsageProblem(f"No value read for field {name!r}.")
    return str(value)


def parse_fields(pairs: tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` pairs (``KEY`` alone: ask for the value). Messages never quote a value."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        name = name.strip()
        if not _FIELD_NAME.match(name):
            raise UsageProblem(
                "--field takes KEY=VALUE with KEY made of letters, digits and '_' "
                "(see `herald account providers`)."
            )
        if name in parsed:
            raise UsageProblem(f"--field {name} is given twice.")
        parsed[name] = value if separator else _ask(name)
    for name, value in parsed.items():
        if name not in PUBLIC_FIELDS:
            remember_secret(value)  # never shown, whatever prints it (errors included)
    return parsed


def _account_lines(account: dict[str, Any]) -> str:
    pairs = [
        ("ID", account.get("id")),
        ("Provider", account.get("provider")),
        ("Username", account.get("username")),
        ("Name", account.get("display_name")),
        ("Status", account.get("status")),
    ]
    if account.get("profile_url"):
        pairs.append(("Profile URL", account.get("profile_url")))
    return redact(fields([(label, "-" if v in (None, "") else v) for label, v in pairs]))


def _report_connected(account: dict[str, Any]) -> None:
    echo(f"Connected {account.get('provider')} account {account.get('id')}:")
    echo(_account_lines(account))
    echo(
        "Publish to it with: herald publication create --text TEXT "
        f"--account {account.get('id')} --publish-now --follow"
    )


def _snapshot(client: HeraldClient, workspace_id: str, provider: str) -> dict[str, str]:
    """ID → ``updated_at`` of the workspace's accounts of ``provider``."""
    return {
        str(a.get("id")): str(a.get("updated_at"))
        for a in client.pages("/accounts", workspace_id=workspace_id, provider=provider)
    }


def _browser_available() -> bool:
    """A graphical browser can be opened: macOS and Windows always, elsewhere only with a display
    (or a ``BROWSER`` command), so that no text-mode browser takes over the terminal."""
    if sys.platform in ("darwin", "win32"):
        return True
    return any(os.environ.get(name) for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"))


def _open_browser(url: str) -> bool:
    try:
        return bool(webbrowser.open(url))
    except webbrowser.Error:
        return False


class _Waiting:
    """Progress while waiting, on stderr: a live line on a terminal, else a line every 30 s."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.shown = False
        self.next_note = 30.0

    def tick(self, elapsed: float, timeout: float) -> None:
        text = f"[{elapsed:4.0f}s] waiting for the authorization (up to {timeout:.0f} s)…"
        if self.live:
            self.done()
            echo(text, err=True, nl=False)
            self.shown = True
        elif elapsed >= self.next_note:
            echo(text, err=True)
            self.next_note += 30.0

    def done(self) -> None:
        if self.shown:
            clear_line(err=True)
            self.shown = False


def wait_for_account(
    client: HeraldClient,
    workspace_id: str,
    provider: str,
    before: dict[str, str],
    *,
    interval: float,
    timeout: float,
) -> dict[str, Any] | None:
    """Poll until an account of ``provider`` appears (or an existing one is reconnected)."""
    started = _monotonic()
    progress = _Waiting()
    try:
        while True:
            accounts = list(client.pages("/accounts", workspace_id=workspace_id, provider=provider))
            new = [a for a in accounts if str(a.get("id")) not in before]
            changed = [
                a
                for a in accounts
                if before.get(str(a.get("id"))) not in (None, str(a.get("updated_at")))
            ]
            if new or changed:
                return (new or changed)[0]
            elapsed = _monotonic() - started
            if elapsed >= timeout:
                return None
            progress.tick(elapsed, timeout)
            _sleep(interval)
    finally:
        progress.done()


@group.command("connect")
@click.argument("provider")
@click.option(
    "--field",
    "field_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="A credential field (repeat); KEY alone asks for the value with hidden input.",
)
@click.option(
    "--instance-url", metavar="URL", help="The account's server (federated providers: Mastodon)."
)
@click.option(
    "--mode",
    metavar="MODE",
    help="A connection mode of the provider (instagram: instagram_login, without a Facebook Page).",
)
@click.option(
    "--browser/--no-browser",
    default=True,
    help="OAuth: open the authorization URL in a browser (only where there is a display).",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    help="OAuth: wait until the account appears (else print the URL and exit).",
)
@polling_options(
    "OAuth: seconds between polls while waiting.",
    "OAuth: stop waiting after this many seconds (exit 1).",
)
@global_options
def connect(
    provider: str,
    field_pairs: tuple[str, ...],
    instance_url: str | None,
    mode: str | None,
    browser: bool,
    wait: bool,
    interval: float,
    timeout: float,
) -> None:
    """Connect a PROVIDER account to the workspace (see `herald account providers`).

    \b
    Credential providers connect at once:
      herald account connect feed --field title="My news"
      herald account connect bluesky --field handle=me.bsky.social --field app_password
    OAuth providers print an authorization URL (Herald's page: confirm there, then authorize
    at the provider in the same browser; the link works once), open a browser where there is
    one, and wait until the account appears:
      herald account connect mastodon --instance-url https://mastodon.social
      herald account connect instagram --mode instagram_login
    """
    hx = current()
    connect_fields = parse_fields(field_pairs)
    client = hx.client()
    workspace_id = hx.require_workspace(client)
    result = client.account_connect(
        workspace_id=workspace_id,
        provider=provider,
        fields=connect_fields,
        instance_url=instance_url,
        mode=mode,
    )
    account = result.get("account")
    if isinstance(account, dict):
        _emit_connected(hx, account, result)
        return
    url = _authorization_url(client, result)
    if provider in CHOICE_PROVIDERS:  # one login offers several accounts: the person chooses
        _start_choice(hx, provider, url, result, browser=browser, timeout=timeout)
        return
    # The accounts there are before the user can authorize (the URL is not shown yet): the one
    # that appears (or is reconnected) after this is the one being connected.
    before = _snapshot(client, workspace_id, provider) if wait else {}
    # With --json, stdout carries only the final JSON document.
    echo(
        f"Authorize Herald at {provider}: open this URL, confirm on Herald's page, then "
        "authorize at the provider, all in the same browser:",
        err=hx.json,
    )
    echo(f"  {url}", err=hx.json)
    if not wait:
        _emit_started(hx, result)
        return
    _offer_browser(url, browser=browser, timeout=timeout)
    appeared = wait_for_account(
        client, workspace_id, provider, before, interval=interval, timeout=timeout
    )
    connected = _require_connected(appeared, provider, timeout)
    _emit_connected(hx, connected, {"account": connected, "authorization_url": url})


def _start_choice(
    hx: HeraldContext,
    provider: str,
    url: str,
    result: dict[str, Any],
    *,
    browser: bool,
    timeout: float,
) -> None:
    echo(
        f"Authorize Herald at {provider}: open this URL, confirm on Herald's page, then "
        "authorize in the same browser. The page you land on names a choice: connect the "
        "accounts you want with `herald account choose CHOICE_ID`.",
        err=hx.json,
    )
    echo(f"  {url}", err=hx.json)
    _offer_browser(url, browser=browser, timeout=timeout)
    _emit_started(hx, result)


def _require_connected(
    connected: dict[str, Any] | None, provider: str, timeout: float
) -> dict[str, Any]:
    """The account that appeared; exit 1 when none did in time."""
    if connected is None:
        echo(
            f"herald: no {printable(provider)} account appeared within {timeout:.0f} s; finish "
            "the authorization, then check with `herald account list` (or connect again).",
            err=True,
        )
        raise click.exceptions.Exit(EXIT_FAILED)
    return connected


def _emit_connected(hx: HeraldContext, account: dict[str, Any], document: dict[str, Any]) -> None:
    """``document`` with --json, else the account's lines."""
    if hx.json:
        emit_json(document)
    else:
        _report_connected(account)


def _emit_started(hx: HeraldContext, result: dict[str, Any]) -> None:
    """An authorization handed to the user without waiting for it (--no-wait)."""
    if hx.json:
        emit_json(result)
    else:
        echo("Then check with: herald account list")


def _authorization_url(client: HeraldClient, result: dict[str, Any]) -> str:
    """The OAuth authorization URL of a connect answer without an account (never another
    scheme: it is opened in a browser)."""
    url = result.get("authorization_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise UnexpectedResponse(
            f"{client.instance} answered the connect with neither an account nor an "
            "authorization URL."
        )
    return url


def _offer_browser(url: str, *, browser: bool, timeout: float) -> None:
    if browser and _browser_available() and _open_browser(url):
        echo("Opened it in your browser.", err=True)
    else:
        echo("Open it in a browser; this command waits for you.", err=True)
    echo("Do not share this link: whoever confirms it connects their own account here.", err=True)
    echo(f"Waiting up to {timeout:.0f} s for the account (Ctrl-C stops waiting)…", err=True)


# --- choose ------------------------------------------------------------------------------------


@group.command("choose")
@click.argument("choice_id")
@click.option(
    "--candidate", "keys", multiple=True, metavar="KEY", help="A candidate's key (repeat)."
)
@click.option("--all", "all_", is_flag=True, help="Every candidate this server can connect.")
@global_options
def choose(choice_id: str, keys: tuple[str, ...], all_: bool) -> None:
    """Connect accounts from a login that reached several (Facebook Pages and their Instagram
    accounts). Without --candidate or --all, list the candidates.

    \b
      herald account choose 6f1c2a8e-...
      herald account choose 6f1c2a8e-... --candidate facebook:1010000001
    """
    hx = current()
    client = hx.client()
    choice = client.connection_choice(choice_id)
    candidates = [c for c in choice.get("candidates") or [] if isinstance(c, dict)]
    if not keys and not all_:
        if hx.json:
            emit_json(choice)
            return
        rows = [
            (c.get("key"), c.get("label"), "yes" if c.get("available") else "no")
            for c in candidates
        ]
        echo_table(("KEY", "ACCOUNT", "AVAILABLE"), rows, "No candidates.")
        echo(f"Connect with: herald account choose {choice_id} --candidate KEY", err=True)
        return
    chosen = [str(c.get("key")) for c in candidates if c.get("available")] if all_ else list(keys)
    if not chosen:
        raise UsageProblem("No candidate this server can connect.")
    result = client.connection_choice_apply(choice_id, chosen)
    accounts = [a for a in result.get("accounts") or [] if isinstance(a, dict)]
    if hx.json:
        emit_json(result)
        return
    for account in accounts:
        _report_connected(account)


# --- disconnect --------------------------------------------------------------------------------


@group.command("disconnect")
@click.argument("account_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@global_options
def disconnect(account_id: str, yes: bool) -> None:
    """Disconnect ACCOUNT_ID (asks first, unless --yes).

    Its pending deliveries stop, and a Herald feed stops being served. Exits 1 when the prompt is
    declined.
    """
    hx = current()
    client = hx.client()
    account = client.account(account_id)
    who = f"{account.get('provider')} @{account.get('username')} ({account.get('id')})"
    if not yes:
        try:
            agreed = click.confirm(printable(redact(f"Disconnect {who}?")), default=False, err=True)
        except click.Abort:  # end of input: no answer is no
            agreed = False
        if not agreed:
            echo("Nothing disconnected.", err=True)
            raise click.exceptions.Exit(EXIT_FAILED)
    client.account_disconnect(account_id)
    if hx.json:
        emit_json(
            {"id": account.get("id"), "provider": account.get("provider"), "disconnected": True}
        )
        return
    echo(redact(f"Disconnected {who}."))
