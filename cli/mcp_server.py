"""``herald mcp``: the tool interface for AI agents, over stdio (official MCP Python SDK).

Ten tools, each with a JSON Schema for its input (the SDK validates calls against it). They use
the same API client, instance and token as the commands (flag > environment > profile, resolved
afresh for each call, so a later ``herald auth login`` applies at once). A refused or
unauthenticated call is a tool error (``isError``), never a crash of the server. Tools that send
content to real social accounts (schedule, publish now) act only with ``confirm: true``.

Standard output carries the protocol only; nothing else is ever printed there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from cli import cli_version
from cli.client import HeraldClient
from cli.context import HeraldContext
from cli.errors import HeraldError, UsageProblem
from cli.redact import redact

logger = logging.getLogger("herald.mcp")

PUBLICATION_STATUSES = [
    "draft",
    "scheduled",
    "publishing",
    "published",
    "partially_published",
    "failed",
    "canceled",
]

INSTRUCTIONS = (
    "Herald publishes to connected social accounts. Queued or scheduled is not delivered: read "
    "each destination's status with get_publication. Before schedule_publication or "
    "publish_publication_now, show the user what will be sent and where, and pass confirm: true "
    "only after they agree. Use get_provider_readiness to see why a provider cannot be used."
)

_WORKSPACE = {
    "type": "string",
    "description": "Workspace ID; default: the profile's selected workspace (or the only one).",
    "maxLength": 64,
}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
_CURSOR = {"type": "string", "maxLength": 1024, "description": "next_cursor of a previous page."}
_PUBLICATION_ID = {"type": "string", "maxLength": 64, "description": "Publication ID."}
_EXPECTED_REVISION = {
    "type": "integer",
    "minimum": 1,
    "description": "Refuse if the publication changed since this revision.",
}
_CONFIRM = {
    "type": "boolean",
    "description": "Must be true: the user has agreed to send this content to real accounts. "
    "It cannot be unsent.",
}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


Handler = Callable[[HeraldClient, HeraldContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool = True
    needs_confirm: bool = False

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            inputSchema=self.input_schema,
            annotations=types.ToolAnnotations(
                title=self.title,
                readOnlyHint=self.read_only,
                # MCP reads a missing destructiveHint as true: say false for creating a draft.
                destructiveHint=None if self.read_only else self.needs_confirm,
                idempotentHint=self.read_only or None,
                openWorldHint=self.needs_confirm,
            ),
        )


def _workspace(client: HeraldClient, hx: HeraldContext, arguments: dict[str, Any]) -> str:
    selected = arguments.get("workspace_id")
    return str(selected) if selected else hx.require_workspace(client)


def _get_provider_readiness(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.provider_readiness(_workspace(client, hx, a))


def _list_workspaces(client: HeraldClient, hx: HeraldContext, a: dict[str, Any]) -> dict[str, Any]:
    return {"items": client.workspaces()}


def _list_accounts(client: HeraldClient, hx: HeraldContext, a: dict[str, Any]) -> dict[str, Any]:
    return client.accounts(
        _workspace(client, hx, a),
        limit=a.get("limit", 20),
        cursor=a.get("cursor"),
        provider=a.get("provider"),
    )


def _list_publications(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.publications(
        _workspace(client, hx, a),
        limit=a.get("limit", 20),
        cursor=a.get("cursor"),
        status=a.get("status"),
    )


def _list_media(client: HeraldClient, hx: HeraldContext, a: dict[str, Any]) -> dict[str, Any]:
    return client.media_list(
        _workspace(client, hx, a), limit=a.get("limit", 20), cursor=a.get("cursor")
    )


def _get_media(client: HeraldClient, hx: HeraldContext, a: dict[str, Any]) -> dict[str, Any]:
    return client.media(str(a["media_id"]))


def _get_publication(client: HeraldClient, hx: HeraldContext, a: dict[str, Any]) -> dict[str, Any]:
    return client.publication(a["publication_id"])


def _create_publication(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.publication_create(
        workspace_id=_workspace(client, hx, a),
        text=a.get("text", ""),
        destinations=[dict(d) for d in a["destinations"]],
        media_ids=a.get("media_ids"),
        voice_profile_id=a.get("voice_profile_id"),
        idempotency_key=a.get("idempotency_key"),
    )


def _schedule_publication(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.publication_schedule(
        a["publication_id"],
        scheduled_at=a["scheduled_at"],
        expected_revision=a.get("expected_revision"),
    )


def _publish_publication_now(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.publication_publish_now(
        a["publication_id"], expected_revision=a.get("expected_revision")
    )


def _list_voice_profiles(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.voice_profiles(
        _workspace(client, hx, a), limit=a.get("limit"), cursor=a.get("cursor")
    )


def _discover_opportunities(
    client: HeraldClient, hx: HeraldContext, a: dict[str, Any]
) -> dict[str, Any]:
    return client.discover_opportunities(
        workspace_id=_workspace(client, hx, a),
        platforms=list(a["platforms"]),
        focus=a.get("focus"),
        audience=a.get("audience"),
        voice_profile_id=a.get("voice_profile_id"),
        limit=a.get("limit"),
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_provider_readiness",
        "Provider readiness",
        "The provider readiness projection, exactly as GET /provider-readiness returns it: per "
        "provider its state, facts, connected accounts, blocking issues and per-profile decisions "
        "for immediate and scheduled publishing.",
        _object({"workspace_id": _WORKSPACE}),
        _get_provider_readiness,
    ),
    ToolSpec(
        "list_workspaces",
        "List workspaces",
        "The workspaces the token can access, with the caller's role and the plan.",
        _object({}),
        _list_workspaces,
    ),
    ToolSpec(
        "list_accounts",
        "List connected accounts",
        "A page of the workspace's connected social accounts (IDs to publish to).",
        _object(
            {
                "workspace_id": _WORKSPACE,
                "provider": {"type": "string", "maxLength": 40},
                "limit": _LIMIT,
                "cursor": _CURSOR,
            }
        ),
        _list_accounts,
    ),
    ToolSpec(
        "list_publications",
        "List publications",
        "A page of the workspace's publications, newest first, with destination statuses.",
        _object(
            {
                "workspace_id": _WORKSPACE,
                "status": {"type": "string", "enum": PUBLICATION_STATUSES},
                "limit": _LIMIT,
                "cursor": _CURSOR,
            }
        ),
        _list_publications,
    ),
    ToolSpec(
        "get_publication",
        "Get a publication",
        "One publication with each destination's delivery status (published, failed with an "
        "action, retry_wait, blocked by readiness, …).",
        _object({"publication_id": _PUBLICATION_ID}, ["publication_id"]),
        _get_publication,
    ),
    ToolSpec(
        "create_publication",
        "Create a draft publication",
        "Create a DRAFT publication with one destination per connected account. Nothing is sent: "
        "schedule_publication or publish_publication_now does that, after the user confirms.",
        _object(
            {
                "workspace_id": _WORKSPACE,
                "text": {"type": "string", "maxLength": 100_000},
                "destinations": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": _object(
                        {
                            "account_id": {"type": "string", "maxLength": 64},
                            "profile": {
                                "type": "string",
                                "maxLength": 80,
                                "description": "Output profile, e.g. mastodon.status",
                            },
                            "text": {
                                "type": "string",
                                "maxLength": 100_000,
                                "description": "Text for this destination only.",
                            },
                        },
                        ["account_id"],
                    ),
                },
                "media_ids": {
                    "type": "array",
                    "maxItems": 20,
                    "items": {"type": "string", "maxLength": 64},
                    "description": "Media items to attach (IDs from list_media; files are "
                    "uploaded with `herald media upload`).",
                },
                "voice_profile_id": {
                    "type": "string",
                    "maxLength": 64,
                    "description": "Write with this voice profile (see list_voice_profiles).",
                },
                "idempotency_key": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "Repeating a call with the same key creates nothing new.",
                },
            },
            ["text", "destinations"],
        ),
        _create_publication,
        read_only=False,
    ),
    ToolSpec(
        "schedule_publication",
        "Schedule a publication",
        "Schedule a publication for delivery to its accounts at scheduled_at. Requires "
        "confirm: true after the user agreed to what will be sent, where and when.",
        _object(
            {
                "publication_id": _PUBLICATION_ID,
                "scheduled_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "ISO 8601 with an offset, e.g. 2030-01-31T09:00:00Z",
                },
                "expected_revision": _EXPECTED_REVISION,
                "confirm": _CONFIRM,
            },
            ["publication_id", "scheduled_at", "confirm"],
        ),
        _schedule_publication,
        read_only=False,
        needs_confirm=True,
    ),
    ToolSpec(
        "publish_publication_now",
        "Publish a publication now",
        "Queue a publication for immediate delivery to its accounts; it cannot be unsent. "
        "Requires confirm: true after the user agreed. Queued is not delivered: follow with "
        "get_publication.",
        _object(
            {
                "publication_id": _PUBLICATION_ID,
                "expected_revision": _EXPECTED_REVISION,
                "confirm": _CONFIRM,
            },
            ["publication_id", "confirm"],
        ),
        _publish_publication_now,
        read_only=False,
        needs_confirm=True,
    ),
    ToolSpec(
        "list_media",
        "List media",
        "The workspace's media items, newest first (id, name, type, size, and status where "
        "the instance reports one), to attach to a publication through media_ids.",
        _object({"workspace_id": _WORKSPACE, "limit": _LIMIT, "cursor": _CURSOR}),
        _list_media,
    ),
    ToolSpec(
        "get_media",
        "Get media",
        "One media item exactly as GET /media/{id} returns it, with its status (processing, "
        "ready or failed, where the instance reports one; an item without one is ready).",
        _object({"media_id": {"type": "string", "maxLength": 64}}, ["media_id"]),
        _get_media,
    ),
    ToolSpec(
        "list_voice_profiles",
        "List voice profiles",
        "The workspace's voice profiles (writing-style definitions).",
        _object({"workspace_id": _WORKSPACE, "limit": _LIMIT, "cursor": _CURSOR}),
        _list_voice_profiles,
    ),
    ToolSpec(
        "discover_opportunities",
        "Discover publication opportunities",
        "Idea cards with angles and platform treatments for the given platforms. Never drafts "
        "or publishes anything.",
        _object(
            {
                "workspace_id": _WORKSPACE,
                "platforms": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 5,
                    "uniqueItems": True,
                    "items": {"type": "string", "maxLength": 40},
                    "description": "Providers to plan for, e.g. mastodon, bluesky.",
                },
                "focus": {"type": "string", "maxLength": 1000},
                "audience": {"type": "string", "maxLength": 500},
                "voice_profile_id": {"type": "string", "maxLength": 64},
                "limit": {"type": "integer", "minimum": 1, "maximum": 8, "default": 5},
            },
            ["platforms"],
        ),
        _discover_opportunities,
    ),
)

TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=redact(message))], isError=True
    )


def run_tool(hx: HeraldContext, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool synchronously (raises :class:`HeraldError` for a refusal)."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise UsageProblem(f"Unknown tool {name!r}.")
    if tool.needs_confirm and arguments.get("confirm") is not True:
        raise UsageProblem(
            f"{name} sends content to real accounts and cannot be undone: show the user what will "
            "be sent, and call again with confirm: true once they agree."
        )
    client = hx.client()
    return tool.handler(client, hx, arguments)


def build_server(context_factory: Callable[[], HeraldContext]) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("herald", version=cli_version(), instructions=INSTRUCTIONS)

    @server.list_tools()  # type: ignore[untyped-decorator,no-untyped-call]  # unannotated in mcp
    async def list_tools() -> list[types.Tool]:
        return [tool.definition() for tool in TOOLS]

    @server.call_tool()  # type: ignore[untyped-decorator]  # unannotated in mcp
    async def call_tool(
        name: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | types.CallToolResult:
        try:
            return await anyio.to_thread.run_sync(run_tool, context_factory(), name, arguments)
        except HeraldError as exc:
            return _error(str(exc))
        except Exception as exc:  # a bug must not take the server down
            logger.exception("Tool %s failed", name)
            return _error(f"{name} failed unexpectedly ({type(exc).__name__}).")

    return server


async def serve(context_factory: Callable[[], HeraldContext]) -> None:
    server = build_server(context_factory)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
