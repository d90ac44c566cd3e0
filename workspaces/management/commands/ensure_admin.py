"""Create a first instance administrator if none exists (used by ``make run``)."""

from __future__ import annotations

import json
import os
import secrets
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from workspaces.access import Actor
from workspaces.models import User
from workspaces.services import organization_create, workspace_create


class Command(BaseCommand):
    help = "Create a first superuser (with an organization and workspace) if there is none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="admin@localhost")
        parser.add_argument(
            "--password-file",
            help=(
                'Write the one-time password as JSON {"email", "password"} to this file '
                "(created or truncated, mode 0600) instead of printing it; the file is left "
                "empty when an administrator already exists. Used by `make run`, which prints "
                "it once the server answers."
            ),
        )

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        password_file = options["password_file"]
        if password_file:
            # Truncate first: an empty file means "nothing was created".
            _write_private(password_file, "")
        if User.objects.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(options["email"], password)
        actor = Actor(user=user)
        organization = organization_create(actor=actor, name="My organization")
        workspace_create(actor=actor, organization_id=organization.pk, name="My workspace")
        if password_file:
            # Inside the transaction: if the file cannot be written, no administrator exists
            # whose password nobody saw.
            _write_private(password_file, json.dumps({"email": user.email, "password": password}))
            return
        self.stdout.write(
            "\nCreated the first administrator (shown once; change it after signing in):\n"
            f"  e-mail:   {user.email}\n  password: {password}\n"
        )


def _write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (never through a symbolic link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
