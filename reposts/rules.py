"""Repost rules, evaluated: pure functions of a rule (as snapshotted into an execution) and a
metrics reading."""

from __future__ import annotations

from typing import Any

from providers.base import Metrics

# Providers whose posts report views (``Metrics.views``) to the adapter. Neither Mastodon nor
# Bluesky counts views, so a non-zero ``min_views`` gate on their posts could never be met: the
# API refuses it (422 at ``rule.min_views``) instead of accepting a policy that never fires.
VIEW_REPORTING_PLATFORMS: frozenset[str] = frozenset()

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
    """The repost schedule of a rule: its stages, each at its own delay from the publish time
    (``delay_seconds`` then plays no part); a rule without stages reposts once, at
    ``delay_seconds``. The execution is eligible (metrics are read) from the first one."""
    return list(rule.get("stages") or []) or [
        {"delay_seconds": rule["delay_seconds"], "unrepost_previous": False}
    ]
