"""Schemathesis against the served contract, for the publishing API (accounts,
media, publications), through the WSGI app.

For every publishing operation, generated requests (valid ones, ones that use the IDs of real
resources, and deliberately invalid ones) must never answer 500 (a 502 where the operation
declares it is a provider failing, not a crash), and every answer must use a declared status
code, a declared content type and the declared schema.

The world, made afresh for each operation (``transaction=True``: the WSGI app commits, and the
database is emptied after each operation): a workspace administered by the bearer token's user;
one connected account per provider, each pointing at a stand-in provider on 127.0.0.1 (Mastodon
with its app registration, Bluesky, Discord webhook, Telegram), so provider calls succeed or
fail the way real ones do; a pending Mastodon OAuth grant (a real ``state`` and ``code`` for the
callback); two PNGs uploaded through the media service into a temporary folder; a draft
publication to all four accounts (the Mastodon one with a PNG) and a failed one (for retry).

Real values are substituted into path parameters, query parameters (``workspace_id``,
``account_id``, ``account_ids``, ``state``/``code``) and body fields (``workspace_id``,
destinations' ``account_id``, ``media_ids``, the connect ``provider``/``fields``, the upload's
``file``); some of those cases are also tidied (known options only, a short text, a future
``scheduled_at``, the current revision) so that every operation reaches its success path.
Delivery is only recorded (``delivery_queue``): nothing is sent to a broker. Names other than
the loopback interface do not resolve, so a generated instance or webhook URL never leaves the
machine: the provider call fails at once and the API answers its declared 502.

``HERALD_FUZZ_EXAMPLES`` (default 15) sets the examples per operation and generation mode.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from hypothesis import strategies as st

from providers.base import Candidate, ConnectedAccount, ConnectionCandidates
from tests.contract_fuzz_support import (
    CHECKS,
    assert_contract_holds,
    max_examples,
    operation_label,
    operations_under,
)
from tests.providers import tiny_png
from tests.providers.bluesky.standin import BlueskyStandIn
from tests.providers.discord_webhook.standin import DiscordWebhookStandIn
from tests.providers.mastodon.standin import FIXTURE_TOKEN, MastodonStandIn
from tests.providers.telegram.standin import TelegramStandIn
from tests.publishing_support import bind_browser, connect_fields, follow_authorization
from workspaces.access import Actor

FUZZED_PATHS = (
    "/api/v1/account-providers",
    "/api/v1/accounts",
    "/api/v1/capabilities",
    "/api/v1/media",
    "/api/v1/publications",
    "/api/v1/events",
)
EXPECTED_OPERATIONS = {
    "GET /api/v1/account-providers",
    "GET /api/v1/accounts",
    "POST /api/v1/accounts/connect",
    "GET /api/v1/accounts/oauth/callback",
    "GET /api/v1/accounts/choices/{choice_id}",
    "POST /api/v1/accounts/choices/{choice_id}",
    "GET /api/v1/accounts/{account_id}",
    "DELETE /api/v1/accounts/{account_id}",
    "GET /api/v1/accounts/{account_id}/destination-options",
    "GET /api/v1/capabilities",
    "GET /api/v1/media",
    "POST /api/v1/media",
    "GET /api/v1/media/{media_id}",
    "GET /api/v1/media/{media_id}/content",
    "DELETE /api/v1/media/{media_id}",
    "GET /api/v1/publications",
    "POST /api/v1/publications",
    "GET /api/v1/publications/{publication_id}",
    "PUT /api/v1/publications/{publication_id}",
    "DELETE /api/v1/publications/{publication_id}",
    "POST /api/v1/publications/{publication_id}/schedule",
    "POST /api/v1/publications/{publication_id}/queue",
    "POST /api/v1/publications/{publication_id}/publish-now",
    "POST /api/v1/publications/{publication_id}/cancel",
    "POST /api/v1/publications/{publication_id}/retry-failed",
    "GET /api/v1/publications/{publication_id}/events",
    "GET /api/v1/events",
}
PROVIDERS = ("mastodon", "bluesky", "discord_webhook", "telegram")

# Examples per operation and generation mode; raise it for a deeper local run.
MAX_EXAMPLES = max_examples(15)


OPERATIONS = operations_under(*FUZZED_PATHS)


# --- The machine boundary ---------------------------------------------------------------------


def _is_loopback(host: Any) -> bool:
    name = host.decode() if isinstance(host, bytes) else str(host or "")
    if name.lower() in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any name but the loopback interface fails to resolve: fuzzed instance and webhook URLs
    fail at once (``requests`` and urllib3 resolve through ``socket.getaddrinfo``)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            raise socket.gaierror(socket.EAI_NONAME, "resolution disabled in the publishing fuzz")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@dataclass(frozen=True)
class StandIns:
    mastodon: MastodonStandIn
    bluesky: BlueskyStandIn
    discord_webhook: DiscordWebhookStandIn
    telegram: TelegramStandIn

    def of(self, provider: str) -> Any:
        return getattr(self, provider)


@pytest.fixture(scope="module")
def standins() -> Iterator[StandIns]:
    with (
        MastodonStandIn() as mastodon,
        BlueskyStandIn() as bluesky,
        DiscordWebhookStandIn() as discord,
        TelegramStandIn() as telegram,
    ):
        yield StandIns(mastodon, bluesky, discord, telegram)


# --- The world --------------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    authorization: str
    ids: dict[str, list[str]]
    connect: dict[str, dict[str, Any]]  # provider -> real connect body fields
    cookie: str  # the browser's nonce cookie for the pending grant


CALLBACK = "http://testserver/api/v1/accounts/oauth/callback"


@pytest.fixture
def world(
    make_user: Any,
    provider_settings: Any,
    media_storage: Any,
    delivery_queue: Any,
    standins: StandIns,
) -> World:
    from providers import credentials
    from publishing.models import Account, Destination, OAuthState, ProviderApp, Publication
    from publishing.services import accounts, connection_choices, media, publications
    from workspaces.services import api_token_create, organization_create, workspace_create

    provider_settings.HERALD_BLUESKY_SERVICE_URL = standins.bluesky.url
    provider_settings.HERALD_TELEGRAM_API_URL = standins.telegram.url
    for server in (
        standins.mastodon,
        standins.bluesky,
        standins.discord_webhook,
        standins.telegram,
    ):
        server.reset()

    owner = make_user("fuzz-publisher@example.com")
    actor = Actor(user=owner)
    organization = organization_create(actor=actor, name="Fuzz Publishing Org")
    workspace = workspace_create(
        actor=actor, organization_id=organization.pk, name="Fuzz Publishing"
    )
    _, token = api_token_create(user=owner, name="fuzz", permissions=["api:read", "api:write"])

    # Mastodon: its app registration and a token the stand-in knows, written directly.
    mastodon = standins.mastodon
    app = ProviderApp.objects.create(
        provider="mastodon",
        instance_url=mastodon.url,
        redirect_uri="",
        credentials_encrypted=credentials.encrypt(
            {"client_id": "fuzz", "client_secret": "fuzz-secret"}
        ),
    )
    account_ids = {
        "mastodon": str(
            Account.objects.create(
                workspace=workspace,
                provider="mastodon",
                external_id="1",
                username="herald",
                instance_url=mastodon.url,
                app=app,
                connected_by=owner,
                credentials_encrypted=credentials.encrypt({"access_token": FIXTURE_TOKEN}),
            ).pk
        )
    }
    # Credential providers: connected through the service against their stand-ins.
    for provider in ("bluesky", "discord_webhook", "telegram"):
        account, _ = accounts.account_connect(
            actor=actor,
            workspace_id=workspace.pk,
            provider=provider,
            redirect_uri=CALLBACK,
            fields=connect_fields(provider, standins.of(provider)),
        )
        assert account is not None
        account_ids[provider] = str(account.pk)
    # A pending Mastodon grant: a real state and code for the OAuth callback.
    _, authorization_url = accounts.account_connect(
        actor=actor,
        workspace_id=workspace.pk,
        provider="mastodon",
        redirect_uri=CALLBACK,
        instance_url=mastodon.url,
    )
    assert authorization_url is not None
    nonce, provider_url = bind_browser(authorization_url)
    grant = follow_authorization(provider_url)

    # A pending choice of accounts, as a Facebook Login that reached a Page leaves it.
    choice = connection_choices.choice_create(
        pending=OAuthState(workspace=workspace, user=owner, provider="facebook"),
        found=ConnectionCandidates(
            candidates=[
                Candidate(
                    provider="facebook",
                    account=ConnectedAccount(
                        external_id="1001",
                        username="Herald HQ",
                        credentials={"access_token": "page-token", "page_id": "1001"},
                    ),
                    label="Facebook Page Herald HQ",
                )
            ]
        ),
    )

    png = media.media_upload(
        actor=actor,
        workspace_id=workspace.pk,
        upload=SimpleUploadedFile("pixel.png", tiny_png(), content_type="image/png"),
        alt_text="A pixel",
    )
    spare = media.media_upload(  # in no publication: deleting it succeeds
        actor=actor,
        workspace_id=workspace.pk,
        upload=SimpleUploadedFile("spare.png", tiny_png(4, 4), content_type="image/png"),
    )
    destinations = [
        {
            "account_id": account_ids["mastodon"],
            "media_ids": [str(png.pk)],
            "options": {"visibility": "unlisted"},
        },
        {"account_id": account_ids["bluesky"]},
        {"account_id": account_ids["discord_webhook"]},
        {"account_id": account_ids["telegram"]},
    ]
    draft = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="Hello from the fuzzer",
        destinations=destinations,
    )
    failed = publications.publication_create(
        actor=actor,
        workspace_id=workspace.pk,
        text="This one failed",
        destinations=[
            {"account_id": account_ids["discord_webhook"]},
            {"account_id": account_ids["telegram"]},
        ],
    )
    Publication.objects.filter(pk=failed.pk).update(status=Publication.Status.FAILED)
    Destination.objects.filter(publication=failed).update(
        status=Destination.Status.FAILED,
        attempts=3,
        error_kind="transient",
        error_message="The provider failed.",
        action="retry",
    )
    delivery_queue.clear()

    connect = {
        provider: {"provider": provider, "fields": connect_fields(provider, standins.of(provider))}
        for provider in ("bluesky", "discord_webhook", "telegram")
    }
    connect["mastodon"] = {"provider": "mastodon", "instance_url": mastodon.url}
    return World(
        authorization=f"Bearer {token}",
        ids={
            "workspace_id": [str(workspace.pk)],
            "account_id": [account_ids[p] for p in PROVIDERS],
            "media_id": [str(png.pk), str(spare.pk)],
            "publication_id": [str(draft.pk), str(failed.pk)],
            "choice_id": [str(choice.pk)],
            "state": [grant["state"]],
            "code": [grant["code"]],
            "provider": list(PROVIDERS),
        },
        connect=connect,
        cookie=f"{accounts.oauth_nonce_cookie_name(grant['state'])}={nonce}",
    )


# --- Generation ------------------------------------------------------------------------------


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    from schemathesis import GenerationMode

    strategies = [
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    ]
    names = [p.name for p in operation.path_parameters]
    if names:
        # Real IDs: reach past the 404 into validation, permissions, the services, the providers.
        for index in range(max(len(world.ids[name]) for name in names)):
            fixed = {name: world.ids[name][index % len(world.ids[name])] for name in names}
            strategies.append(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed))
            strategies.append(operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=fixed))
    # Real values in the query and the body too (and real path IDs when the path has any); the
    # drawn number picks which real value where there are several.
    real_paths = [
        {name: world.ids[name][index % len(world.ids[name])] for name in names}
        for index in range(max((len(world.ids[name]) for name in names), default=1))
    ]
    for fixed_path in real_paths:
        strategies.append(
            st.tuples(
                operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed_path or None),
                st.integers(min_value=0, max_value=2**16),
            ).map(lambda pair: _with_real_values(pair[0], world, pair[1]))
        )
    return st.one_of(strategies)


def _pick(values: list[str], seed: int, offset: int = 0) -> str:
    return values[(seed + offset) % len(values)]


def _with_real_values(case: Any, world: World, seed: int) -> Any:
    ids = world.ids
    if isinstance(case.query, dict):
        query = dict(case.query)
        if "workspace_id" in query:
            query["workspace_id"] = ids["workspace_id"][0]
        if "state" in query:  # the callback: the pending grant, mostly without an error
            query.update(state=ids["state"][0], code=ids["code"][0])
            if seed % 3:
                query.pop("error", None)
        if "account_id" in query:
            query["account_id"] = _pick(ids["account_id"], seed)
        if "provider" in query:
            query["provider"] = _pick(ids["provider"], seed)
        if "account_ids" in query:
            query["account_ids"] = ",".join(ids["account_id"][: 1 + seed % len(ids["account_id"])])
        case.query = query
    if not isinstance(case.body, dict):
        return case
    body = dict(case.body)
    if "workspace_id" in body:
        body["workspace_id"] = ids["workspace_id"][0]
    if isinstance(body.get("provider"), str):  # a connect: a real provider with real fields
        provider = _pick(ids["provider"], seed)
        body = {key: value for key, value in body.items() if key not in {"fields", "instance_url"}}
        body.update(world.connect[provider])
    if "file" in body:  # a media upload: a real PNG
        body["file"] = tiny_png()
    if isinstance(body.get("media_ids"), list) and body["media_ids"]:
        body["media_ids"] = list(ids["media_id"][: 1 + seed % 2])
    # Some seeds also tidy what the generator rarely gets right (option names, profiles, a short
    # text, a future time, the current revision), so that the services' success paths run too.
    tidy = seed % 4 == 0
    if isinstance(body.get("destinations"), list):
        destinations = []
        for index, item in enumerate(body["destinations"][: len(ids["account_id"])]):
            if isinstance(item, dict):
                item = {**item, "account_id": _pick(ids["account_id"], seed, index)}
                if isinstance(item.get("media_ids"), list) and item["media_ids"]:
                    item["media_ids"] = list(ids["media_id"][:1])
                if tidy:
                    item = {k: v for k, v in item.items() if k in {"account_id", "media_ids"}}
            destinations.append(item)
        body["destinations"] = destinations
        if tidy:
            body["text"] = "Hello from the fuzzer"
    if "scheduled_at" in body and tidy:
        body["scheduled_at"] = (timezone.now() + timedelta(days=1 + seed % 30)).isoformat()
    if isinstance(body.get("expected_revision"), int) and seed % 4 < 2:
        body["expected_revision"] = 1  # the revision of the world's publications
    case.body = body
    return case


def test_every_publishing_operation_is_fuzzed() -> None:
    assert {operation_label(op) for op in OPERATIONS} == EXPECTED_OPERATIONS
    # None of them is session-only: the bearer token reaches them all.
    for operation in OPERATIONS:
        security = operation.definition.raw.get("security")
        assert security is None or security == [] or {"bearerAuth": []} in security, (
            operation_label(operation)
        )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", OPERATIONS, ids=operation_label)
def test_operation_honours_its_contract(operation: Any, world: World) -> None:
    from django.db import connection

    assert not connection.in_atomic_block  # the app's commits are real; no test transaction
    # The callback's pending grant completes only with its browser's nonce cookie.
    headers = {"Authorization": world.authorization, "Cookie": world.cookie}

    assert_contract_holds(_strategy(operation, world), headers=headers, examples=MAX_EXAMPLES * 2)


# --- Inputs the generator rarely produces ---------------------------------------------------

EDGE_CASES: list[tuple[str, Any, dict[str, str], dict[str, Any], int]] = [
    # (operation, JSON body (ids filled in) or None, extra headers, query, expected status)
    ("GET /api/v1/media/{media_id}", None, {}, {}, 200),
    ("GET /api/v1/publications/{publication_id}", None, {}, {}, 200),
    ("GET /api/v1/accounts/{account_id}/destination-options", None, {}, {}, 200),
    (
        "POST /api/v1/publications/{publication_id}/cancel",
        None,
        {"Idempotency-Key": "x" * 201},
        {},
        422,
    ),
    (
        "POST /api/v1/publications/{publication_id}/retry-failed",
        None,
        {"Idempotency-Key": ""},
        {},
        422,
    ),
    (
        "POST /api/v1/publications/{publication_id}/publish-now",
        {},
        {"Idempotency-Key": "k" * 200},
        {},
        202,
    ),
    ("POST /api/v1/publications", {"destinations": [{"options": {"visibility": 1}}]}, {}, {}, 422),
    (
        "POST /api/v1/publications",
        {"destinations": [{"options": {"visibility": None}}]},
        {},
        {},
        422,
    ),
    ("POST /api/v1/publications", {"destinations": [{"options": ["public"]}]}, {}, {}, 422),
    (
        "POST /api/v1/publications",
        {"text": "Hi", "destinations": [{"text": None, "media_ids": None}]},
        {},
        {},
        201,
    ),
    ("POST /api/v1/media", {"workspace_id": "x"}, {}, {}, 415),
    (
        "POST /api/v1/accounts/connect",
        {"provider": "mastodon", "instance_url": "https://mastodon.invalid"},
        {},
        {},
        502,
    ),
    (
        "POST /api/v1/accounts/connect",
        {"provider": "telegram", "fields": {"bot_token": 5}},
        {},
        {},
        422,
    ),
    ("GET /api/v1/accounts/oauth/callback", None, {}, {"state": "unknown", "code": "x"}, 404),
    (
        "GET /api/v1/accounts/oauth/callback",
        None,
        {},
        {"state": "unknown", "error": "access_denied"},
        404,
    ),
    ("GET /api/v1/capabilities", None, {}, {"account_ids": "not-a-uuid"}, 404),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("label", "body", "extra_headers", "query", "status"),
    EDGE_CASES,
    ids=[f"{c[0]} {c[4]} {index}" for index, c in enumerate(EDGE_CASES)],
)
def test_edge_case_answers_within_the_contract(
    label: str,
    body: Any,
    extra_headers: dict[str, str],
    query: dict[str, Any],
    status: int,
    world: World,
) -> None:
    import json

    operation = {operation_label(op): op for op in OPERATIONS}[label]
    ids = world.ids
    path_parameters = {p.name: ids[p.name][0] for p in operation.path_parameters}
    if "workspace_id" in {p.name for p in operation.query} or label.startswith(
        "GET /api/v1/capabilities"
    ):
        query = {"workspace_id": ids["workspace_id"][0], **query}
    case = operation.Case(path_parameters=path_parameters or None, query=query or None)
    headers = {"Authorization": world.authorization, **extra_headers}
    kwargs: dict[str, Any] = {}
    if body is not None:
        if "destinations" in body or "provider" in body:
            body = {"workspace_id": ids["workspace_id"][0], **body}
        if "destinations" in body:
            body["destinations"] = [
                {"account_id": ids["account_id"][0], **item} for item in body["destinations"]
            ]
        headers.setdefault("Content-Type", "application/json")
        kwargs["data"] = json.dumps(body).encode()
    response = case.call(headers=headers, **kwargs)
    assert response.status_code == status, response.text[:300]
    case.validate_response(response, checks=CHECKS, headers=headers)


@pytest.mark.django_db(transaction=True)
def test_provider_failures_answer_within_the_contract(world: World, standins: StandIns) -> None:
    """Every provider revokes every grant: the calls that reach a provider answer the declared
    502, the accounts they found revoked need reconnecting, and a queue action is then blocked
    by readiness (the declared 409)."""
    import json

    bylabel = {operation_label(op): op for op in OPERATIONS}
    # The callback's pending grant completes only with its browser's nonce cookie.
    headers = {"Authorization": world.authorization, "Cookie": world.cookie}
    for provider in PROVIDERS:
        standins.of(provider).set_faults(reject_tokens=True)

    statuses = {}
    options = bylabel["GET /api/v1/accounts/{account_id}/destination-options"]
    for provider, account_id in zip(PROVIDERS, world.ids["account_id"], strict=True):
        case = options.Case(path_parameters={"account_id": account_id})
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS, headers=headers)
        statuses[provider] = response.status_code
    assert statuses["telegram"] == 502, statuses
    assert set(statuses.values()) <= {200, 502}, statuses

    connect = bylabel["POST /api/v1/accounts/connect"]
    case = connect.Case(
        body={"workspace_id": world.ids["workspace_id"][0], **world.connect["telegram"]},
        media_type="application/json",
    )
    response = case.call(headers=headers)
    assert response.status_code == 502, response.text[:300]
    case.validate_response(response, checks=CHECKS, headers=headers)

    publish = bylabel["POST /api/v1/publications/{publication_id}/publish-now"]
    case = publish.Case(path_parameters={"publication_id": world.ids["publication_id"][0]})
    response = case.call(
        headers={**headers, "Content-Type": "application/json"}, data=json.dumps({}).encode()
    )
    assert response.status_code == 409, response.text[:300]
    assert response.json()["code"] == "readiness_blocked"
    case.validate_response(response, checks=CHECKS, headers=headers)
