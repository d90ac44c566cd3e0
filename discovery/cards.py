"""The idea-card invariants every engine's output must meet, and forbidden-phrase scrubbing.

An Opportunity has a unique (case-insensitive) title, 3 to 5 angles with unique labels, exactly
one platform treatment per requested platform (in the requested order), an ISO date as
``signal_date``, non-blank bounded strings, and no forbidden phrase of the voice profile in any
text. ``validate_opportunities`` enforces all of it; the LLM engine relies on it to refuse a
reply that does not, and the built-in engine's tests assert it.
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from typing import Any

MIN_ANGLES, MAX_ANGLES = 3, 5
LIMITS = {
    "title": 140,
    "hook": 400,
    "why_it_fits": 700,
    "why_now": 700,
    "label": 60,
    "thesis": 500,
    "approach": 700,
    "platform": 40,
    "format": 80,
    "media": 300,
    "objective": 300,
    "rationale": 700,
}
OPPORTUNITY_KEYS = (
    "id",
    "title",
    "hook",
    "signal_date",
    "why_it_fits",
    "why_now",
    "angles",
    "platform_treatments",
)
ANGLE_KEYS = ("id", "label", "thesis", "approach")
TREATMENT_KEYS = ("platform", "format", "media", "objective", "rationale")
IDENTIFIERS = frozenset({"id", "signal_date", "platform", "format"})


class CardError(ValueError):
    """The cards break an invariant; the message says which (no model text is echoed)."""


def stable_id(prefix: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]
    return f"{prefix}_{digest}"


def _phrase_pattern(phrases: list[str]) -> re.Pattern[str] | None:
    cleaned = sorted({p.strip() for p in phrases if p and p.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    return re.compile("|".join(re.escape(p) for p in cleaned), re.IGNORECASE)


def contains_forbidden(text: str, phrases: list[str]) -> bool:
    folded = text.casefold()
    return any(p.strip() and p.strip().casefold() in folded for p in phrases)


def scrub(text: str, phrases: list[str]) -> str:
    """``text`` without any of ``phrases`` (case-insensitive), whitespace tidied. Repeats until
    stable, since removing one occurrence can join the halves of another."""
    pattern = _phrase_pattern(phrases)
    if pattern is None:
        return text
    for _ in range(20):
        cleaned = pattern.sub("", text)
        cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
        cleaned = re.sub(r" +([,.;:!?])", r"\1", cleaned).strip()
        if cleaned == text and not contains_forbidden(cleaned, phrases):
            return cleaned
        text = cleaned
    return "" if contains_forbidden(text, phrases) else text


def scrub_cards(opportunities: list[dict[str, Any]], phrases: list[str]) -> list[dict[str, Any]]:
    """Every string of every card scrubbed of ``phrases`` (ids and dates untouched)."""
    if not [p for p in phrases if p.strip()]:
        return opportunities

    def clean(node: Any, key: str = "") -> Any:
        if isinstance(node, dict):
            return {k: clean(v, k) for k, v in node.items()}
        if isinstance(node, list):
            return [clean(item, key) for item in node]
        if isinstance(node, str) and key not in IDENTIFIERS:
            return scrub(node, phrases)
        return node

    return [clean(item) for item in opportunities]


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CardError(f"{where}.{name} must be a non-blank string")
    if len(value) > LIMITS.get(name, 200):
        raise CardError(f"{where}.{name} is longer than {LIMITS.get(name, 200)} characters")
    return value


def _exact_keys(item: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise CardError(f"{where} must be an object")
    if set(item) != set(keys):
        missing = sorted(set(keys) - set(item))
        extra = sorted(set(item) - set(keys))
        raise CardError(f"{where} has missing members {missing} or unknown members {extra}")
    return item


def validate_opportunities(
    items: Any, *, platforms: list[str], limit: int, forbidden: list[str]
) -> list[dict[str, Any]]:
    """The cards, checked against every invariant (``CardError`` otherwise), with the
    treatments in the requested platform order."""
    if not isinstance(items, list) or not 1 <= len(items) <= limit:
        raise CardError(f"opportunities must be an array of 1 to {limit} cards")
    titles: set[str] = set()
    ids: set[str] = set()
    out: list[dict[str, Any]] = []
    for index, raw in enumerate(items):
        where = f"opportunities[{index}]"
        card = _exact_keys(raw, OPPORTUNITY_KEYS, where)
        for name in ("id", "title", "hook", "why_it_fits", "why_now"):
            _text(card[name], where, name)
        _unique(card["id"], ids, f"{where}.id repeats another card's id")
        title = card["title"].strip().casefold()
        _unique(title, titles, f"{where}.title repeats another card's title")
        _check_date(card["signal_date"], where)
        _check_angles(card["angles"], where)
        by_platform = _treatments_by_platform(card["platform_treatments"], where)
        if sorted(by_platform) != sorted(platforms):
            raise CardError(f"{where}.platform_treatments must cover exactly {platforms}")
        _check_forbidden(card, where, forbidden)
        out.append({**card, "platform_treatments": [by_platform[p] for p in platforms]})
    return out


def _unique(key: str, seen: set[str], message: str) -> None:
    if key in seen:
        raise CardError(message)
    seen.add(key)


def _check_date(value: Any, where: str) -> None:
    try:
        if not isinstance(value, str) or len(value) != 10:
            raise ValueError
        date.fromisoformat(value)
    except ValueError as exc:
        raise CardError(f"{where}.signal_date must be an ISO date (YYYY-MM-DD)") from exc


def _check_angles(angles: Any, where: str) -> None:
    if not isinstance(angles, list) or not MIN_ANGLES <= len(angles) <= MAX_ANGLES:
        raise CardError(f"{where}.angles must hold {MIN_ANGLES} to {MAX_ANGLES} angles")
    labels: set[str] = set()
    ids: set[str] = set()
    for index, raw in enumerate(angles):
        angle_where = f"{where}.angles[{index}]"
        angle = _exact_keys(raw, ANGLE_KEYS, angle_where)
        for name in ANGLE_KEYS:
            _text(angle[name], angle_where, name)
        label = angle["label"].strip().casefold()
        _unique(label, labels, f"{angle_where}.label repeats another angle's label")
        _unique(angle["id"], ids, f"{angle_where}.id repeats another angle's id")


def _treatments_by_platform(treatments: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(treatments, list):
        raise CardError(f"{where}.platform_treatments must be an array")
    by_platform: dict[str, dict[str, Any]] = {}
    for index, raw in enumerate(treatments):
        treatment_where = f"{where}.platform_treatments[{index}]"
        treatment = _exact_keys(raw, TREATMENT_KEYS, treatment_where)
        for name in TREATMENT_KEYS:
            _text(treatment[name], treatment_where, name)
        if treatment["platform"] in by_platform:
            raise CardError(f"{treatment_where}.platform repeats another treatment's platform")
        by_platform[treatment["platform"]] = treatment
    return by_platform


def _check_forbidden(card: dict[str, Any], where: str, forbidden: list[str]) -> None:
    for name, value in _strings(card):
        if name.rsplit(".", 1)[-1] in IDENTIFIERS:
            continue  # ids, dates, platform and format names are not prose
        if contains_forbidden(value, forbidden):
            raise CardError(f"{where}.{name} contains a forbidden phrase")


def _strings(node: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        found: list[tuple[str, str]] = []
        for key, value in node.items():
            found.extend(_strings(value, f"{path}.{key}" if path else str(key)))
        return found
    if isinstance(node, list):
        found = []
        for index, value in enumerate(node):
            found.extend(_strings(value, f"{path}[{index}]"))
        return found
    return [(path, node)] if isinstance(node, str) else []
