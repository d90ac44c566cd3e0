"""Voice definition validation: every limit is refused with a 422 at its
exact location, on create and on replace; text is trimmed, CRLF becomes LF, control characters
are refused; lists drop case-insensitive duplicates; an empty definition is valid."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from config.errors import FieldValidationError
from tests.problem_asserts import assert_invalid
from voice import services
from voice.definition import (
    MAX_DEFINITION_BYTES,
    MEMBERS,
    DefinitionError,
    clean_definition,
    empty_definition,
    encoded_size,
    stored_definition,
)
from voice.models import VoiceProfile
from workspaces.access import Actor

pytestmark = pytest.mark.django_db

API = "/api/v1"

LISTS_200 = ["traits", "vocabulary", "recurring_expressions", "expertise", "forbidden_phrases"]
LISTS_400 = ["boundaries", "disliked_patterns"]


def put(client: APIClient, profile: VoiceProfile, definition: Any) -> Any:
    return client.put(
        f"{API}/voice-profiles/{profile.pk}",
        {
            "workspace_id": str(profile.workspace_id),
            "name": profile.name,
            "definition": definition,
            "expected_revision": profile.revision,
        },
        format="json",
    )


@pytest.fixture
def profile(workspace: Any) -> VoiceProfile:
    return VoiceProfile.objects.get(workspace=workspace, is_default=True)


def distinct(count: int, length: int = 10) -> list[str]:
    return [f"{n:03d}".ljust(length, "x") for n in range(count)]


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("identity_summary", {"identity_summary": "a" * 1201}, "body.definition.identity_summary"),
    ("preferred_language", {"preferred_language": "e" * 81}, "body.definition.preferred_language"),
    (
        "preferred_language one line",
        {"preferred_language": "English\nGerman"},
        "body.definition.preferred_language",
    ),
    ("humor", {"humor": "h" * 401}, "body.definition.humor"),
    ("formality", {"formality": "f" * 401}, "body.definition.formality"),
    ("string type", {"humor": 5}, "body.definition.humor"),
    ("control character", {"identity_summary": "bell\x07"}, "body.definition.identity_summary"),
    ("opinions count", {"opinions": distinct(41)}, "body.definition.opinions"),
    ("opinions item", {"opinions": ["fine", "o" * 601]}, "body.definition.opinions[1]"),
    ("list type", {"traits": "direct"}, "body.definition.traits"),
    ("blank item", {"traits": ["ok", "   "]}, "body.definition.traits[1]"),
    ("item type", {"traits": ["ok", 3]}, "body.definition.traits[1]"),
    ("item control character", {"vocabulary": ["null\x00byte"]}, "body.definition.vocabulary[0]"),
    (
        "examples count",
        {"examples": [{"text": t} for t in distinct(21)]},
        "body.definition.examples",
    ),
    (
        "examples text required",
        {"examples": [{"platform": "mastodon"}]},
        "body.definition.examples[0].text",
    ),
    ("examples text blank", {"examples": [{"text": "  "}]}, "body.definition.examples[0].text"),
    ("examples text", {"examples": [{"text": "t" * 4001}]}, "body.definition.examples[0].text"),
    (
        "examples platform",
        {"examples": [{"text": "t", "platform": "p" * 81}]},
        "body.definition.examples[0].platform",
    ),
    (
        "examples why_it_fits",
        {"examples": [{"text": "t", "why_it_fits": "w" * 501}]},
        "body.definition.examples[0].why_it_fits",
    ),
    (
        "examples unknown member",
        {"examples": [{"text": "t", "url": "x"}]},
        "body.definition.examples[0].url",
    ),
    ("examples item type", {"examples": ["just text"]}, "body.definition.examples[0]"),
    (
        "corrections count",
        {"corrections": [{"original": t, "preferred": t} for t in distinct(21)]},
        "body.definition.corrections",
    ),
    (
        "corrections original required",
        {"corrections": [{"preferred": "p"}]},
        "body.definition.corrections[0].original",
    ),
    (
        "corrections preferred required",
        {"corrections": [{"original": "o"}]},
        "body.definition.corrections[0].preferred",
    ),
    (
        "corrections original",
        {"corrections": [{"original": "o" * 3001, "preferred": "p"}]},
        "body.definition.corrections[0].original",
    ),
    (
        "corrections preferred",
        {"corrections": [{"original": "o", "preferred": "p" * 3001}]},
        "body.definition.corrections[0].preferred",
    ),
    (
        "corrections lesson",
        {"corrections": [{"original": "o", "preferred": "p", "lesson": "l" * 601}]},
        "body.definition.corrections[0].lesson",
    ),
    (
        "interview count",
        {"interview_answers": [{"question": t, "answer": t} for t in distinct(21)]},
        "body.definition.interview_answers",
    ),
    (
        "interview question required",
        {"interview_answers": [{"answer": "a"}]},
        "body.definition.interview_answers[0].question",
    ),
    (
        "interview answer required",
        {"interview_answers": [{"question": "q"}]},
        "body.definition.interview_answers[0].answer",
    ),
    (
        "interview question",
        {"interview_answers": [{"question": "q" * 501, "answer": "a"}]},
        "body.definition.interview_answers[0].question",
    ),
    (
        "interview answer",
        {"interview_answers": [{"question": "q", "answer": "a" * 4001}]},
        "body.definition.interview_answers[0].answer",
    ),
    ("unknown member", {"tone": "calm"}, "body.definition.tone"),
    (
        "object member control character",
        {"examples": [{"text": "nul\x00byte"}]},
        "body.definition.examples[0].text",
    ),
    ("DEL character", {"humor": "dry\x7f"}, "body.definition.humor"),
    (
        "C1 control character",
        {"boundaries": ["ok", "next\x85line"]},
        "body.definition.boundaries[1]",
    ),
    (
        "tab in one-line text",
        {"preferred_language": "English\tGerman"},
        "body.definition.preferred_language",
    ),
    (
        "CRLF in one-line text",
        {"preferred_language": "English\r\nGerman"},
        "body.definition.preferred_language",
    ),
    ("limit counted after trimming", {"humor": "  " + "h" * 401 + "  "}, "body.definition.humor"),
]
CASES += [
    (f"{name} count", {name: distinct(41)}, f"body.definition.{name}")
    for name in LISTS_200 + LISTS_400
]
CASES += [
    (f"{name} item", {name: ["ok", "i" * 201]}, f"body.definition.{name}[1]") for name in LISTS_200
]
CASES += [
    (f"{name} item", {name: ["ok", "i" * 401]}, f"body.definition.{name}[1]") for name in LISTS_400
]


@pytest.mark.parametrize(("case", "definition", "location"), CASES, ids=[c[0] for c in CASES])
def test_each_limit_is_refused_at_its_location(
    owner_client: APIClient,
    profile: VoiceProfile,
    case: str,
    definition: dict[str, Any],
    location: str,
) -> None:
    assert_invalid(put(owner_client, profile, definition), location)
    stored = VoiceProfile.objects.get(pk=profile.pk)
    assert stored.revision == 1  # nothing changed


def test_create_reports_the_same_locations(owner_client: APIClient, workspace: Any) -> None:
    response = owner_client.post(
        f"{API}/voice-profiles",
        {"workspace_id": str(workspace.pk), "name": "New", "definition": {"traits": ["t" * 201]}},
        format="json",
    )
    assert_invalid(response, "body.definition.traits[0]")


def test_every_failing_member_is_listed(owner_client: APIClient, profile: VoiceProfile) -> None:
    body = assert_invalid(
        put(owner_client, profile, {"humor": "h" * 401, "traits": ["x" * 201], "examples": [{}]}),
        "body.definition.humor",
        "body.definition.traits[0]",
        "body.definition.examples[0].text",
    )
    assert len(body["errors"]) == 3


def test_definition_must_be_an_object(owner_client: APIClient, profile: VoiceProfile) -> None:
    assert_invalid(put(owner_client, profile, ["traits"]), "body.definition")


@pytest.mark.parametrize("name", LISTS_200 + LISTS_400 + ["opinions"])
def test_lists_at_their_limits_are_accepted(
    owner_client: APIClient, profile: VoiceProfile, name: str
) -> None:
    length = 200 if name in LISTS_200 else 600 if name == "opinions" else 400
    items = [f"{n:03d}".ljust(length, "x") for n in range(40)]
    response = put(owner_client, profile, {name: items})
    assert response.status_code == 200, response.content[:400]
    assert response.json()["definition"][name] == items


def test_strings_and_objects_at_their_limits_are_accepted(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    definition = {
        "identity_summary": "i" * 1200,
        "preferred_language": "l" * 80,
        "humor": "h" * 400,
        "formality": "f" * 400,
        "examples": [{"text": "t" * 4000, "platform": "p" * 80, "why_it_fits": "w" * 500}],
        "corrections": [{"original": "o" * 3000, "preferred": "p" * 3000, "lesson": "l" * 600}],
        "interview_answers": [{"question": "q" * 500, "answer": "a" * 4000}],
    }
    response = put(owner_client, profile, definition)
    assert response.status_code == 200, response.content[:400]
    stored = response.json()["definition"]
    assert stored["identity_summary"] == definition["identity_summary"]
    assert stored["examples"] == definition["examples"]


def test_text_is_trimmed_and_line_endings_normalised(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    response = put(
        owner_client,
        profile,
        {
            "identity_summary": "  I build things.\r\nThen I write about them.\rDone.  ",
            "preferred_language": "  English ",
            "examples": [{"text": " Line one\r\n\tindented ", "platform": " mastodon "}],
            "traits": ["  Direct  "],
        },
    )
    definition = response.json()["definition"]
    assert definition["identity_summary"] == "I build things.\nThen I write about them.\nDone."
    assert definition["preferred_language"] == "English"
    assert definition["examples"] == [
        {"text": "Line one\n\tindented", "platform": "mastodon", "why_it_fits": ""}
    ]
    assert definition["traits"] == ["Direct"]


def test_limits_apply_after_cleaning(owner_client: APIClient, profile: VoiceProfile) -> None:
    """400 characters once trimmed, and CRLF counted as one character: accepted."""
    response = put(
        owner_client,
        profile,
        {
            "humor": "   " + "h" * 400 + "\n\n ",
            "formality": ("f" * 199 + "\r\n") * 2,  # 402 characters sent, 400 after CRLF -> LF
        },
    )
    assert response.status_code == 200, response.content[:400]
    assert response.json()["definition"]["humor"] == "h" * 400
    assert len(response.json()["definition"]["formality"]) == 399  # the final LF is trimmed


def test_lists_drop_duplicates_case_insensitively(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    response = put(
        owner_client,
        profile,
        {
            "traits": ["Direct", "direct", " DIRECT ", "Warm", "STRASSE", "straße"],
            "forbidden_phrases": ["Synergy", "synergy"],
            "examples": [{"text": "Same"}, {"text": "same"}, {"text": "Other"}],
        },
    )
    definition = response.json()["definition"]
    assert definition["traits"] == ["Direct", "Warm", "STRASSE"]
    assert definition["forbidden_phrases"] == ["Synergy"]
    assert [e["text"] for e in definition["examples"]] == ["Same", "Other"]


def test_duplicates_do_not_count_towards_the_item_limit(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    items = [*distinct(40), distinct(40)[0].upper()]
    response = put(owner_client, profile, {"traits": items})
    assert response.status_code == 200
    assert len(response.json()["definition"]["traits"]) == 40


def test_an_empty_definition_is_valid(owner_client: APIClient, profile: VoiceProfile) -> None:
    response = put(owner_client, profile, {})
    assert response.status_code == 200
    assert all(value in ("", []) for value in response.json()["definition"].values())


def test_the_whole_definition_is_at_most_64_kib(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    # Every member within its own limit, yet the whole is over 64 KiB.
    big = {"examples": [{"text": f"{n:02d}" + "e" * 3990} for n in range(20)]}
    assert_invalid(put(owner_client, profile, big), "body.definition")
    assert VoiceProfile.objects.get(pk=profile.pk).revision == 1

    fits = {"examples": [{"text": f"{n:02d}" + "e" * 3990} for n in range(15)]}
    response = put(owner_client, profile, fits)
    assert response.status_code == 200
    assert encoded_size(response.json()["definition"]) <= MAX_DEFINITION_BYTES


def test_multibyte_text_counts_bytes_for_the_whole_limit(
    owner_client: APIClient, profile: VoiceProfile
) -> None:
    # 20 examples of 2,000 three-byte characters: 40,000 characters but ~120 KB of UTF-8.
    big = {"examples": [{"text": f"{n:02d}" + "€" * 1998} for n in range(20)]}
    assert_invalid(put(owner_client, profile, big), "body.definition")


def test_the_service_validates_for_every_caller(user: Any, profile: VoiceProfile) -> None:
    """The CLI and tool interface call the service directly: same rules, same locations."""
    with pytest.raises(FieldValidationError) as caught:
        services.voice_profile_replace(
            actor=Actor(user=user),
            voice_profile_id=profile.pk,
            workspace_id=profile.workspace_id,
            name="Default voice",
            definition={"traits": ["ok", "x" * 201]},
            expected_revision=1,
        )
    assert [e["location"] for e in caught.value.errors] == ["body.definition.traits[1]"]
    with pytest.raises(FieldValidationError) as caught:
        services.voice_profile_create(
            actor=Actor(user=user),
            workspace_id=profile.workspace_id,
            name="Bell\x07",
            definition={},
        )
    assert [e["location"] for e in caught.value.errors] == ["body.name"]


@pytest.mark.parametrize(
    ("name", "location"), [("", "body.name"), ("n" * 81, "body.name"), ("Two\nlines", "body.name")]
)
def test_profile_names(owner_client: APIClient, workspace: Any, name: str, location: str) -> None:
    response = owner_client.post(
        f"{API}/voice-profiles", {"workspace_id": str(workspace.pk), "name": name}, format="json"
    )
    assert_invalid(response, location)


def test_errors_come_in_member_order_with_their_paths() -> None:
    """Unknown members first, then single strings, string lists and object lists, each in the
    order of its table; the message joins them."""
    with pytest.raises(DefinitionError) as excinfo:
        clean_definition(
            {
                "examples": ["not an object", {"text": "ok", "mood": "x"}, {"platform": "x"}],
                "traits": "not a list",
                "humor": 7,
                "zeal": 1,
                3: "a key that is no string",
            }
        )
    assert excinfo.value.errors == [
        ("3", "Unknown field."),
        ("zeal", "Unknown field."),
        ("humor", "Must be a string."),
        ("traits", "Must be an array of strings."),
        ("examples[0]", "Must be an object."),
        ("examples[1].mood", "Unknown field."),
        ("examples[2].text", "This field is required."),
    ]
    assert str(excinfo.value).startswith("3: Unknown field.; zeal: Unknown field.; humor:")
    with pytest.raises(DefinitionError) as excinfo:
        clean_definition("not an object")
    assert str(excinfo.value) == "definition: Must be an object."


def test_blank_items_are_refused_and_objects_are_compared_whole() -> None:
    with pytest.raises(DefinitionError) as excinfo:
        clean_definition({"traits": ["", "Calm", "calm "]})
    assert excinfo.value.errors == [("traits[0]", "Items may not be blank.")]
    cleaned = clean_definition(
        {
            "corrections": [
                {"original": "A", "preferred": "B"},
                {"original": "a", "preferred": "b", "lesson": ""},
                {"original": "a", "preferred": "b", "lesson": "Keep it short"},
            ]
        }
    )
    assert cleaned["corrections"] == [
        {"original": "A", "preferred": "B", "lesson": ""},
        {"original": "a", "preferred": "b", "lesson": "Keep it short"},
    ]
    assert set(cleaned) == set(MEMBERS)


def test_a_stored_definition_gains_the_members_it_lacks() -> None:
    stored = stored_definition({"humor": "dry", "retired": "x"})
    assert stored == {**empty_definition(), "humor": "dry"}
    assert stored_definition(None) == empty_definition()
