"""Re-encrypt every stored provider credential with the newest ``HERALD_CREDENTIALS_KEY``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from providers import credentials
from publishing.models import Account, OAuthState, ProviderApp


class Command(BaseCommand):
    help = "Re-encrypt provider credentials with the first key of HERALD_CREDENTIALS_KEY."

    def handle(self, *args: Any, **options: Any) -> None:
        total = 0
        for model, field in (
            (Account, "credentials_encrypted"),
            (ProviderApp, "credentials_encrypted"),
            (OAuthState, "code_verifier_encrypted"),
        ):
            with transaction.atomic():
                for row in model.objects.select_for_update().exclude(**{field: ""}):
                    setattr(row, field, credentials.rotate(getattr(row, field)))
                    row.save(update_fields=[field])
                    total += 1
        self.stdout.write(f"Re-encrypted {total} credential record(s).")
