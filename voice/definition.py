"""The voice definition: its members, their limits, and the one function that cleans it.

Plain Python (no DRF): the API layer, the services and the data migration share it. Every limit
lives in ``STRING_FIELDS`` / ``LIST_FIELDS`` / ``OBJECT_LIST_FIELDS`` below; the
OpenAPI schema of ``VoiceDefinition`` is generated from the same tables.

Cleaning rules, in order, for every text value:

1. it must be a string;
2. CRLF and lone CR become LF;
3. surrounding whitespace is trimmed;
4. no control characters (Unicode category ``Cc``) other than LF and TAB in multi-line text;
   one-line values (``preferred_language``) refuse LF and TAB as well;
5. at most the member's number of characters (after 2 and 3).

String lists drop blank-free duplicates case-insensitively (the first spelling wins) and then
hold at most their number of items. The whole cleaned definition, as compact UTF-8 JSON, is at
most 64 KiB. An empty object is valid; the cleaned form always carries every member.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

MAX_DEFINITION_BYTES = 64 * 1024
SCHEMA_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True)
class Text:
    max_length: int
    required: bool = False
    one_line: bool = False


# Single strings: name -> rule.
STRING_FIELDS: dict[str, Text] = {
    "identity_summary": Text(1200),
    "preferred_language": Text(80, one_line=True),
    "humor": Text(400),
    "formality": Text(400),
}

# Lists of strings: name -> (max items, rule per item).
LIST_FIELDS: dict[str, tuple[int, Text]] = {
    "traits": (40, Text(200)),
    "vocabulary": (40, Text(200)),
    "recurring_expressions": (40, Text(200)),
    "expertise": (40, Text(200)),
    "forbidden_phrases": (40, Text(200)),
    "opinions": (40, Text(600)),
    "boundaries": (40, Text(400)),
    "disliked_patterns": (40, Text(400)),
}

# Lists of objects: name -> (max items, {member: rule}).
OBJECT_LIST_FIELDS: dict[str, tuple[int, dict[str, Text]]] = {
    "examples": (
        20,
        {"text": Text(4000, required=True), "platform": Text(80), "why_it_fits": Text(500)},
    ),
    "corrections": (
        20,
        {
            "original": Text(3000, required=True),
            "preferred": Text(3000, required=True),
            "lesson": Text(600),
        },
    ),
    "interview_answers": (
        20,
        {"question": Text(500, required=True), "answer": Text(4000, required=True)},
    ),
}

MEMBERS: tuple[str, ...] = tuple(sorted([*STRING_FIELDS, *LIST_FIELDS, *OBJECT_LIST_FIELDS]))


class DefinitionError(ValueError):
    """The definition is invalid. ``errors`` is ``[(path, message)]`` with paths relative to
    the definition: ``""`` (the definition itself), ``"traits"``, ``"traits[3]"``,
    ``"examples[0].text"``."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        super().__init__(
            "; ".join(f"{path or 'definition'}: {message}" for path, message in errors)
        )
        self.errors = errors


def empty_definition() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in MEMBERS:
        out[name] = "" if name in STRING_FIELDS else []
    return out


def _control_characters(value: str, *, one_line: bool) -> bool:
    allowed = set() if one_line else {"\n", "\t"}
    return any(unicodedata.category(char) == "Cc" and char not in allowed for char in value)


def clean_text(value: Any, rule: Text) -> tuple[str, str | None]:
    """(cleaned value, error message or None)."""
    if not isinstance(value, str):
        return "", "Must be a string."
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    if _control_characters(text, one_line=rule.one_line):
        if rule.one_line and ("\n" in text or "\t" in text):
            return text, "Must be one line (no line breaks or tabs)."
        return text, "Must not contain control characters."
    if rule.required and not text:
        return text, "This field is required and may not be blank."
    if len(text) > rule.max_length:
        return text, f"At most {rule.max_length} characters (this has {len(text)})."
    return text, None


def _clean_string(name: str, value: Any, rule: Text, errors: list[tuple[str, str]]) -> str:
    text, error = clean_text(value, rule)
    if error is not None:
        errors.append((name, error))
    return text


