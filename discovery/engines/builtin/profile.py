"""Reading the voice profile for the built-in engine: its lists and texts, which opinion, story
or saved example matches a topic, the expressions a hook may open with, the register an angle
is written in, and whether a text is free of the forbidden phrases."""

from __future__ import annotations

from typing import Any

from discovery.context import DiscoveryContext, PastPublication, Voice
from discovery.engines.builtin.text import (
    _clip,
    _gist,
    _is_lead_in,
    _join,
    _lower_first,
    _relevance,
    _sentence,
)


class Profile:
    def __init__(self, ctx: DiscoveryContext) -> None:
        self.voice: Voice | None = ctx.voice
        self.forbidden = ctx.forbidden_phrases
        self.profile_date = self.voice.updated_at.date() if self.voice is not None else ctx.today
        self.used_opinions: set[str] = set()

    def items(self, member: str) -> list[Any]:
        return self.voice.items(member) if self.voice is not None else []

    def text(self, member: str) -> str:
        return self.voice.text(member) if self.voice is not None else ""

    def allowed(self, text: str) -> bool:
        folded = text.casefold()
        return not any(p.casefold() in folded for p in self.forbidden)

    def matching_opinion(self, topic: str, *, claim: bool = True) -> str:
        """The opinion that shares the most words with ``topic`` (first one on ties)."""
        best, best_score = "", 0.0
        for opinion in self.items("opinions"):
            score = _relevance(topic, opinion)
            if score > best_score and opinion not in self.used_opinions:
                best, best_score = opinion, score
        if best and claim:
            self.used_opinions.add(best)
        return best

    def matching_story(self, topic: str) -> str:
        best, best_score = "", 0.0
        for answer in self.items("interview_answers"):
            text = f"{answer.get('question', '')} {answer.get('answer', '')}"
            score = _relevance(topic, text)
            if score > best_score:
                best, best_score = answer.get("answer", ""), score
        return best

    def expression(self, index: int) -> str:
        expressions = [e for e in self.items("recurring_expressions") if len(e) <= 80]
        return expressions[index % len(expressions)] if expressions else ""

    def example(self, index: int, topic: str = "") -> dict[str, str] | None:
        """The saved example closest to ``topic`` (shared words), else one in rotation."""
        examples = self.items("examples")
        if not examples:
            return None
        scored = [(_relevance(topic, e.get("text", "")), -n) for n, e in enumerate(examples)]
        best = max(scored)
        chosen: dict[str, str] = (
            examples[-best[1]] if best[0] > 0 else examples[index % len(examples)]
        )
        return chosen

    def hook_expression(self, index: int) -> str:
        """A recurring expression that can open a hook: a short lead-in ("Here's the thing"),
        never a slogan ("Ship small, ship often") glued to a claim it has nothing to do with;
        slogans are suggested in the angles' approaches instead."""
        lead_ins = [
            e for e in self.items("recurring_expressions") if _is_lead_in(e) and self.allowed(e)
        ]
        return lead_ins[index % len(lead_ins)] if lead_ins else ""

    def quoted(self, post: PastPublication | None) -> str:
        """The post's first sentence in quotes, or "" when it carries a forbidden phrase (a
        scrubbed quote would put words in the author's mouth)."""
        if post is None:
            return ""
        gist = _gist(post.text, 90)
        return f"“{gist}”" if gist and self.allowed(gist) else ""

    def register(self) -> str:
        """One sentence of tone guidance from the profile."""
        bits: list[str] = []
        traits = self.items("traits")[:3]
        if traits:
            bits.append(f"Sound {_join([t.lower() for t in traits])}")
        formality = self.text("formality")
        if formality:
            bits.append(f"formality: {_lower_first(_clip(formality, 80))}")
        humor = self.text("humor")
        if humor:
            bits.append(f"humour: {_lower_first(_clip(humor, 80))}")
        vocabulary = self.items("vocabulary")[:3]
        if vocabulary:
            bits.append(f"reach for words like {_join([f'“{v}”' for v in vocabulary])}")
        language = self.text("preferred_language")
        if language:
            bits.append(f"write in {language}")
        return _sentence("; ".join(bits)) if bits else ""
