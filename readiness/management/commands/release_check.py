"""``python manage.py release_check provider-certification``: the public-claims release gate.

Verifies that the release manifest binds the claims file (``sha256:`` digest, schema version,
claim count) and rejects a non-empty claim list unless this instance's trusted ledger projection
supplies each claim's current contract digest. Exits non-zero with the reasons on rejection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from readiness.claims import CLAIMS_FILE, MANIFEST_FILE
from readiness.release import provider_certification_check


class Command(BaseCommand):
    help = "Release gates. provider-certification: the public provider-format claims."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("check", choices=["provider-certification"])
        parser.add_argument(
            "--claims",
            type=Path,
            default=CLAIMS_FILE,
            help="claims file (default: the shipped one)",
        )
        parser.add_argument(
            "--manifest",
            type=Path,
            default=MANIFEST_FILE,
            help="release manifest (default: the shipped one)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        result = provider_certification_check(
            claims_path=options["claims"], manifest_path=options["manifest"]
        )
        if not result.ok:
            raise CommandError(
                "provider-certification rejected:\n  - " + "\n  - ".join(result.reasons)
            )
        self.stdout.write(
            f"provider-certification passed: manifest binds {result.claim_count} claim(s)."
        )
