"""Building the built-in engine's cards: one card per seed (title, hook, why it fits, angles,
platform treatments), then forbidden phrases scrubbed, damaged cards repaired or dropped, and
every card invariant checked."""

from __future__ import annotations

from typing import Any

from discovery.cards import CardError, scrub, scrub_cards, stable_id, validate_opportunities
from discovery.context import DiscoveryContext
from discovery.engines.builtin.angles import angles as card_angles
from discovery.engines.builtin.profile import Profile
from discovery.engines.builtin.signals import Seed, Signals
from discovery.engines.builtin.text import _clip, _gist, _join, _lower_first, _sentence, _tokens
from discovery.engines.builtin.treatments import treatment

_STARTER_HOOKS = {
    "starter:intro": "Who we are at {name}, what we do, and why we are posting here.",
    "starter:question": "Before we post anything else, a question for you.",
    "starter:behind": "What an ordinary week at {name} actually looks like.",
    "starter:lesson": "A mistake we made, what it cost, and what we do differently now.",
    "starter:tools": "The few tools that keep {name} running, and the one we would drop.",
    "starter:myth": "A belief everyone in our field repeats that our work keeps contradicting.",
    "starter:numbers": "One number from this month says more than a long update.",
    "starter:faq": "The question people ask us most, answered once and properly.",
}


