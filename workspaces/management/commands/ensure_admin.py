"""Create a first instance administrator if none exists (used by ``make run``)."""

from __future__ import annotations

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

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(options["email"], password)
        actor = Actor(user=user)
        organization = organization_create(actor=actor, name="My organization")
        workspace_create(actor=actor, organization_id=organization.pk, name="My workspace")
        self.stdout.write(
            "\nCreated the first administrator (shown once; change it after signing in):\n"
            f"  e-mail:   {user.email}\n  password: {password}\n"
        )
