"""Extension points other apps register with (in their AppConfig.ready) so that workspace
deletion can explain data loss and check blockers without workspaces importing every app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workspaces.models import Workspace


@dataclass(frozen=True)
class Blocker:
    code: str
    detail: str


DataSummary = Callable[[Workspace], dict[str, int]]
BlockerCheck = Callable[[Workspace], list[Blocker]]

_data_summaries: list[DataSummary] = []
_blocker_checks: list[BlockerCheck] = []


def register_data_summary(func: DataSummary) -> None:
    if func not in _data_summaries:
        _data_summaries.append(func)


def register_blocker_check(func: BlockerCheck) -> None:
    if func not in _blocker_checks:
        _blocker_checks.append(func)


def data_summaries() -> list[DataSummary]:
    return list(_data_summaries)


def blocker_checks() -> list[BlockerCheck]:
    return list(_blocker_checks)
