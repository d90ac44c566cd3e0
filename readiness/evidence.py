"""Current ledger facts for a set of subjects, loaded in one statement of indexed look-ups.

One decision and a whole workspace projection read the ledgers the same way: one statement
(current certification runs, current approval reviews and current runtime controls, as a
``UNION ALL`` of three indexed ``MAX(id) … GROUP BY`` look-ups), whatever the number of
subjects. Nothing is cached between calls, so an explicit disable or a new runtime control
applies to the very next decision.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from readiness.models import ApprovalReview, CertificationRun, RuntimeControl
from readiness.subjects import Subject

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunFact:
    outcome: str
    tested_at: datetime
    expires_at: datetime
    required_scopes: tuple[str, ...]
    granted_scopes: tuple[str, ...]


@dataclass(frozen=True)
class ApprovalFact:
    outcome: str
    operations: tuple[str, ...]
    expires_at: datetime | None


@dataclass(frozen=True)
class ControlFact:
    output_profile: str
    operation: str
    mode: str


@dataclass
class Evidence:
    # (subject digest, kind, contract digest) -> the latest run: a later failed run supersedes.
    runs: dict[tuple[str, str, str], RunFact] = field(default_factory=dict)
    # (provider, app fingerprint, provider environment) -> the latest review.
    approvals: dict[tuple[str, str, str], ApprovalFact] = field(default_factory=dict)
    # provider -> the current control of each scope.
    controls: dict[str, list[ControlFact]] = field(default_factory=dict)
    unavailable: bool = False  # the ledgers could not be read: decisions fail closed

    def run(self, subject: Subject, kind: str, contract: str) -> RunFact | None:
        return self.runs.get((subject.digest, kind, contract))

    def approval(self, subject: Subject) -> ApprovalFact | None:
        return self.approvals.get(
            (subject.provider, subject.app_fingerprint, subject.provider_environment)
        )

    def controls_for(self, provider: str) -> list[ControlFact]:
        return self.controls.get(provider, [])


def _placeholders(values: Iterable[str]) -> tuple[str, list[str]]:
    ordered = sorted(set(values))
    return ", ".join(["%s"] * len(ordered)), ordered


def _fetch(
    digests: set[str], providers: set[str], apps: set[str], environments: set[str]
) -> list[tuple[Any, ...]]:
    """One statement, one round trip: the latest (highest id) row of every group of the three
    ledgers the decisions need, each ``id IN (SELECT MAX(id) … GROUP BY …)`` on its index.
    Raw SQL because it runs before every provider call: building the equivalent three ORM
    querysets cost more CPU than the database spent answering them."""
    run, approval, control = (
        connection.ops.quote_name(model._meta.db_table)
        for model in (CertificationRun, ApprovalReview, RuntimeControl)
    )
    digest_in, digest_values = _placeholders(digests)
    provider_in, provider_values = _placeholders(providers)
    app_in, app_values = _placeholders(apps)
    environment_in, environment_values = _placeholders(environments)
    # Only our own table names and placeholders are interpolated; every value is a parameter.
    sql = (
        "SELECT 'run', subject_digest, kind, contract_digest, outcome, tested_at, expires_at, "  # noqa: S608
        f"required_scopes, granted_scopes FROM {run} WHERE id IN (SELECT MAX(id) FROM {run} "
        f"WHERE subject_digest IN ({digest_in}) GROUP BY subject_digest, kind, contract_digest) "
        "UNION ALL "
        "SELECT 'approval', provider, app_fingerprint, provider_environment, outcome, reviewed_at, expires_at, "
        f"operations, NULL FROM {approval} WHERE id IN (SELECT MAX(id) FROM {approval} "
        f"WHERE provider IN ({provider_in}) AND app_fingerprint IN ({app_in}) "
        f"AND provider_environment IN ({environment_in}) GROUP BY provider, app_fingerprint, provider_environment) "
        "UNION ALL "
        "SELECT 'control', provider, output_profile, operation, mode, NULL, NULL, NULL, NULL "
        f"FROM {control} WHERE id IN (SELECT MAX(id) FROM {control} WHERE provider IN ({provider_in}) "
        "GROUP BY provider, output_profile, operation)"
    )
    params = [*digest_values, *provider_values, *app_values, *environment_values, *provider_values]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _datetime(value: Any) -> datetime | None:
    """A raw cursor's timestamp: aware on PostgreSQL, a naive UTC string on SQLite."""
    parsed = value if value is None or isinstance(value, datetime) else parse_datetime(str(value))
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


def _strings(value: Any) -> tuple[str, ...]:
    """A JSON list column as read raw (text on SQLite and, with Django's loader, PostgreSQL)."""
    if isinstance(value, str | bytes):
        value = json.loads(value)
    return tuple(str(item) for item in value or ())


def load_evidence(subjects: Iterable[Subject]) -> Evidence:
    subjects = list(subjects)
    evidence = Evidence()
    if not subjects:
        return evidence
    try:
        # A failing read inside a caller's transaction must not poison it (PostgreSQL).
        guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
        with guard:
            rows = _fetch(
                {s.digest for s in subjects},
                {s.provider for s in subjects},
                {s.app_fingerprint for s in subjects},
                {s.provider_environment for s in subjects},
            )
        for source, a, b, c, outcome, at, expires_at, first, second in rows:
            if source == "run":
                tested = _datetime(at)
                expires = _datetime(expires_at)
                if tested is None or expires is None:  # NOT NULL columns: cannot happen
                    continue
                evidence.runs[(a, b, c)] = RunFact(
                    outcome=outcome,
                    tested_at=tested,
                    expires_at=expires,
                    required_scopes=_strings(first),
                    granted_scopes=_strings(second),
                )
            elif source == "approval":
                evidence.approvals[(a, b, c)] = ApprovalFact(
                    outcome=outcome, operations=_strings(first), expires_at=_datetime(expires_at)
                )
            else:
                evidence.controls.setdefault(a, []).append(
                    ControlFact(output_profile=b, operation=c, mode=outcome)
                )
    except (DatabaseError, ValueError):
        logger.exception("The readiness ledgers cannot be read; decisions fail closed.")
        return Evidence(unavailable=True)
    return evidence
