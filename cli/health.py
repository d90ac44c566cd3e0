"""The health report of ``herald instance health --json`` and of diagnostics."""

from __future__ import annotations

from typing import Any

from cli.client import ProbeResult


def health_report(instance: str, liveness: ProbeResult, readiness: ProbeResult) -> dict[str, Any]:
    """``{"instance", "liveness", "readiness", "database", "storage"?}``."""
    failing = readiness.body.get("failing") if not readiness.ok else []
    failing = failing if isinstance(failing, list) else []
    if readiness.ok:
        database = str(readiness.body.get("database", "unknown"))
    elif "database" in failing:
        database = "unavailable"
    elif failing:
        database = "ok"  # the instance named only other failing dependencies
    else:
        database = "unknown"
    report: dict[str, Any] = {
        "instance": instance,
        "liveness": str(liveness.body.get("status", "ok"))
        if liveness.ok
        else ("failed" if liveness.reachable else "unreachable"),
        "readiness": "ready"
        if readiness.ok
        else ("not_ready" if readiness.reachable else "unreachable"),
        "database": database,
    }
    if "storage" in readiness.body:
        report["storage"] = str(readiness.body["storage"])
    elif "storage" in failing:
        report["storage"] = "unavailable"
    return report
