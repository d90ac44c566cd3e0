"""``herald mcp`` driven by the MCP SDK's own stdio client: the server runs as a subprocess
(``python -m cli --instance <live_server> mcp``) and talks to the live test server over HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.cli_support import (
    forget_remembered_secrets,  # noqa: F401 (autouse fixture)
)

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1"
ROOT = Path(__file__).resolve().parents[2]
TOOL_NAMES = {
    "get_provider_readiness",
    "list_workspaces",
    "list_accounts",
    "list_publications",
    "get_publication",
    "create_publication",
    "schedule_publication",
    "publish_publication_now",
    "list_voice_profiles",
    "discover_opportunities",
    "list_media",
    "get_media",
}


Body = Callable[[ClientSession], Awaitable[Any]]


@pytest.fixture
def mcp_session(url: str, config_dir: Path, tmp_path: Path) -> Callable[..., Any]:
    """Run ``body(session)`` against a fresh ``herald mcp`` subprocess; returns its result."""

    def run(body: Body, *, token: str | None = None, extra_args: tuple[str, ...] = ()) -> Any:
        env = {"HERALD_CONFIG_DIR": str(config_dir)}
        if token is not None:
            env["HERALD_TOKEN"] = token
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "cli", "--instance", url, *extra_args, "mcp"],
            env=env,
            cwd=str(ROOT),
        )

        async def main() -> Any:
            with (tmp_path / "mcp-stderr.log").open("w") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    with anyio.fail_after(60):
                        return await body(session)

        return anyio.run(main)

    return run


def api(url: str, token: str, method: str, path: str, **kwargs: Any) -> Any:
    response = requests.request(
        method,
        f"{url}{API}{path}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
        **kwargs,
    )
    assert response.status_code < 300, response.text
    return response.json()


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def test_tools_are_listed_with_input_schemas(mcp_session: Callable[..., Any]) -> None:
    async def body(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in mcp_session(body)}

    assert set(tools) == TOOL_NAMES
    for tool in tools.values():
        assert tool.description
        assert tool.inputSchema["type"] == "object"
        assert tool.inputSchema["additionalProperties"] is False
        assert isinstance(tool.inputSchema["properties"], dict)
    for name in ("schedule_publication", "publish_publication_now"):
        assert "confirm" in tools[name].inputSchema["required"]
        assert tools[name].inputSchema["properties"]["confirm"]["type"] == "boolean"
        assert tools[name].annotations.destructiveHint is True
    for name in (
        "get_provider_readiness",
        "list_workspaces",
        "list_accounts",
        "list_publications",
        "get_publication",
        "list_voice_profiles",
        "discover_opportunities",
        "list_media",
        "get_media",
    ):
        assert tools[name].annotations.readOnlyHint is True
        assert "confirm" not in tools[name].inputSchema["properties"]
    assert tools["create_publication"].annotations.readOnlyHint is False
    assert tools["create_publication"].annotations.destructiveHint is False
    assert tools["get_publication"].inputSchema["required"] == ["publication_id"]
    assert tools["create_publication"].inputSchema["required"] == ["text", "destinations"]
    assert tools["discover_opportunities"].inputSchema["required"] == ["platforms"]


def test_get_provider_readiness_returns_the_api_projection(
    mcp_session: Callable[..., Any], url: str, token: str, workspace: Any
) -> None:
    from tests.publishing_support import make_account

    make_account(workspace, "discord_webhook")

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("get_provider_readiness", {})

    result = mcp_session(body, token=token)
    expected = api(
        url, token, "GET", "/provider-readiness", params={"workspace_id": str(workspace.pk)}
    )

    assert result.isError is False, text_of(result)
    assert result.structuredContent == expected
    assert json.loads(text_of(result)) == expected


def test_an_unauthenticated_call_is_a_tool_error_not_a_crash(
    mcp_session: Callable[..., Any], workspace: Any, tmp_path: Path
) -> None:
    async def body(session: ClientSession) -> Any:
        first = await session.call_tool(
            "get_provider_readiness", {"workspace_id": str(workspace.pk)}
        )
        second = await session.call_tool("list_workspaces", {})
        bad_input = await session.call_tool("get_publication", {})
        tools = (await session.list_tools()).tools  # the server is still serving
        return first, second, bad_input, tools

    first, second, bad_input, tools = mcp_session(body)

    assert first.isError is True
    assert "No API token" in text_of(first)
    assert second.isError is True
    assert bad_input.isError is True
    assert "publication_id" in text_of(bad_input)
    assert len(tools) == len(TOOL_NAMES)
    assert "Traceback" not in (tmp_path / "mcp-stderr.log").read_text()


def test_a_refused_token_is_a_tool_error(mcp_session: Callable[..., Any], workspace: Any) -> None:
    bad = "hrld_0123abcd_" + "q" * 43

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("list_workspaces", {})

    result = mcp_session(body, token=bad)

    assert result.isError is True
    assert text_of(result).startswith("401 Unauthorized")
    assert "qqqq" not in text_of(result)


def test_publishing_tools_act_only_with_confirm(
    mcp_session: Callable[..., Any], url: str, token: str, workspace: Any, delivery_queue: Any
) -> None:
    from tests.publishing_support import make_account

    account = make_account(workspace, "discord_webhook")

    async def body(session: ClientSession) -> Any:
        created = await session.call_tool(
            "create_publication",
            {
                "text": "Hello from an agent",
                "destinations": [{"account_id": str(account.pk)}],
            },
        )
        assert created.structuredContent is not None, text_of(created)
        publication_id = created.structuredContent["id"]
        missing = await session.call_tool(
            "publish_publication_now", {"publication_id": publication_id}
        )
        declined = await session.call_tool(
            "publish_publication_now", {"publication_id": publication_id, "confirm": False}
        )
        unscheduled = await session.call_tool(
            "schedule_publication",
            {
                "publication_id": publication_id,
                "scheduled_at": "2099-01-01T09:00:00Z",
                "confirm": False,
            },
        )
        still = await session.call_tool("get_publication", {"publication_id": publication_id})
        confirmed = await session.call_tool(
            "publish_publication_now", {"publication_id": publication_id, "confirm": True}
        )
        return created, missing, declined, unscheduled, still, confirmed

    created, missing, declined, unscheduled, still, confirmed = mcp_session(body, token=token)

    assert created.isError is False, text_of(created)
    assert created.structuredContent["status"] == "draft"
    assert missing.isError is True
    assert "confirm" in text_of(missing)
    for refused in (declined, unscheduled):
        assert refused.isError is True
        assert "confirm: true" in text_of(refused)
    assert still.structuredContent["status"] == "draft"
    assert still.structuredContent["scheduled_at"] is None
    assert confirmed.isError is False, text_of(confirmed)
    assert confirmed.structuredContent["destinations"][0]["status"] == "queued"
    publication = api(url, token, "GET", f"/publications/{created.structuredContent['id']}")
    assert publication["destinations"][0]["status"] == "queued"
    assert len(delivery_queue.sends) == 1


def test_schedule_tool_with_confirm(
    mcp_session: Callable[..., Any], url: str, token: str, workspace: Any, owner_client: Any
) -> None:
    from tests.publishing_support import create_publication, make_account

    account = make_account(workspace, "discord_webhook")
    draft = create_publication(owner_client, workspace, [str(account.pk)], text="Later")

    async def body(session: ClientSession) -> Any:
        return await session.call_tool(
            "schedule_publication",
            {
                "publication_id": draft["id"],
                "scheduled_at": "2099-01-01T09:00:00Z",
                "confirm": True,
                "expected_revision": draft["revision"],
            },
        )

    result = mcp_session(body, token=token)

    assert result.isError is False, text_of(result)
    assert result.structuredContent["status"] == "scheduled"
    assert api(url, token, "GET", f"/publications/{draft['id']}")["scheduled_at"].startswith(
        "2099-01-01T09:00:00"
    )


def test_list_tools_return_the_api_pages(
    mcp_session: Callable[..., Any], url: str, token: str, workspace: Any, owner_client: Any
) -> None:
    from tests.publishing_support import create_publication, make_account

    account = make_account(workspace, "discord_webhook")
    draft = create_publication(owner_client, workspace, [str(account.pk)], text="Listed")
    workspace_id = str(workspace.pk)

    async def body(session: ClientSession) -> Any:
        return {
            "workspaces": await session.call_tool("list_workspaces", {}),
            "accounts": await session.call_tool("list_accounts", {"workspace_id": workspace_id}),
            "publications": await session.call_tool("list_publications", {"status": "draft"}),
            "publication": await session.call_tool(
                "get_publication", {"publication_id": draft["id"]}
            ),
            "voice": await session.call_tool("list_voice_profiles", {}),
            "discover": await session.call_tool(
                "discover_opportunities", {"platforms": ["mastodon"], "limit": 2}
            ),
        }

    results = mcp_session(body, token=token)

    for name, result in results.items():
        assert result.isError is False, (name, text_of(result))
    assert [w["id"] for w in results["workspaces"].structuredContent["items"]] == [workspace_id]
    assert results["accounts"].structuredContent == api(
        url, token, "GET", "/accounts", params={"workspace_id": workspace_id}
    )
    assert [p["id"] for p in results["publications"].structuredContent["items"]] == [draft["id"]]
    assert results["publication"].structuredContent == api(
        url, token, "GET", f"/publications/{draft['id']}"
    )
    assert results["voice"].structuredContent == api(
        url, token, "GET", "/voice-profiles", params={"workspace_id": workspace_id}
    )
    discovered = results["discover"].structuredContent
    assert len(discovered["opportunities"]) == 2
    assert {
        t["platform"] for o in discovered["opportunities"] for t in o["platform_treatments"]
    } == {"mastodon"}


def test_media_tools_report_an_uploaded_item_an_agent_can_attach(
    mcp_session: Callable[..., Any], url: str, token: str, workspace: Any, media_storage: Any
) -> None:
    from tests.providers import tiny_png

    uploaded = api(
        url,
        token,
        "POST",
        "/media",
        data={"workspace_id": str(workspace.pk)},
        files={"file": ("dot.png", tiny_png(), "image/png")},
    )

    async def body(session: ClientSession) -> Any:
        return {
            "list": await session.call_tool("list_media", {}),
            "get": await session.call_tool("get_media", {"media_id": uploaded["id"]}),
        }

    results = mcp_session(body, token=token)
    assert results["list"].isError is False, text_of(results["list"])
    assert [m["id"] for m in results["list"].structuredContent["items"]] == [uploaded["id"]]

    # Signed links carry their own expiry (a second later, another signature): compare the rest.
    def unsigned(item: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in item.items() if not key.endswith("url")}

    fetched = api(url, token, "GET", f"/media/{uploaded['id']}")
    assert unsigned(results["get"].structuredContent) == unsigned(fetched)
