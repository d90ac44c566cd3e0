"""Shared helper of the admin tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, LogEntry


def record_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[dict[str, Any]]:
    """Each call of the service ``module.name`` from now on, by its keyword arguments; the real
    service still runs."""
    calls: list[dict[str, Any]] = []
    real = getattr(module, name)

    def recorded(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(module, name, recorded)
    return calls


def assert_addition_logged(user: Any, row: Any) -> None:
    """The admin log holds one entry of ``user``: the addition of ``row`` (its key and name)."""
    [entry] = LogEntry.objects.filter(user=user)
    assert (entry.action_flag, entry.object_id, entry.object_repr) == (
        ADDITION,
        str(row.pk),
        str(row),
    )
