"""Repost rules, evaluated: pure functions of a rule (as snapshotted into an execution) and a
metrics reading."""

from __future__ import annotations

from typing import Any

from publishing.providers.base import Metrics

GATES = (
    ("min_likes", "likes"),
    ("min_comments", "comments"),
    ("min_reposts", "reposts"),
    ("min_views", "views"),
)


def metrics_values(metrics: Metrics) -> dict[str, int]:
    return {
        "likes": metrics.likes,
        "comments": metrics.comments,
        "reposts": metrics.reposts,
        "views": metrics.views,
    }


def thresholds_met(rule: dict[str, Any], metrics: dict[str, int]) -> bool:
    """``all``: every non-zero gate is met; ``any``: at least one is. No gate: met."""
    results = [
        metrics.get(key, 0) >= int(rule[field]) for field, key in GATES if int(rule.get(field) or 0)
    ]
    if not results:
        return True
    return all(results) if rule.get("threshold_mode", "all") == "all" else any(results)


def needs_metrics(rule: dict[str, Any]) -> bool:
    return bool(rule.get("require_plateau")) or any(int(rule.get(field) or 0) for field, _ in GATES)


def rule_stages(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """The stages of a rule; a rule without stages reposts once, at ``delay_seconds``."""
    return list(rule.get("stages") or []) or [
        {"delay_seconds": rule["delay_seconds"], "unrepost_previous": False}
    ]
