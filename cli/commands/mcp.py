"""``herald mcp``: the stdio tool interface for AI agents."""

from __future__ import annotations

import dataclasses
import logging
import sys

import anyio
import click

from cli.context import HeraldContext
from cli.main import current, global_options
from cli.output import printable
from cli.redact import redact


class RedactingFormatter(logging.Formatter):
    """Log records (tracebacks included) pass through redaction, and their control characters
    are escaped (cli.output.printable), before they reach stderr."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(redact(super().format(record)))


@click.command("mcp")
@global_options
def group() -> None:
    """Serve the tool interface for AI agents over stdio (Model Context Protocol).

    Tools: get_provider_readiness, list_workspaces, list_accounts, list_publications,
    get_publication, create_publication, schedule_publication, publish_publication_now,
    list_voice_profiles, discover_opportunities. They use this profile's instance and token;
    schedule and publish-now act only with confirm: true.
    """
    from cli.mcp_server import serve

    options = current().options
    handler = logging.StreamHandler(sys.stderr)  # stdout is the protocol
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.WARNING, force=True)

    def context() -> HeraldContext:
        # Re-read profiles, credentials and the environment for every call.
        return HeraldContext(options=dataclasses.replace(options))

    anyio.run(serve, context)
