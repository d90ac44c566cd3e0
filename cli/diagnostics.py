"""``herald instance diagnostics``: a support snapshot.

Contents: CLI version, OS and architecture, profile, instance URL, configuration paths, liveness,
readiness and database status, token presence and source, the authenticated user and workspace
counts; with a token, account-provider readiness counts, the requested provider's status and the
active workspace's plan and usage; ``--deployment`` as given; with ``--logs-file``, a redacted tail
of the last 100 log lines. A token or secret is never printed: everything that comes from the
server, an error or the log file passes through :func:`cli.redact.redact`.

Each part is collected on its own: a failing part is reported in ``problems`` and the snapshot
still comes out, because it is most needed when something is broken.
"""

from __future__ import annotations

import os
import platform
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli import cli_version
from cli.client import HeraldClient
from cli.config import file_mode
from cli.context import HeraldContext
from cli.errors import HeraldError, NotFound
from cli.health import health_report
from cli.output import fields
from cli.redact import redact

LOG_TAIL_LINES = 100
LOG_TAIL_MAX_BYTES = 4 * 1024 * 1024  # a file of a few enormous lines is not read whole
LOG_LINE_MAX_CHARACTERS = 2000
_BLOCK = 64 * 1024
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


def tail_lines(path: Path, count: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``count`` lines of ``path``, read backwards (a large log is not read whole)."""
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        position = handle.tell()
        data = b""
        while position > 0 and data.count(b"\n") <= count and len(data) < LOG_TAIL_MAX_BYTES:
            step = min(_BLOCK, position)
            position -= step
            handle.seek(position)
            data = handle.read(step) + data
    if position > 0:
        # The first line read is only the end of a line: drop it, since the part of a secret
        # that would be left could no longer be recognized.
        newline = data.find(b"\n")
        data = data[newline + 1 :] if newline >= 0 else b""
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[-count:]


def _clean(text: str) -> str:
    """Redacted, without terminal escapes or control characters."""
    return redact(_CONTROL.sub("", text))


def _file(path: Path) -> dict[str, Any]:
    mode = file_mode(path)
    return {
        "path": str(path),
        "exists": mode is not None,
        "mode": None if mode is None else f"{mode:04o}",
    }


def collect_diagnostics(
    hx: HeraldContext,
    *,
    deployment: str | None = None,
    provider: str | None = None,
    logs_file: Path | None = None,
) -> dict[str, Any]:
    report = _local_report(hx, deployment)
    problems = _file_mode_problems(report["config"])
    try:
        profile = hx.profile_setting
        report["profile"] = {"name": profile.value, "source": profile.source}
        instance = hx.instance_setting
        report["instance"] = {"url": instance.value, "source": instance.source}
        token = hx.token_setting
        workspace = hx.workspace_setting
    except HeraldError as exc:
        report.setdefault("profile", None)
        report.setdefault("instance", {"url": None, "source": "not set"})
        problems.append(str(exc))
        _finish(report, problems, logs_file)
        return report

    report["token"] = {"present": token.is_set, "source": token.source}
    if instance.value is None:
        problems.append("No instance: pass --instance URL, set HERALD_INSTANCE or add a profile.")
        _finish(report, problems, logs_file)
        return report

    client = HeraldClient(instance.value, token.value)
    reachable = _probe(client, report, problems)
    if token.is_set and reachable:
        _authenticated(client, report, problems, workspace.value, workspace.source, provider)
    elif provider:
        report["provider"] = {"name": provider, "status": "unknown (needs a token)"}
    _finish(report, problems, logs_file)
    return report


def _local_report(hx: HeraldContext, deployment: str | None) -> dict[str, Any]:
    """What the machine itself tells: versions, OS, the deployment as given, the config files."""
    return {
        "generated_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "cli_version": cli_version(),
        "python_version": platform.python_version(),
        "os": {
            "system": platform.system(),
            "release": platform.release(),
            "architecture": platform.machine(),
        },
        "deployment": deployment,
        "config": {
            "directory": str(hx.store.directory),
            "profiles_file": _file(hx.store.config_path),
            "credentials_file": _file(hx.store.credentials_path),
        },
    }


def _file_mode_problems(config: dict[str, Any]) -> list[str]:
    """A profiles or credentials file that others may read."""
    problems: list[str] = []
    for entry in ("profiles_file", "credentials_file"):
        mode = config[entry]["mode"]
        if mode is not None and int(mode, 8) & 0o077:
            problems.append(f"{config[entry]['path']} has mode {mode}; it should be 0600.")
    return problems


def _probe(client: HeraldClient, report: dict[str, Any], problems: list[str]) -> bool:
    """Liveness, readiness and the running version into ``report``; whether it answered."""
    liveness, readiness = client.health(), client.ready()
    report["probes"] = health_report(client.instance, liveness, readiness)
    report["server_version"] = _server_version(liveness.body if liveness.ok else {})
    problems.extend(
        f"{probe.name}: {probe.error}" for probe in (liveness, readiness) if not probe.ok
    )
    return liveness.reachable


def _server_version(liveness: dict[str, Any]) -> dict[str, str] | None:
    """The release and source revision the instance reports on its liveness probe (None from
    a release before 0.2.0, which did not report them)."""
    running = liveness.get("version")
    if not isinstance(running, dict):
        return None
    return {
        "release": _clean(str(running.get("release", "unknown")))[:40],
        "source_revision": _clean(str(running.get("source_revision", "unknown")))[:64],
    }


def _authenticated(
    client: HeraldClient,
    report: dict[str, Any],
    problems: list[str],
    workspace_id: str | None,
    workspace_source: str,
    provider: str | None,
) -> None:
    try:
        me = client.me()
    except HeraldError as exc:
        report["token"]["accepted"] = False
        problems.append(f"API token refused: {exc}")
        return
    _identity(report, me)
    workspaces = me.get("workspaces") or []
    if workspace_id is None and len(workspaces) == 1:
        # Like every other command: the only workspace the token reaches is the active one.
        workspace_id = str(workspaces[0].get("id"))
        workspace_source = "the only workspace the token reaches"
    if workspace_id is not None:
        names = {str(w.get("id")): w.get("name") for w in workspaces}
        entry = {"id": workspace_id, "source": workspace_source, "name": names.get(workspace_id)}
        report["workspace"] = _workspace(client, entry, problems)
    catalogue_workspace = workspace_id or (str(workspaces[0]["id"]) if workspaces else None)
    if catalogue_workspace is not None:
        _account_providers(client, report, problems, catalogue_workspace, provider)


def _identity(report: dict[str, Any], me: dict[str, Any]) -> None:
    """The accepted token, its user and what they reach, from ``GET /me``."""
    token_info = me.get("token") or {}
    report["token"].update(
        {
            "accepted": True,
            "name": token_info.get("name"),
            "permissions": token_info.get("permissions"),
            "workspace_id": token_info.get("workspace_id"),
            "expires_at": token_info.get("expires_at"),
        }
    )
    user = me.get("user") or {}
    report["user"] = {"id": user.get("id"), "is_instance_admin": user.get("is_instance_admin")}
    report["counts"] = {
        "organizations": len(me.get("organizations") or []),
        "workspaces": len(me.get("workspaces") or []),
    }


def _workspace(client: HeraldClient, entry: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The active workspace ``entry`` with its plan, limits and usage (what the instance would
    refuse)."""
    workspace_id = entry["id"]
    try:
        usage = client.workspace_usage(workspace_id)
    except HeraldError as exc:
        problems.append(f"workspace {workspace_id}: {exc}")
        return entry
    entry.update(
        {
            "plan": usage.get("plan"),
            "limits": usage.get("limits"),
            "usage": usage.get("usage"),
            "period_start": usage.get("period_start"),
            "period_end": usage.get("period_end"),
        }
    )
    return entry


def _account_providers(
    client: HeraldClient,
    report: dict[str, Any],
    problems: list[str],
    workspace_id: str,
    provider: str | None,
) -> None:
    """Counts of the account providers by readiness state, and the asked provider's status."""
    try:
        catalogue = client.account_providers(workspace_id).get("providers") or []
    except HeraldError as exc:
        problems.append(f"account providers: {exc}")
        return
    states = Counter(_state(entry) for entry in catalogue)
    report["account_providers"] = {
        "workspace_id": workspace_id,
        "total": len(catalogue),
        "states": dict(sorted(states.items())),
    }
    if provider:
        report["provider"] = _provider_status(client, catalogue, workspace_id, provider, problems)


def _state(entry: dict[str, Any]) -> str:
    readiness = entry.get("readiness")
    source = readiness if isinstance(readiness, dict) else entry
    return str(source.get("state") or "unknown")


def _blockers(entry: dict[str, Any]) -> list[dict[str, str]]:
    readiness = entry.get("readiness")
    source = readiness if isinstance(readiness, dict) else entry
    found = source.get("blockers") or source.get("blocking_issues") or []
    return [
        {"code": str(b.get("code", "")), "detail": _clean(str(b.get("detail", "")))}
        for b in found
        if isinstance(b, dict)
    ]


def _provider_status(
    client: HeraldClient,
    catalogue: list[dict[str, Any]],
    workspace_id: str,
    provider: str,
    problems: list[str],
) -> dict[str, Any]:
    entry = next((e for e in catalogue if e.get("provider") == provider), None)
    if entry is None:
        return {
            "name": provider,
            "offered": False,
            "state": "unsupported",
            "detail": "This instance offers no such provider.",
        }
    status: dict[str, Any] = {
        "name": provider,
        "offered": True,
        "display_name": entry.get("display_name"),
        "connection": entry.get("connection"),
        "state": _state(entry),
        "blockers": _blockers(entry),
    }
    try:
        projection = client.provider_readiness(workspace_id).get("providers") or []
    except NotFound:
        return status  # an instance without the readiness projection endpoint
    except HeraldError as exc:
        problems.append(f"provider readiness: {exc}")
        return status
    match = next((p for p in projection if p.get("provider") == provider), None)
    if match is not None:
        status.update(
            {
                "state": str(match.get("state", status["state"])),
                "connectable": match.get("connectable"),
                "connected_accounts": match.get("connected_accounts"),
                "blockers": _blockers(match) or status["blockers"],
            }
        )
    return status


def redacted_tail(path: Path, count: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``count`` lines of ``path``, without control characters, redacted as one text
    (so that a secret spanning lines, such as a PEM private key, is hidden whole)."""
    text = "\n".join(_CONTROL.sub("", line) for line in tail_lines(path, count))
    lines = redact(text).split("\n") if text else []
    # Shortened only after redaction, so that no secret is cut where its pattern would miss it.
    return [_shorten(line, LOG_LINE_MAX_CHARACTERS) for line in lines]


def _shorten(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + f"… ({len(line) - limit} more characters)"


def _redact_all(value: Any) -> Any:
    """Every string of the report redacted: nothing from the server or the environment can
    carry a secret into the output, whichever part it landed in."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redact_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_all(item) for item in value]
    return value


def _finish(report: dict[str, Any], problems: list[str], logs_file: Path | None) -> None:
    if logs_file is not None:
        try:
            report["logs"] = {"file": str(logs_file), "lines": redacted_tail(logs_file)}
        except OSError as exc:
            report["logs"] = {"file": str(logs_file), "lines": []}
            problems.append(f"logs file {logs_file}: {exc.strerror or type(exc).__name__}")
    report["problems"] = [_clean(problem) for problem in problems]
    redacted = _redact_all(report)
    report.clear()
    report.update(redacted)


# --- text rendering ----------------------------------------------------------------------------


def _mode_text(entry: dict[str, Any]) -> str:
    if not entry["exists"]:
        return f"{entry['path']} (not created yet)"
    return f"{entry['path']} (mode {entry['mode']})"


def render_diagnostics(report: dict[str, Any]) -> str:
    pairs = [
        *_system_pairs(report),
        *_probe_pairs(report),
        *_token_pairs(report.get("token")),
        *_user_pairs(report),
        *_workspace_pairs(report.get("workspace")),
        *_provider_pairs(report),
    ]
    lines = [f"Herald diagnostics, {report['generated_at']}", fields(pairs)]
    if report["problems"]:
        lines.append("Problems:")
        lines.extend(f"  - {problem}" for problem in report["problems"])
    if logs := report.get("logs"):
        lines.append(f"Log tail: {logs['file']} (last {len(logs['lines'])} lines, redacted)")
        lines.extend(f"  {line}" for line in logs["lines"])
    return "\n".join(lines)


def _system_pairs(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """The CLI, the machine, the deployment, the profile and where the CLI keeps its files."""
    os_info = report["os"]
    profile = report.get("profile") or {}
    instance = report.get("instance") or {}
    config = report["config"]
    return [
        ("CLI version", f"{report['cli_version']} (Python {report['python_version']})"),
        (
            "OS / architecture",
            f"{os_info['system']} {os_info['release']} / {os_info['architecture']}",
        ),
        ("Deployment", report.get("deployment") or "not given (--deployment)"),
        ("Profile", f"{profile.get('name') or 'none'} ({profile.get('source', 'not set')})"),
        ("Instance URL", f"{instance.get('url') or 'none'} ({instance.get('source', 'not set')})"),
        ("Config directory", config["directory"]),
        ("Profiles file", _mode_text(config["profiles_file"])),
        ("Credentials file", _mode_text(config["credentials_file"])),
    ]


def _probe_pairs(report: dict[str, Any]) -> list[tuple[str, Any]]:
    probes = report.get("probes")
    if not probes:
        return []
    running = report.get("server_version")
    pairs: list[tuple[str, Any]] = [
        (
            "Herald version",
            f"{running['release']} (source {running['source_revision']})"
            if running
            else "not reported (a release before 0.2.0, or the instance is down)",
        ),
        ("Liveness", probes["liveness"]),
        ("Readiness", probes["readiness"]),
        ("Database", probes["database"]),
    ]
    if "storage" in probes:
        pairs.append(("Storage", probes["storage"]))
    return pairs


def _token_pairs(token: dict[str, Any] | None) -> list[tuple[str, Any]]:
    if token is None:
        return []
    text = f"present ({token['source']})" if token["present"] else "absent"
    if token.get("accepted") is True:
        text += ", accepted"
    elif token.get("accepted") is False:
        text += ", refused by the instance"
    pairs: list[tuple[str, Any]] = [("Token", text)]
    if token.get("accepted"):
        scope = token.get("workspace_id") or "all of the user's workspaces"
        pairs.append(
            (
                "Token scope",
                f"{', '.join(token.get('permissions') or [])}; {scope}; "
                f"expires {token.get('expires_at') or 'never'}",
            )
        )
    return pairs


def _user_pairs(report: dict[str, Any]) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    if user := report.get("user"):
        admin = "yes" if user.get("is_instance_admin") else "no"
        pairs.append(("User", f"{user.get('id')} (instance administrator: {admin})"))
    if counts := report.get("counts"):
        pairs.append(("Organizations", counts["organizations"]))
        pairs.append(("Workspaces", counts["workspaces"]))
    return pairs


def _workspace_pairs(workspace: dict[str, Any] | None) -> list[tuple[str, Any]]:
    if not workspace:
        return []
    name = f" {workspace['name']!r}" if workspace.get("name") else ""
    pairs: list[tuple[str, Any]] = [
        ("Active workspace", f"{workspace['id']}{name} ({workspace['source']})")
    ]
    if plan := workspace.get("plan"):
        pairs.append(("Plan", f"{plan.get('name')} ({plan.get('code')})"))
    if (usage := workspace.get("usage")) is not None:
        limits = workspace.get("limits") or {}
        used = ", ".join(
            f"{metric} {count}/{limits.get(metric) if limits.get(metric) is not None else '∞'}"
            for metric, count in sorted(usage.items())
        )
        period = f"({workspace.get('period_start')} to {workspace.get('period_end')})"
        pairs.append(("Usage", f"{used or 'none'} {period}"))
    return pairs


def _provider_pairs(report: dict[str, Any]) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    if providers := report.get("account_providers"):
        states = ", ".join(f"{state} {count}" for state, count in providers["states"].items())
        pairs.append(
            (
                "Account providers",
                f"{providers['total']} ({states}) in workspace {providers['workspace_id']}",
            )
        )
    if provider := report.get("provider"):
        text = str(provider.get("state") or provider.get("status"))
        if provider.get("connected_accounts") is not None:
            text += f"; connected accounts {_count(provider['connected_accounts'])}"
        blockers = provider.get("blockers") or []
        if blockers:
            text += "; blockers: " + "; ".join(f"{b['code']} ({b['detail']})" for b in blockers)
        pairs.append((f"Provider {provider['name']}", text))
    return pairs


def _count(value: Any) -> Any:
    return len(value) if isinstance(value, list) else value
