"""Current ledger facts for a set of subjects, loaded in a fixed number of indexed queries.

One decision and a whole workspace projection read the ledgers the same way: three queries
(current certification runs, current approval reviews, current runtime controls), whatever the
number of subjects. Nothing is cached between calls, so an explicit disable or a new runtime
control applies to the very next decision.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import Max

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
        return self.approvals.get((subject.provider, subject.app_fingerprint, subject.provider_environment))

    def controls_for(self, provider: str) -> list[ControlFact]:
        return self.controls.get(provider, [])


def _latest(queryset: Any, *keys: str) -> Any:
    """Rows that are the latest (highest id) of their group: one query with a subquery."""
    last = queryset.values(*keys).annotate(last=Max("id")).values("last")
    return queryset.model.objects.filter(pk__in=last)


def load_evidence(subjects: Iterable[Subject]) -> Evidence:
    subjects = list(subjects)
    evidence = Evidence()
    if not subjects:
        return evidence
    digests = {s.digest for s in subjects}
    providers = {s.provider for s in subjects}
    apps = {s.app_fingerprint for s in subjects}
    environments = {s.provider_environment for s in subjects}
    try:
        # A failing read inside a caller's transaction must not poison it (PostgreSQL).
        guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
        with guard:
            runs = _latest(CertificationRun.objects.filter(subject_digest__in=digests),
                           "subject_digest", "kind", "contract_digest")
            for row in runs.values_list("subject_digest", "kind", "contract_digest", "outcome", "tested_at",
                                        "expires_at", "required_scopes", "granted_scopes"):
                evidence.runs[(row[0], row[1], row[2])] = RunFact(
                    outcome=row[3], tested_at=row[4], expires_at=row[5],
                    required_scopes=tuple(row[6] or ()), granted_scopes=tuple(row[7] or ()),
                )
            approvals = _latest(
                ApprovalReview.objects.filter(provider__in=providers, app_fingerprint__in=apps,
                                              provider_environment__in=environments),
                "provider", "app_fingerprint", "provider_environment",
            )
            for provider, app, environment, outcome, operations, expires_at in approvals.values_list(
                "provider", "app_fingerprint", "provider_environment", "outcome", "operations", "expires_at"
            ):
                evidence.approvals[(provider, app, environment)] = ApprovalFact(
                    outcome=outcome, operations=tuple(operations or ()), expires_at=expires_at
                )
            controls = _latest(RuntimeControl.objects.filter(provider__in=providers),
                               "provider", "output_profile", "operation")
            for provider, output_profile, operation, mode in controls.values_list(
                "provider", "output_profile", "operation", "mode"
            ):
                evidence.controls.setdefault(provider, []).append(
                    ControlFact(output_profile=output_profile, operation=operation, mode=mode)
                )
    except DatabaseError:
        logger.exception("The readiness ledgers cannot be read; decisions fail closed.")
        return Evidence(unavailable=True)
    return evidence