class _Builder:
    def __init__(self, ctx: DiscoveryContext) -> None:
        self.ctx = ctx
        self.profile = Profile(ctx)
        self.forbidden = self.profile.forbidden
        self.signals = Signals(ctx, self.profile)
        self.lead_ins_used = 0

    def cards(self) -> list[dict[str, Any]]:
        cards: list[dict[str, Any]] = []
        titles: set[str] = set()
        for index, seed in enumerate(self.signals.seeds()):
            if len(cards) >= self.ctx.limit:
                break
            if seed.kind == "opinion" and seed.opinion in self.profile.used_opinions:
                continue  # an earlier card already argues it
            title = scrub(seed.title, self.forbidden)
            if not title or title.casefold() in titles or not scrub(seed.topic, self.forbidden):
                continue
            titles.add(title.casefold())
            seed.title = title
            cards.append(self.card(seed, index))
        platforms = [p.provider for p in self.ctx.platforms]
        kept = []
        for card in scrub_cards(cards, self.forbidden):
            card = self.repair(card)
            try:  # a card the forbidden phrases gutted is dropped, never sent half-empty
                validate_opportunities(
                    [card], platforms=platforms, limit=1, forbidden=self.forbidden
                )
            except CardError:
                continue
            kept.append(card)
        if not kept:  # forbidden phrases so broad (single letters) that no card survives
            return []
        return validate_opportunities(
            kept, platforms=platforms, limit=self.ctx.limit, forbidden=self.forbidden
        )

    def repair(self, card: dict[str, Any]) -> dict[str, Any]:
        """After scrubbing: blank texts get a neutral stand-in; angles whose label was
        emptied or now repeats another are dropped, keeping at least three when possible."""
        for name, fallback in (
            ("hook", f"A post about {card['title']}."),
            ("why_it_fits", "It draws on what you know and have published."),
            ("why_now", "It is timely for your audience."),
        ):
            if not card[name]:
                card[name] = scrub(fallback, self.forbidden)
        labels: set[str] = set()
        angles = []
        spare = iter(("Another view", "A second look", "Fresh angle", "Alternative"))
        for angle in card["angles"]:
            label = angle["label"]
            while not label or label.casefold() in labels:
                label = scrub(next(spare, ""), self.forbidden)
                if not label:
                    break
            if not label or not angle["thesis"] or not angle["approach"]:
                continue
            labels.add(label.casefold())
            angles.append({**angle, "label": label})
        card["angles"] = angles[:5]
        return card

    def card(self, seed: Seed, index: int) -> dict[str, Any]:
        card_id = stable_id(
            "opp", self.ctx.workspace_id, seed.key, self.ctx.focus, self.ctx.audience
        )
        if seed.opinion:
            self.profile.used_opinions.add(seed.opinion)
        opinion = seed.opinion or (
            self.profile.matching_opinion(seed.topic) if seed.kind not in {"starter"} else ""
        )
        story = seed.story or self.profile.matching_story(seed.topic)
        angles = card_angles(self.profile, self.ctx, seed, opinion, story, index)
        return {
            "id": card_id,
            "title": _clip(seed.title, 140),
            "hook": self.hook(seed, opinion, index),
            "signal_date": seed.signal_date.isoformat(),
            "why_it_fits": self.why_it_fits(seed, opinion),
            "why_now": _clip(seed.why_now, 700),
            "angles": [
                {"id": stable_id("ang", card_id, angle["label"]), **angle} for angle in angles
            ],
            "platform_treatments": [treatment(p, seed) for p in self.ctx.platforms],
        }

    def hook(self, seed: Seed, opinion: str, index: int) -> str:
        topic = _clip(seed.topic, 120)
        quote = self.profile.quoted(seed.publication)
        if seed.kind in {"follow_up", "covered"} and seed.publication is not None:
            created = seed.publication.created_at
            when = f"{created:%B} {created.day}"
            about = quote or f"about {_lower_first(topic)}"
            line = f"On {when} I wrote {about}. Here is what I have learned since."
        elif seed.kind == "second_chance":
            line = f"Some of you never saw this one: {quote or _lower_first(topic)}."
        elif seed.kind == "interview" and seed.story:
            line = _sentence(_gist(seed.story, 160))
        elif opinion:
            line = _sentence(_clip(opinion, 200))
        elif seed.kind == "starter":
            line = (
                _sentence(_gist(seed.story, 200))
                if seed.story
                else _STARTER_HOOKS[seed.key].format(name=self.ctx.workspace_name)
            )
        else:
            line = f"What I wish someone had told me about {_lower_first(topic)} much earlier."
        # A recurring expression opens a claim (an opinion, a story), never a line that is
        # already framed ("On May 3 I wrote…", "Some of you never saw this one: …").
        is_claim = (seed.kind == "interview" and bool(seed.story)) or (
            bool(opinion) and seed.kind not in {"follow_up", "covered", "second_chance", "starter"}
        )
        # A catchphrase on every card wears thin: at most a third of the hooks carry one.
        expression = self.profile.hook_expression(index) if is_claim else ""
        if (
            expression
            and self.lead_ins_used < max(1, self.ctx.limit // 3)
            and len(expression) + len(line) < 380
        ):
            self.lead_ins_used += 1
            line = f"{expression.rstrip(':')}: {_lower_first(line)}"
        return _clip(line, 400)

    def why_it_fits(self, seed: Seed, opinion: str) -> str:
        parts: list[str] = []
        expertise = [e for e in self.profile.items("expertise") if _tokens(e) & _tokens(seed.topic)]
        if seed.kind in {"gap", "covered"}:
            parts.append(f"“{seed.topic}” is listed in your profile's expertise.")
        elif expertise:
            parts.append(
                f"It draws on your expertise in {_join([f'“{e}”' for e in expertise[:2]])}."
            )
        if opinion and seed.kind != "opinion":
            parts.append(f"It lets you argue a view you hold: “{_clip(opinion, 160)}”.")
        elif seed.kind == "opinion":
            parts.append("It is one of the opinions you recorded in your voice profile.")
        if seed.kind in {"follow_up", "second_chance"}:
            parts.append(
                "It builds on material you already published, so the voice is already yours."
            )
        if self.ctx.audience:
            parts.append(f"It speaks to {self.ctx.audience}.")
        identity = self.profile.text("identity_summary")
        if identity and len(parts) < 3:
            parts.append(f"It fits how you describe yourself: {_clip(identity, 160)}")
        if not parts:
            parts.append(
                f"It suits {self.ctx.workspace_name} and takes no research beyond what you know."
            )
        return _clip(" ".join(_sentence(p) for p in parts), 700)
