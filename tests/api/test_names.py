"""Names: workspaces, organizations, voice profiles, themes, theme assets and API
tokens refuse invisible and bidirectional-control characters with a 422 at the name, and are
stored NFKC-normalized, so two names that look identical are the same name (a 409 where names
are unique)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from config.api.names import InvalidName, clean_name
from config.errors import FieldValidationError
from tests.problem_asserts import assert_invalid, assert_problem
from tests.providers import tiny_png
from themes.models import Theme, ThemeAsset
from voice.models import VoiceProfile
from workspaces.access import Actor
from workspaces.models import ApiToken, Organization, User, Workspace
from workspaces.services import (
    api_token_create,
    organization_create,
    workspace_create,
    workspace_update,
)

pytestmark = pytest.mark.django_db

API = "/api/v1"

# Each is refused wherever it sits in the name (start, middle, end: trimming must not hide it).
INVISIBLE = [
    "\u200b",  # zero width space
    "\u200c",  # zero width non-joiner
    "\u200d",  # zero width joiner
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u202a",  # left-to-right embedding
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",  # right-to-left override
    "\u2060",  # word joiner
    "\u2061",
    "\u2062",
    "\u2063",
    "\u2064",
    "\u2066",  # left-to-right isolate
    "\u2067",
    "\u2068",
    "\u2069",  # pop directional isolate
    "\ufeff",  # byte order mark / zero width no-break space
    "\u00ad",  # soft hyphen (Cf)
    "\u0007",  # bell (Cc)
    "\u001b",  # escape (Cc)
    "\u0085",  # next line (Cc)
    "\u2028",  # line separator
    "\u2029",  # paragraph separator
    "\U000e0001",  # language tag (Cf)
]


@pytest.mark.parametrize("char", INVISIBLE)
def test_clean_name_refuses_invisible_and_control_characters(char: str) -> None:
    for name in (f"{char}Acme", f"Ac{char}me", f"Acme{char}"):
        with pytest.raises(InvalidName, match=f"U\\+{ord(char):04X}"):
            clean_name(name, max_length=80)


def test_clean_name_normalizes_to_nfkc_and_trims() -> None:
    assert clean_name("  \uff22rand \ufb01les\u3000", max_length=80) == "Brand files"
    assert clean_name("Cafe\u0301", max_length=80) == "Caf\u00e9"  # composed
    assert clean_name("\u2167 plan", max_length=80) == "VIII plan"
    # Visible marks and emoji stay (ZWJ sequences are the exception: the joiner is invisible).
    assert clean_name("Équipe 🚀 ✍️", max_length=80) == "Équipe 🚀 ✍️"
    with pytest.raises(InvalidName, match="blank"):
        clean_name(" \u3000 ", max_length=80)
    with pytest.raises(InvalidName, match="At most 3"):
        clean_name("\ufb03\ufb03", max_length=3)  # 2 characters, 6 once normalized


# --- Every name input, through the API --------------------------------------------------------


@pytest.fixture
def session(session_client: APIClient, csrf_headers: Callable[[Any], dict[str, str]]) -> APIClient:
    session_client.credentials(**csrf_headers(session_client))
    return session_client


def _create(
    kind: str, client: APIClient, session: APIClient, organization: Any, workspace: Any, name: str
) -> Any:
    org, ws = str(organization.pk), str(workspace.pk)
    if kind == "organization":
        return client.post(f"{API}/organizations", {"name": name}, format="json")
    if kind == "workspace":
        return client.post(
            f"{API}/workspaces", {"organization_id": org, "name": name}, format="json"
        )
    if kind == "workspace_rename":
        return client.patch(f"{API}/workspaces/{ws}", {"name": name}, format="json")
    if kind == "voice_profile":
        return client.post(
            f"{API}/voice-profiles", {"workspace_id": ws, "name": name}, format="json"
        )
    if kind == "voice_profile_replace":
        profile = VoiceProfile.objects.get(workspace=workspace, is_default=True)
        current = client.get(f"{API}/voice-profiles/{profile.pk}").json()
        body = {
            "workspace_id": ws,
            "name": name,
            "definition": current["definition"],
            "expected_revision": current["revision"],
        }
        return client.put(f"{API}/voice-profiles/{profile.pk}", body, format="json")
    if kind == "theme":
        return client.post(f"{API}/themes", {"organization_id": org, "name": name}, format="json")
    if kind == "theme_asset":
        handle = io.BytesIO(tiny_png(4, 4))
        handle.name = "a.png"
        body = {"organization_id": org, "kind": "image", "name": name, "file": handle}
        return client.post(f"{API}/theme-assets", body, format="multipart")
    if kind == "api_token":
        return session.post(
            f"{API}/api-tokens", {"name": name, "permissions": ["api:read"]}, format="json"
        )
    raise AssertionError(kind)


KINDS = [
    "organization",
    "workspace",
    "workspace_rename",
    "voice_profile",
    "voice_profile_replace",
    "theme",
    "theme_asset",
    "api_token",
]


def _stored(kind: str, response: Any, workspace: Any) -> str:
    body = response.json()
    if kind == "organization":
        return str(Organization.objects.get(pk=body["id"]).name)
    if kind in ("workspace", "workspace_rename"):
        return str(Workspace.objects.get(pk=body["id"]).name)
    if kind in ("voice_profile", "voice_profile_replace"):
        return str(VoiceProfile.objects.get(pk=body["id"]).name)
    if kind == "theme":
        return str(Theme.objects.get(pk=body["draft"]["theme_id"]).name)
    if kind == "theme_asset":
        return str(ThemeAsset.objects.get(pk=body["id"]).name)
    if kind == "api_token":
        return str(ApiToken.objects.get(pk=body["id"]).name)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("char", ["\u202e", "\u200b", "\ufeff", "\u2066", "\u0007"])
def test_every_name_refuses_invisible_characters_at_its_location(
    kind: str,
    char: str,
    owner_client: APIClient,
    session: APIClient,
    organization: Any,
    workspace: Any,
    media_storage: Any,
) -> None:
    response = _create(kind, owner_client, session, organization, workspace, f"Acme{char}gpj.exe")
    body = assert_invalid(response, "body.name")
    assert f"U+{ord(char):04X}" in body["errors"][0]["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_name_is_stored_nfkc_normalized(
    kind: str,
    owner_client: APIClient,
    session: APIClient,
    organization: Any,
    workspace: Any,
    media_storage: Any,
) -> None:
    response = _create(kind, owner_client, session, organization, workspace, " \uff2eew \ufb01le ")
    assert response.status_code in (200, 201), response.content[:500]
    assert _stored(kind, response, workspace) == "New file"


def test_voice_profile_names_that_look_identical_clash(
    owner_client: APIClient, workspace: Any
) -> None:
    ws = str(workspace.pk)
    first = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": ws, "name": "Brand"}, format="json"
    )
    assert first.status_code == 201, first.content
    for lookalike in ("\uff22rand", "\uff22\uff32\uff21\uff2e\uff24", "BRAND"):
        response = owner_client.post(
            f"{API}/voice-profiles", {"workspace_id": ws, "name": lookalike}, format="json"
        )
        assert_problem(response, 409, "name_taken")
    # Decomposed and composed accents are one name too.
    made = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": ws, "name": "Caf\u00e9"}, format="json"
    )
    assert made.status_code == 201
    response = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": ws, "name": "Cafe\u0301"}, format="json"
    )
    assert_problem(response, 409, "name_taken")


def test_workspace_names_that_look_identical_clash(
    owner_client: APIClient, organization: Any, workspace: Any
) -> None:
    org = str(organization.pk)
    response = owner_client.post(
        f"{API}/workspaces", {"organization_id": org, "name": "\uff2dain"}, format="json"
    )
    assert_problem(response, 409, "name_taken")  # the fixture's workspace is "Main"


def test_theme_names_that_look_identical_clash(
    owner_client: APIClient, organization: Any, workspace: Any
) -> None:
    org = str(organization.pk)
    assert (
        owner_client.post(
            f"{API}/themes", {"organization_id": org, "name": "Paper"}, format="json"
        ).status_code
        == 201
    )
    response = owner_client.post(
        f"{API}/themes", {"organization_id": org, "name": "\uff30aper"}, format="json"
    )
    assert_problem(response, 409, "theme_name_taken")


def test_a_bidi_spoof_cannot_pass_for_an_existing_name(
    owner_client: APIClient, workspace: Any, make_user: Callable[..., User]
) -> None:
    ws = str(workspace.pk)
    # "Brand" with an isolate around it renders exactly like "Brand".
    spoof = "\u2066Brand\u2069"
    response = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": ws, "name": spoof}, format="json"
    )
    assert_invalid(response, "body.name")
    assert not VoiceProfile.objects.filter(name__contains="\u2066").exists()


# --- Whatever calls the services ----------------------------------------------------------------
# The Django admin, the developer settings page and the create_api_token command call the same
# services as the API without its serializers: the rule holds there too.

SERVICE_KINDS = ["organization", "workspace", "workspace_rename", "api_token"]


def _via_service(kind: str, user: User, organization: Any, workspace: Any, name: str) -> Any:
    actor = Actor(user=user)
    if kind == "organization":
        return organization_create(actor=actor, name=name)
    if kind == "workspace":
        return workspace_create(actor=actor, organization_id=organization.pk, name=name)
    if kind == "workspace_rename":
        return workspace_update(actor=actor, workspace_id=workspace.pk, name=name)
    if kind == "api_token":
        return api_token_create(user=user, name=name, permissions=["api:read"])[0]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", SERVICE_KINDS)
@pytest.mark.parametrize("char", ["\u202e", "\u200b", "\u2066", "\u0007"])
def test_the_services_refuse_invisible_characters_whoever_calls_them(
    kind: str, char: str, user: User, organization: Any, workspace: Any
) -> None:
    with pytest.raises(FieldValidationError) as caught:
        _via_service(kind, user, organization, workspace, f"Acme{char}gpj.exe")
    [error] = caught.value.errors
    assert error["location"] == "body.name"
    assert f"U+{ord(char):04X}" in error["message"]
    assert not Organization.objects.filter(name__contains=char).exists()
    assert not Workspace.objects.filter(name__contains=char).exists()
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("kind", SERVICE_KINDS)
def test_the_services_store_the_nfkc_form(
    kind: str, user: User, organization: Any, workspace: Any
) -> None:
    made = _via_service(kind, user, organization, workspace, " \uff2eew \ufb01le ")
    made.refresh_from_db()
    assert made.name == "New file"


def test_a_workspace_named_like_another_through_a_service_clashes(
    user: User, organization: Any, workspace: Any
) -> None:
    with pytest.raises(Exception, match="already exists") as caught:
        _via_service("workspace", user, organization, workspace, "\uff2dain")  # "Main"
    assert getattr(caught.value, "code", "") == "name_taken"
    assert Workspace.objects.count() == 1
