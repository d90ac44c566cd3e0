"""Periodic clean-up of short-lived rows: expired Idempotency-Key records and OAuth states."""

from __future__ import annotations

from django.utils import timezone

from publishing.models import IdempotencyRecord, OAuthState


def housekeeping() -> dict[str, int]:
    now = timezone.now()
    idempotency, _ = IdempotencyRecord.objects.filter(
        created_at__lt=now - IdempotencyRecord.TTL
    ).delete()
    oauth, _ = OAuthState.objects.filter(expires_at__lt=now).delete()
    return {"idempotency_records": idempotency, "oauth_states": oauth}
