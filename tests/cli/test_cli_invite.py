"""``herald workspace invite``: when the instance sends e-mail the link goes to the invitee's
mailbox only and the CLI never prints it (nor does its --json, which is the API's answer); only
an instance that cannot send e-mail prints the link, saying it is to be passed on by hand."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core import mail

from tests.cli_support import Cli

pytestmark = pytest.mark.django_db(transaction=True)

LINK = re.compile(r"/invitations/([A-Za-z0-9_\-]{20,})/")


def test_invite_with_email_never_prints_the_link(cli: Cli, url: str, token: str) -> None:
    result = cli("workspace", "invite", "new@example.com", "--instance", url, "--token", token)
    assert result.exit_code == 0, result.output
    assert "e-mailed to the invitee" in result.stdout
    [message] = mail.outbox
    link = LINK.search(message.body)
    assert link
    assert link.group(1) not in result.output
    assert "/invitations/" not in result.output

    as_json = cli(
        "workspace",
        "invite",
        "other@example.com",
        "--role",
        "viewer",
        "--instance",
        url,
        "--token",
        token,
        "--json",
    )
    body = json.loads(as_json.stdout)
    assert (body["delivery"], body["role"]) == ("email", "viewer")
    assert "accept_url" not in body
    assert "/invitations/" not in as_json.output


def test_invite_without_email_prints_the_link_to_pass_on(
    cli: Cli, url: str, token: str, settings: Any
) -> None:
    settings.HERALD_EMAIL_ENABLED = False
    result = cli("workspace", "invite", "new@example.com", "--instance", url, "--token", token)
    assert result.exit_code == 0, result.output
    assert "cannot send e-mail" in result.stdout
    assert LINK.search(result.stdout)
    assert mail.outbox == []
