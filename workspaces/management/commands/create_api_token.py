"""``manage.py create_api_token --user EMAIL [--workspace ID] [--permission …] [--expires-in-days N]``"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from config.errors import DomainError, FieldValidationError
from workspaces import services
from workspaces.models import ApiToken, User


class Command(BaseCommand):
    help = "Create an API token for a user and print it once (operator bootstrap)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="E-mail of the token's owner")
        parser.add_argument("--name", default="operator token")
        parser.add_argument("--workspace", help="Bind the token to this workspace ID")
        parser.add_argument(
            "--permission",
            action="append",
            choices=ApiToken.PERMISSIONS,
            help="api:read and/or api:write (repeatable; default both)",
        )
        parser.add_argument("--expires-in-days", type=int, help="1 to 365")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(email__iexact=options["user"]).first()
        if user is None:
            raise CommandError(f"No user with e-mail {options['user']}.")
        days = options.get("expires_in_days")
        if days is not None and not 1 <= days <= 365:
            raise CommandError("--expires-in-days must be between 1 and 365.")
        try:
            token, full = services.api_token_create(
                user=user,
                name=options["name"],
                permissions=options.get("permission") or list(ApiToken.PERMISSIONS),
                workspace_id=options.get("workspace"),
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except FieldValidationError as exc:
            raise CommandError(
                "; ".join(
                    f"{str(e['location']).removeprefix('body.')}: {e['message']}"
                    for e in exc.errors
                )
            ) from exc
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        self.stderr.write(f"Created token {token.pk} for {user.email}; it is shown only once:")
        self.stdout.write(full)
