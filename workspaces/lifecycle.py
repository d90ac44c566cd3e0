"""Extension points other apps register with (in their AppConfig.ready) so that workspace
deletion can explain data loss and check blockers without workspaces importing every app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from config.registry import Many
from workspaces.models import Workspace


@dataclass(frozen=True)
class Blocker:
    code: str
    detail: str


DataSummary = Callable[[Workspace], dict[str, int]]
BlockerCheck = Callable[[Workspace], list[Blocker]]

# What each app would delete with a workspace (the deletion preview lists them all).
DATA_SUMMARIES: Many[DataSummary] = Many("workspaces.data_summary")
# Workspace deletion is refused (409) while any of these returns a blocker.
BLOCKER_CHECKS: Many[BlockerCheck] = Many("workspaces.blocker_check")
