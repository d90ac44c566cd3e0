"""``herald instance …``: profiles, health probes and the support snapshot."""

from __future__ import annotations

from pathlib import Path

import click

from cli.client import HeraldClient, ProbeResult, normalize_instance
from cli.config import check_profile_name
from cli.diagnostics import collect_diagnostics, render_diagnostics
from cli.errors import EXIT_FAILED
from cli.health import health_report
from cli.main import current, global_options
from cli.output import echo, echo_table, emit_json, fields


@click.group("instance")
def group() -> None:
    """Saved instances (profiles), health and diagnostics."""


@group.command("add")
@click.argument("name")
@click.argument("url")
@global_options
def add(name: str, url: str) -> None:
    """Save instance URL as profile NAME (selected when it is the first)."""
    hx = current()
    check_profile_name(name)
    instance = normalize_instance(url)
    first = not hx.store.profiles()
    hx.store.save_profile(name, instance)
    if hx.json:
        emit_json(
            {"profile": name, "instance": instance, "selected": hx.store.current_profile() == name}
        )
        return
    echo(f"Saved profile {name!r}: {instance}")
    if first:
        echo(f"Selected {name!r} (the first profile).")
    else:
        echo(f"Select it with: herald instance use {name}")


@group.command("use")
@click.argument("name")
@global_options
def use(name: str) -> None:
    """Select the saved profile NAME for later commands."""
    hx = current()
    profile = hx.store.select(name)
    if hx.json:
        emit_json({"profile": profile.name, "instance": profile.instance, "selected": True})
        return
    echo(f"Using profile {profile.name!r}: {profile.instance}")


@group.command("list")
@global_options
def list_profiles() -> None:
    """List saved profiles (* marks the selected one)."""
    hx = current()
    profiles = hx.store.profiles()
    selected = hx.store.current_profile()
    if hx.json:
        emit_json(
            {
                "current_profile": selected,
                "profiles": [
                    {
                        "name": p.name,
                        "instance": p.instance,
                        "workspace": p.workspace,
                        "has_token": hx.store.token(p.name) is not None,
                    }
                    for p in profiles.values()
                ],
            }
        )
        return
    rows = [
        (
            "*" if p.name == selected else " ",
            p.name,
            p.instance,
            p.workspace,
            "saved" if hx.store.token(p.name) else "none",
        )
        for p in sorted(profiles.values(), key=lambda p: p.name)
    ]
    echo_table(
        ["", "PROFILE", "INSTANCE", "WORKSPACE", "TOKEN"],
        rows,
        "No saved profiles; add one with `herald instance add NAME URL`.",
    )


@group.command("remove")
@click.argument("name")
@global_options
def remove(name: str) -> None:
    """Forget profile NAME and its saved token."""
    hx = current()
    hx.store.remove(name)
    if hx.json:
        emit_json({"profile": name, "removed": True})
        return
    echo(f"Removed profile {name!r} and its saved token.")


@group.command("health")
@global_options
def health() -> None:
    """Check liveness and readiness; exit 1 when either probe fails."""
    hx = current()
    client = HeraldClient(hx.require_instance())
    liveness, readiness = client.health(), client.ready()
    report = health_report(client.instance, liveness, readiness)
    problems = [f"{probe.name}: {probe.error}" for probe in (liveness, readiness) if not probe.ok]
    if hx.json:
        emit_json(report)
        for problem in problems:
            echo(f"herald: {problem}", err=True)
    else:
        pairs = [
            ("Instance", report["instance"]),
            ("Liveness", _probe_text(report["liveness"], liveness)),
            ("Readiness", _probe_text(report["readiness"], readiness)),
            ("Database", report["database"]),
        ]
        if "storage" in report:
            pairs.append(("Storage", report["storage"]))
        echo(fields(pairs))
    if problems:
        raise click.exceptions.Exit(EXIT_FAILED)


def _probe_text(value: str, probe: ProbeResult) -> str:
    return value if probe.ok else f"{value} ({probe.error})"


@group.command("diagnostics")
@click.option(
    "--deployment",
    metavar="METHOD",
    help="How the instance is deployed (recorded as given, e.g. docker-compose).",
)
@click.option("--provider", metavar="PROVIDER", help="Also report this provider's readiness.")
@click.option(
    "--logs-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Add a redacted tail (last 100 lines) of this log file.",
)
@global_options
def diagnostics(deployment: str | None, provider: str | None, logs_file: Path | None) -> None:
    """A support snapshot; never prints a token or a secret."""
    hx = current()
    report = collect_diagnostics(hx, deployment=deployment, provider=provider, logs_file=logs_file)
    if hx.json:
        emit_json(report)
    else:
        echo(render_diagnostics(report))