def _clean_string_list(
    name: str, value: Any, max_items: int, rule: Text, errors: list[tuple[str, str]]
) -> list[str]:
    if not isinstance(value, list):
        errors.append((name, "Must be an array of strings."))
        return []
    cleaned: list[str] = []
    for index, item in enumerate(value):
        text, error = clean_text(item, rule)
        if error is None and not text:
            error = "Items may not be blank."
        if error is not None:
            errors.append((f"{name}[{index}]", error))
        else:
            cleaned.append(text)
    return _distinct(name, cleaned, str.casefold, max_items, errors)


def _clean_object_list(
    name: str,
    value: Any,
    max_items: int,
    members: dict[str, Text],
    errors: list[tuple[str, str]],
) -> list[dict[str, str]]:
    if not isinstance(value, list):
        errors.append((name, "Must be an array of objects."))
        return []
    cleaned: list[dict[str, str]] = []
    for index, item in enumerate(value):
        found = _clean_object(f"{name}[{index}]", item, members, errors)
        if found is not None:
            cleaned.append(found)

    def key(item: dict[str, str]) -> tuple[str, ...]:
        return tuple(item[member].casefold() for member in sorted(members))

    return _distinct(name, cleaned, key, max_items, errors)


def _clean_object(
    prefix: str, item: Any, members: dict[str, Text], errors: list[tuple[str, str]]
) -> dict[str, str] | None:
    """The cleaned object with every member (absent ones blank), or None when it fails."""
    if not isinstance(item, dict):
        errors.append((prefix, "Must be an object."))
        return None
    failed = [
        (f"{prefix}.{unknown}", "Unknown field.") for unknown in sorted(set(item) - set(members))
    ]
    cleaned: dict[str, str] = {}
    for member, rule in members.items():
        if member not in item:
            if rule.required:
                failed.append((f"{prefix}.{member}", "This field is required."))
            cleaned[member] = ""
            continue
        cleaned[member] = _clean_string(f"{prefix}.{member}", item[member], rule, failed)
    errors.extend(failed)
    return None if failed else cleaned


def _distinct(
    name: str,
    items: list[T],
    key: Callable[[T], Hashable],
    max_items: int,
    errors: list[tuple[str, str]],
) -> list[T]:
    """The first of each set of duplicates (equal ``key``); at most ``max_items`` remain."""
    seen: set[Hashable] = set()
    out: list[T] = []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    if len(out) > max_items:
        errors.append((name, f"At most {max_items} distinct items (this has {len(out)})."))
    return out


def encoded_size(definition: dict[str, Any]) -> int:
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def clean_definition(value: Any) -> dict[str, Any]:
    """The cleaned definition with every member present, or ``DefinitionError``."""
    if not isinstance(value, dict):
        raise DefinitionError([("", "Must be an object.")])
    errors = [
        (str(unknown), "Unknown field.") for unknown in sorted(set(value) - set(MEMBERS), key=str)
    ]
    out = empty_definition()
    out.update(_clean_members(value, errors))
    if not errors:
        errors.extend(_size_errors(out))
    if errors:
        raise DefinitionError(errors)
    return out


def _clean_members(value: dict[Any, Any], errors: list[tuple[str, str]]) -> dict[str, Any]:
    """The members ``value`` has, cleaned: single strings, then string lists, then object lists
    (the order their errors are listed in)."""
    out: dict[str, Any] = {}
    for name, rule in STRING_FIELDS.items():
        if name in value:
            out[name] = _clean_string(name, value[name], rule, errors)
    for name, (max_items, item_rule) in LIST_FIELDS.items():
        if name in value:
            out[name] = _clean_string_list(name, value[name], max_items, item_rule, errors)
    for name, (max_items, members) in OBJECT_LIST_FIELDS.items():
        if name in value:
            out[name] = _clean_object_list(name, value[name], max_items, members, errors)
    return out


def _size_errors(definition: dict[str, Any]) -> list[tuple[str, str]]:
    size = encoded_size(definition)
    if size <= MAX_DEFINITION_BYTES:
        return []
    return [
        ("", f"The definition is {size} bytes as JSON; at most {MAX_DEFINITION_BYTES} (64 KiB).")
    ]


def stored_definition(value: Any) -> dict[str, Any]:
    """A stored definition with every member (rows written before a member existed)."""
    out = empty_definition()
    if isinstance(value, dict):
        out.update({name: value[name] for name in MEMBERS if name in value})
    return out
