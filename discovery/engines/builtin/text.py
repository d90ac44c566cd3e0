"""Word and sentence helpers of the built-in engine: tokens and relevance for matching topics
against posts and the profile, and the small text shapers (clip, first sentence, joins)."""

from __future__ import annotations

import re

_STOPWORDS = frozenset(
    """
    about above after again against also among because been before being below between
    both could does doing down during each from further have having here into just like more
    most much must only other over same should some such than that their them then there
    these they this those through under until very what when where which while with would
    your yours ours make makes made using used uses need needs want wants thing things
    """.split()  # noqa: SIM905 (a word list reads better as prose)
)
_WORD = re.compile(r"[^\W\d_][\w'+#.-]*", re.UNICODE)


def _ordered_tokens(text: str) -> list[str]:
    words = (w.strip(".'-").casefold() for w in _WORD.findall(text))
    out: list[str] = []
    for word in words:
        if len(word) >= 4 and word not in _STOPWORDS and word not in out:
            out.append(word)
    return out


def _tokens(text: str) -> set[str]:
    return set(_ordered_tokens(text))


def _relevance(topic: str, text: str) -> float:
    """Shared words, the topic's leading words weighing a little more (its head noun phrase)."""
    other = _tokens(text)
    return sum(1 + 0.5 / (i + 1) for i, word in enumerate(_ordered_tokens(topic)) if word in other)


def _covers(topic_tokens: set[str], text_tokens: set[str]) -> bool:
    if not topic_tokens:
        return False
    needed = min(2, len(topic_tokens))
    return len(topic_tokens & text_tokens) >= needed


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-—") + "…"


def _gist(text: str, limit: int = 70) -> str:
    """The first sentence (or line) of a post, clipped."""
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0] if text.strip() else ""
    return _clip(first.strip().rstrip(".!?"), limit)


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    return text if text[-1] in ".!?…" else text + "."


def _lower_first(text: str) -> str:
    """Lower-case the first letter for use mid-sentence, unless the first word looks like a
    name or an acronym (a capital after its first letter: "PostgreSQL", "CI")."""
    first = text.split(" ", 1)[0]
    if first == "I" or first.startswith("I'"):
        return text
    if first[1:] == first[1:].lower():
        return text[:1].lower() + text[1:]
    return text


def _join(items: list[str]) -> str:
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _is_lead_in(expression: str) -> bool:
    """A short opener such as "Here's the thing" or "Hot take:" (at most five words, no
    inner punctuation), as opposed to a slogan such as "Ship small, ship often"."""
    body = expression.strip().rstrip(":")
    return 0 < len(body.split()) <= 5 and not re.search(r"[,;.!?…—]", body)
