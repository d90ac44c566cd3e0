"""The built-in discovery engine: deterministic, no network, no model.

It turns the workspace's own material into idea cards:

* **seeds** (what a card is about), in this order: the requested ``focus``; the profile's
  ``expertise`` the workspace has *not* written about lately (a coverage gap in the last 90
  days; only posts that went out count, a waiting draft is pointed out instead), interleaved with follow-ups to its best-received recent posts (engagement where known,
  else successful delivery); expertise it did cover; ``opinions`` no expertise card used;
  posts whose delivery failed somewhere ("second chance"); ``interview_answers``; and, only
  when the material runs out, starter cards built from the workspace name and ``audience``;
* **angles** from the profile: a stand (a matching opinion), a how-to (the expertise), a story
  (an interview answer or saved example), a myth-vs-reality (disliked patterns, opinions) and
  an audience question — each with an approach in the profile's register (traits, formality,
  humour, vocabulary, recurring expressions, boundaries, patterns to avoid);
* **treatments** from each platform's capability metadata (length limit and counting rule,
  media kinds and counts), the kind of card (its objective and media suggestion), the
  workspace's recent delivery record on that platform and, for a card about an earlier post,
  what happened to that post there.

Forbidden phrases are scrubbed from every text, and the cards are checked against every card
invariant before they leave. Same context → same cards (``generated_at`` aside).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from discovery.cards import (
    MIN_ANGLES,
    CardError,
    scrub,
    scrub_cards,
    stable_id,
    validate_opportunities,
)
from discovery.context import (
    DiscoveryContext,
    PastPublication,
    PlatformFormat,
    PlatformInfo,
    Voice,
)
from discovery.context import EngineResult as Result

NAME = "herald-builtin"
VERSION = "1.1"
MODEL = f"{NAME}/{VERSION}"

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


PLANNED_STATUSES = frozenset({"draft", "scheduled", "publishing"})

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

# Starter angles: (label, thesis, approach); {name} and {audience} are filled in.
_STARTER_ANGLES: dict[str, list[tuple[str, str, str]]] = {
    "starter:intro": [
        ("Who it is for", "Who {name} serves, and the one problem it solves for them.",
         "Name the reader in the first line, then the problem, then what you do about it; no company history."),
        ("What to expect here", "What {audience} will get from these posts, and how often.",
         "Promise two or three kinds of post, then keep the promise in the next ones."),
        ("Why now", "Why {name} starts posting now.",
         "One honest sentence about the moment, then invite people to say hello."),
    ],
    "starter:question": [
        ("One open question", "The one question you most want {audience} to answer.",
         "Ask something people can answer in a one-line reply, and give your own answer first."),
        ("Either-or", "Two options {audience} can pick between, and why you care which wins.",
         "Offer exactly two choices, say which you would pick, and promise to share the result."),
        ("Finish the sentence", "A sentence {audience} complete in the replies.",
         "Start the sentence, leave the end open, and answer the first replies yourself."),
    ],
    "starter:behind": [
        ("One moment this week", "A single moment from this week's work at {name}.",
         "Describe it as if to a friend: where you were, what happened, what it taught you."),
        ("The step nobody sees", "The unglamorous step the finished work depends on.",
         "Show the step (a photo or screenshot works) and say why you never skip it."),
        ("What went wrong", "Something that went wrong this week, and the fix.",
         "Keep it short and specific; end with what you changed."),
    ],
    "starter:lesson": [
        ("The mistake", "The decision that went wrong, told plainly.",
         "Start at the decision, not the backstory; one line on why it seemed right."),
        ("What it cost", "What the mistake cost in time, money or trust.",
         "Use one concrete figure or consequence instead of adjectives."),
        ("The rule now", "The rule you follow since, and how others can apply it.",
         "State the rule in one line, then one example of it in action."),
    ],
    "starter:tools": [
        ("The one to keep", "The one tool {name} could not work without, and why.",
         "Name it, show what it does for you in one example, and say what it replaced."),
        ("The one you dropped", "A popular tool you stopped using, and what you use instead.",
         "Be fair to the tool; the point is the fit, not the brand."),
        ("Your setup in three steps", "How the tools fit together in a normal day.",
         "Three numbered steps, one tool each; a screenshot makes it concrete."),
    ],
    "starter:myth": [
        ("The myth, stated fairly", "The belief, in the words its believers would use.",
         "Quote or paraphrase it fairly before you say anything against it."),
        ("What you saw instead", "The evidence from your own work that contradicts it.",
         "One specific case beats a general argument."),
        ("What to do instead", "The practice you recommend in its place.",
         "End with one step people can try this week."),
    ],
    "starter:numbers": [
        ("The number", "One figure from your recent work, and why it matters.",
         "Lead with the number itself; give the context in one sentence."),
        ("What changed it", "What moved that number, up or down.",
         "Name the one change that made the difference."),
        ("What comes next", "What you will do about it next month.",
         "Make one concrete commitment people can hold you to."),
    ],
    "starter:faq": [
        ("The short answer", "The answer to the question you hear most, in one line.",
         "Quote the question as people ask it, then answer it in a sentence."),
        ("The longer answer", "The nuance the short answer leaves out.",
         "Two or three points, each with an example."),
        ("What people get wrong", "The assumption behind the question that is not quite right.",
         "Correct it kindly; people ask because it is confusing."),
    ],
}


def _is_lead_in(expression: str) -> bool:
    """A short opener such as "Here's the thing" or "Hot take:" (at most five words, no
    inner punctuation), as opposed to a slogan such as "Ship small, ship often"."""
    body = expression.strip().rstrip(":")
    return 0 < len(body.split()) <= 5 and not re.search(r"[,;.!?…—]", body)


@dataclass
class Seed:
    key: str
    kind: str  # focus | gap | covered | follow_up | opinion | second_chance | interview | starter
    topic: str
    signal_date: date
    why_now: str
    title: str
    publication: PastPublication | None = None
    opinion: str = ""
    story: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class BuiltinEngine:
    name = NAME
    version = VERSION
    time_budget_seconds = 5.0  # local computation over at most a few hundred rows

    def discover(self, context: DiscoveryContext) -> Result:
        builder = _Builder(context)
        return Result(model=MODEL, opportunities=builder.cards())


class _Builder:
    def __init__(self, ctx: DiscoveryContext) -> None:
        self.ctx = ctx
        self.voice: Voice | None = ctx.voice
        self.forbidden = ctx.forbidden_phrases
        self.profile_date = (
            self.voice.updated_at.date() if self.voice is not None else ctx.today
        )
        # Coverage counts what went out; drafts and scheduled posts are "planned" (a topic with
        # a draft waiting is not one the audience has heard about).
        self.post_tokens = [(p, _tokens(p.text)) for p in ctx.publications if _published_somewhere(p)]
        self.planned_tokens = [
            (p, _tokens(p.text))
            for p in ctx.publications
            if not _published_somewhere(p) and p.status in PLANNED_STATUSES and p.text.strip()
        ]
        self.used_opinions: set[str] = set()
        self.lead_ins_used = 0

    # --- helpers over the profile -------------------------------------------------------

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

    def coverage(self, topic: str) -> list[PastPublication]:
        """Posts published (somewhere) in the last 90 days that touch ``topic``."""
        topic_tokens = _tokens(topic)
        return [p for p, tokens in self.post_tokens if _covers(topic_tokens, tokens)]

    def planned_note(self, topic: str) -> str:
        """" You already have a draft on it from …" when an unpublished post touches it."""
        topic_tokens = _tokens(topic)
        planned = [p for p, tokens in self.planned_tokens if _covers(topic_tokens, tokens)]
        if not planned:
            return ""
        post = planned[0]  # newest first
        kind = "a draft" if post.status == "draft" else "a scheduled post"
        return (
            f" You already have {kind} on it from {post.created_at.date().isoformat()}: use "
            "this card to sharpen that one rather than start over."
        )

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
        return examples[-best[1]] if best[0] > 0 else examples[index % len(examples)]

    def hook_expression(self, index: int) -> str:
        """A recurring expression that can open a hook: a short lead-in ("Here's the thing"),
        never a slogan ("Ship small, ship often") glued to a claim it has nothing to do with;
        slogans are suggested in the angles' approaches instead."""
        lead_ins = [
            e for e in self.items("recurring_expressions") if _is_lead_in(e) and self.allowed(e)
        ]
        return lead_ins[index % len(lead_ins)] if lead_ins else ""

    # --- seeds --------------------------------------------------------------------------

    def seeds(self) -> list[Seed]:
        ctx = self.ctx
        total = len(self.post_tokens)  # posts that went out somewhere
        focus_seeds: list[Seed] = []
        if ctx.focus:
            covered = self.coverage(ctx.focus)
            if covered:
                last = covered[0].created_at.date().isoformat()
                why = (
                    f"You asked for ideas on this now; {len(covered)} of your last {total} posts "
                    f"touched it (most recently on {last}), so build on what they started."
                )
            else:
                why = (
                    "You asked for ideas on this now, and none of your posts from the last 90 "
                    "days covers it yet."
                ) + self.planned_note(ctx.focus)
            focus_seeds.append(
                Seed("focus", "focus", ctx.focus, ctx.today, why, _clip(ctx.focus, 90))
            )

        expertise = list(self.items("expertise"))
        if ctx.focus:  # expertise closest to the focus first (stable for ties)
            expertise.sort(key=lambda e: -_relevance(ctx.focus, e))
        gaps: list[Seed] = []
        covered_seeds: list[Seed] = []
        for topic in expertise:
            covered = self.coverage(topic)
            if not covered:
                why = (
                    f"It is one of your areas of expertise, yet none of your {total} posts from "
                    "the last 90 days touched it: your audience has not heard your take lately."
                    if total
                    else "It is one of your areas of expertise and a natural first subject: "
                    "nothing has been published from this workspace yet."
                ) + self.planned_note(topic)
                gaps.append(Seed(f"gap:{topic}", "gap", topic, self.profile_date, why, topic))
            else:
                best = max(covered, key=lambda p: (_score(p), p.created_at))
                engaged = _engagement_phrase(best)
                posts = "post" if len(covered) == 1 else "posts"
                why = (
                    f"You covered it in {len(covered)} recent {posts}; the one from "
                    f"{best.created_at.date().isoformat()}{engaged} shows the interest is there "
                    "for a deeper follow-up."
                )
                covered_seeds.append(
                    Seed(
                        f"covered:{topic}", "covered", topic, best.created_at.date(), why,
                        topic, publication=best,
                    )
                )

        follow_ups: list[Seed] = []
        # Posts that failed somewhere get a second run instead; posts a covered-expertise card
        # already builds on are not repeated.
        taken = {s.publication.id for s in covered_seeds if s.publication is not None}
        ranked = sorted(
            (
                p for p in ctx.publications
                if _published_somewhere(p) and p.text.strip() and p.id not in taken
                and not any(o.status == "failed" for o in p.outcomes)
            ),
            key=lambda p: (-_score(p), -p.created_at.timestamp(), p.id),
        )
        for post in ranked[:4]:
            gist = _gist(post.text)
            if not gist:
                continue
            where = _join(sorted({_label(o.provider, ctx) for o in post.outcomes if o.status == "published"}))
            engaged = _engagement_phrase(post)
            why = (
                f"Your post of {post.created_at.date().isoformat()} went out on {where}{engaged}; "
                "a follow-up while it is fresh carries the conversation forward."
            )
            follow_ups.append(
                Seed(
                    f"follow:{post.id}", "follow_up", gist, post.created_at.date(), why,
                    f"Follow-up: {gist}", publication=post,
                )
            )

        second: list[Seed] = []
        for post in ctx.publications:
            failed = sorted({o.provider for o in post.outcomes if o.status == "failed"})
            if not failed or not post.text.strip():
                continue
            gist = _gist(post.text)
            kinds = sorted({o.error_kind for o in post.outcomes if o.status == "failed" and o.error_kind})
            reason = f" ({', '.join(kinds)})" if kinds else ""
            why = (
                f"Your post of {post.created_at.date().isoformat()} failed on "
                f"{_join([_label(p, ctx) for p in failed])}{reason}, so that audience never saw it."
            )
            second.append(
                Seed(
                    f"second:{post.id}", "second_chance", gist, post.created_at.date(), why,
                    f"Second run: {gist}", publication=post,
                )
            )
            if len(second) >= 2:
                break

        opinions: list[Seed] = []
        for opinion in self.items("opinions"):
            why = (
                "It is a view you hold and have not argued in public recently; a clear stand "
                "invites replies."
                if not self.coverage(opinion)
                else "You touched this view recently; the replies deserve a sharper, fuller case."
            )
            opinions.append(
                Seed(
                    f"opinion:{opinion}", "opinion", opinion, self.profile_date, why,
                    f"Where you stand: {_clip(opinion.rstrip('.!'), 80)}", opinion=opinion,
                )
            )

        interviews: list[Seed] = []
        for answer in self.items("interview_answers"):
            question = answer.get("question", "")
            why = (
                "You already answered this in your profile interview; the answer is a ready "
                "first draft in your own words."
            )
            interviews.append(
                Seed(
                    f"interview:{question}", "interview", question, self.profile_date, why,
                    f"In your words: {_clip(question.rstrip('?'), 80)}",
                    story=answer.get("answer", ""),
                )
            )

        ordered = focus_seeds + _interleave(gaps, follow_ups, covered_seeds, opinions, second, interviews)
        return ordered + self.starters()

    def starters(self) -> list[Seed]:
        ctx = self.ctx
        audience = ctx.audience or "the people who follow your work"
        name = ctx.workspace_name
        identity = self.text("identity_summary")
        today = ctx.today
        starters = [
            (
                "starter:intro",
                f"What {name} is here for",
                f"what {name} does and who it is for",
                f"A short introduction sets expectations for {audience} and anchors every "
                "later post.",
            ),
            (
                "starter:question",
                f"A question for {_clip(audience, 60)}",
                f"the biggest open question {audience} have right now",
                "Asking before telling shows what your audience wants from you and gives you "
                "material for the next posts.",
            ),
            (
                "starter:behind",
                "Behind the scenes this week",
                f"how the work at {name} actually gets done",
                "Process posts are quick to write from what happened this week and make the "
                "finished work more credible.",
            ),
            (
                "starter:lesson",
                "A lesson learned the hard way",
                "a mistake you made, what it cost and what you do differently now",
                "A candid lesson is among the most shared kinds of post and needs no research: "
                "you lived it.",
            ),
            (
                "starter:tools",
                "The tools you actually rely on",
                f"the few tools and habits behind the work at {name}",
                "Concrete recommendations are easy to act on and easy to pass along.",
            ),
            (
                "starter:myth",
                "A myth worth retiring",
                "a belief common in your field that your experience contradicts",
                "Correcting a popular belief gives people a reason to stop scrolling and reply.",
            ),
            (
                "starter:numbers",
                "One number that tells the story",
                "a single figure from your recent work and what it means",
                "A specific number makes an abstract point concrete and memorable.",
            ),
            (
                "starter:faq",
                "The question you answer most often",
                "the question people ask you again and again, answered once and well",
                "Answering a frequent question publicly saves you time and helps newcomers.",
            ),
        ]
        seeds = []
        for key, title, topic, why in starters:
            seed = Seed(key, "starter", topic, today, why, title)
            if identity and key == "starter:intro":
                seed.story = identity
            seeds.append(seed)
        return seeds

    def starter_angles(self, seed: Seed, register: str, stay: str, avoid: str) -> list[dict[str, str]]:
        """A starter card's own angles (its topic is a clause, not a noun: the general
        templates would read "where you stand on what … does and who it is for")."""
        values = {
            "name": self.ctx.workspace_name,
            "audience": _clip(self.ctx.audience, 120) or "your followers",
        }
        extras = {0: register, 1: stay, 2: avoid}
        return [
            {
                "label": label,
                "thesis": _clip(thesis.format(**values), 500),
                "approach": _clip(f"{approach.format(**values)} {extras.get(n, '')}".strip(), 700),
            }
            for n, (label, thesis, approach) in enumerate(_STARTER_ANGLES[seed.key])
        ]

    # --- cards --------------------------------------------------------------------------

    def cards(self) -> list[dict[str, Any]]:
        cards: list[dict[str, Any]] = []
        titles: set[str] = set()
        for index, seed in enumerate(self.seeds()):
            if len(cards) >= self.ctx.limit:
                break
            if seed.kind == "opinion" and seed.opinion in self.used_opinions:
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
        card_id = stable_id("opp", self.ctx.workspace_id, seed.key, self.ctx.focus, self.ctx.audience)
        if seed.opinion:
            self.used_opinions.add(seed.opinion)
        opinion = seed.opinion or (
            self.matching_opinion(seed.topic) if seed.kind not in {"starter"} else ""
        )
        story = seed.story or self.matching_story(seed.topic)
        angles = self.angles(seed, opinion, story, index)
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
            "platform_treatments": [self.treatment(p, seed) for p in self.ctx.platforms],
        }

    def quoted(self, post: PastPublication | None) -> str:
        """The post's first sentence in quotes, or "" when it carries a forbidden phrase (a
        scrubbed quote would put words in the author's mouth)."""
        if post is None:
            return ""
        gist = _gist(post.text, 90)
        return f"“{gist}”" if gist and self.allowed(gist) else ""

    def hook(self, seed: Seed, opinion: str, index: int) -> str:
        topic = _clip(seed.topic, 120)
        quote = self.quoted(seed.publication)
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
        expression = self.hook_expression(index) if is_claim else ""
        if expression and self.lead_ins_used < max(1, self.ctx.limit // 3) and len(expression) + len(line) < 380:
            self.lead_ins_used += 1
            line = f"{expression.rstrip(':')}: {_lower_first(line)}"
        return _clip(line, 400)

    def why_it_fits(self, seed: Seed, opinion: str) -> str:
        parts: list[str] = []
        expertise = [e for e in self.items("expertise") if _tokens(e) & _tokens(seed.topic)]
        if seed.kind in {"gap", "covered"}:
            parts.append(f"“{seed.topic}” is listed in your profile's expertise.")
        elif expertise:
            parts.append(f"It draws on your expertise in {_join([f'“{e}”' for e in expertise[:2]])}.")
        if opinion and seed.kind != "opinion":
            parts.append(f"It lets you argue a view you hold: “{_clip(opinion, 160)}”.")
        elif seed.kind == "opinion":
            parts.append("It is one of the opinions you recorded in your voice profile.")
        if seed.kind in {"follow_up", "second_chance"}:
            parts.append("It builds on material you already published, so the voice is already yours.")
        if self.ctx.audience:
            parts.append(f"It speaks to {self.ctx.audience}.")
        identity = self.text("identity_summary")
        if identity and len(parts) < 3:
            parts.append(f"It fits how you describe yourself: {_clip(identity, 160)}")
        if not parts:
            parts.append(f"It suits {self.ctx.workspace_name} and takes no research beyond what you know.")
        return _clip(" ".join(_sentence(p) for p in parts), 700)

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

    def angles(self, seed: Seed, opinion: str, story: str, index: int) -> list[dict[str, str]]:
        """3 to 5 angles. The profile's guidance is spread where it matters most rather than
        repeated: the register on the stand, vocabulary on the how-to, boundaries on the
        story, disliked patterns on the myth and the audience question."""
        topic = _lower_first(_clip(seed.topic, 100))
        quote = self.quoted(seed.publication)
        about_post = seed.kind in {"follow_up", "covered", "second_chance"} and seed.publication is not None
        subject = quote if about_post and seed.kind != "covered" and quote else topic
        # A follow-up or second run is about a post, whose "topic" is its first sentence: the
        # angles then refer to that post instead of pasting a sentence into "about …".
        about_sentence = about_post and seed.kind != "covered"
        ref = quote or "that post"
        expression = self.expression(index + 1)
        vocabulary = self.items("vocabulary")[:3]
        boundaries = self.items("boundaries")[:2]
        disliked = self.items("disliked_patterns")[:2]
        lessons = [c.get("lesson", "") for c in self.items("corrections") if c.get("lesson")][:1]

        def with_(core: str, *extras: str) -> str:
            return _clip(" ".join([core, *[e for e in extras if e]]), 700)

        register = self.register()
        stay = (
            f"Stay within your boundaries: {_join([_clip(b, 90) for b in boundaries])}."
            if boundaries else ""
        )
        avoid = f"Avoid {_join([_lower_first(_clip(d, 80)) for d in disliked])}." if disliked else ""
        lesson = f"Remember: {_sentence(_clip(lessons[0], 120))}" if lessons else ""

        if seed.kind == "opinion":
            return self.opinion_angles(seed, register, stay, avoid, expression, index)
        if seed.kind == "interview":
            return self.interview_angles(seed, register, stay, lesson)
        if seed.kind == "starter":
            return self.starter_angles(seed, register, stay, avoid)
        angles: list[dict[str, str]] = []
        if opinion:
            stand = _sentence(_clip(opinion, 400))
        elif about_post:
            stand = f"Where you stand now on {ref if about_sentence else subject}, with what you know today."
        else:
            stand = f"Say plainly where you stand on {topic} and why."
        angles.append({
            "label": "Take a stand",
            "thesis": stand,
            "approach": with_(
                "Open with the claim in one line, back it with one reason from your own work, "
                "and end by inviting disagreement.",
                register, lesson,
            ),
        })
        if about_post:
            angles.append({
                "label": "What happened next",
                "thesis": f"What changed since you posted {quote or f'about {topic}'}.",
                "approach": with_(
                    "Quote or link the earlier post, then give the update: one result, one "
                    "surprise, one thing you would do differently."
                ),
            })
        else:
            words = (
                f"Use your own terms ({_join([f'“{v}”' for v in vocabulary])}) where they fit."
                if vocabulary else ""
            )
            angles.append({
                "label": "Show how",
                "thesis": f"A concrete, repeatable way to handle {topic}, taken from how you work.",
                "approach": with_(
                    "Three short numbered steps, each with a real example; keep theory to one "
                    "sentence.",
                    words,
                ),
            })
        example = self.example(index, seed.topic)
        if story:
            story_core = f"Retell it in the first person: {_clip(story, 220)}"
        elif example is not None:
            where = f" for {example['platform']}" if example.get("platform") else ""
            story_core = (
                "Anchor it in one specific moment and match the rhythm of the example you "
                f"saved{where}: “{_clip(example['text'], 160)}”"
            )
        else:
            story_core = "Anchor it in one specific moment: who was there, what went wrong, what you learned."
        if about_sentence:
            story_thesis = (
                f"The moment behind {quote} that the first post left out."
                if quote else "The moment behind that post, which it left out."
            )
        else:
            story_thesis = f"A real moment from your work where {topic} mattered."
        angles.append({"label": "Story from the work", "thesis": story_thesis,
                       "approach": with_(story_core, stay)})
        if disliked or len(self.items("opinions")) >= 2 or seed.kind in {"gap", "focus"}:
            angles.append({
                "label": "Myth vs. reality",
                "thesis": (
                    f"What readers may have assumed from {ref}, and what actually happened."
                    if about_sentence
                    else f"A common belief about {topic} that your experience contradicts."
                ),
                "approach": with_(
                    "State the myth fairly in one line, then correct it with evidence from your "
                    "own work.",
                    f"Work in your phrase “{expression}”." if expression else "",
                    avoid,
                ),
            })
        if self.ctx.audience and len(angles) < 5:
            angles.append({
                "label": "Ask your audience",
                "thesis": (
                    f"Whether {_clip(self.ctx.audience, 120)} have been through the same, and "
                    "what they saw."
                    if about_sentence
                    else f"What {_clip(self.ctx.audience, 120)} find hardest about {topic}."
                ),
                "approach": with_(
                    "Share your own answer in two sentences, then ask one specific question "
                    "people can answer in a reply.",
                    avoid,
                ),
            })
        if len(angles) < MIN_ANGLES:
            angles.append({
                "label": "Lessons learned",
                "thesis": (
                    "Three things you would tell someone about to try the same."
                    if about_sentence
                    else f"Three things you would tell someone about to take on {topic}."
                ),
                "approach": with_("One short paragraph per lesson, each ending in a concrete action.", stay),
            })
        return angles[:5]

    def opinion_angles(
        self, seed: Seed, register: str, stay: str, avoid: str, expression: str, index: int
    ) -> list[dict[str, str]]:
        claim = _sentence(_clip(seed.opinion, 400))
        example = self.example(index, seed.opinion)
        rhythm = (
            f"Match the rhythm of the example you saved: “{_clip(example['text'], 160)}”"
            if example is not None else ""
        )
        angles = [
            {"label": "Take a stand", "thesis": claim, "approach": _clip(
                "Open with the claim in one line, back it with one reason from your own work, "
                f"and end by inviting disagreement. {register}", 700).strip()},
            {"label": "The evidence", "thesis": "The strongest case from your own work for this view.",
             "approach": _clip(f"Lead with one specific case, then the general point; numbers beat adjectives. {rhythm}", 700).strip()},
            {"label": "Story from the work", "thesis": "The moment that convinced you.",
             "approach": _clip(f"Tell it in the first person, from before you held this view to after. {stay}", 700).strip()},
            {"label": "Steelman the other side",
             "thesis": "The best argument against this view, and why you still hold it.",
             "approach": _clip(
                 "State the opposing view so fairly its holders would sign it, then answer it."
                 + (f" Work in your phrase “{expression}”." if expression else "") + f" {avoid}", 700).strip()},
        ]
        if self.ctx.audience:
            angles.append({
                "label": "Ask your audience",
                "thesis": f"Whether {_clip(self.ctx.audience, 120)} agree, and where they have seen the opposite.",
                "approach": _clip(f"State your view in one line, then ask for counter-examples. {avoid}", 700).strip(),
            })
        return angles

    def interview_angles(self, seed: Seed, register: str, stay: str, lesson: str) -> list[dict[str, str]]:
        question = _sentence(_clip(seed.topic, 300)).rstrip(".")
        angles = [
            {"label": "The short version", "thesis": _sentence(_gist(seed.story, 300)) or question,
             "approach": _clip(f"Answer the question in the first sentence, then give the one detail that makes it real. {register}", 700).strip()},
            {"label": "Story from the work", "thesis": "The full story behind your answer.",
             "approach": _clip(f"Retell it in the first person: {_clip(seed.story, 220)} {stay}", 700).strip()},
            {"label": "What you would do differently",
             "thesis": "What you would change if it happened again tomorrow.",
             "approach": _clip(f"Name the decision, what you know now, and the one change you would make. {lesson}", 700).strip()},
        ]
        if self.ctx.audience:
            angles.append({
                "label": "Ask your audience",
                "thesis": f"Ask {_clip(self.ctx.audience, 120)} the same question: {question}",
                "approach": "Give your answer in two sentences first, so replies have something to build on.",
            })
        return angles

    def treatment(self, platform: PlatformInfo, seed: Seed) -> dict[str, str]:
        """How this card works on one platform: the format and its real limits, media that
        suit the kind of card, an objective for the card on that format, and what the
        workspace's record there (and the earlier post, for a follow-up) means for it."""
        fmt = _pick_format(platform.formats, seed)
        rationale = _rationale(platform, fmt)
        if seed.publication is not None and seed.kind in {"follow_up", "covered", "second_chance"}:
            rationale += " " + _earlier_post_note(platform, seed.publication, seed.kind)
        return {
            "platform": platform.provider,
            "format": fmt.key,
            "media": _media(fmt, seed.kind),
            "objective": _objective(fmt, seed.kind),
            "rationale": _clip(rationale, 700),
        }


# --- module helpers ------------------------------------------------------------------------


def _interleave(*groups: list[Seed]) -> list[Seed]:
    out: list[Seed] = []
    longest = max((len(g) for g in groups), default=0)
    for position in range(longest):
        for group in groups:
            if position < len(group):
                out.append(group[position])
    return out


def _published_somewhere(post: PastPublication) -> bool:
    return any(o.status == "published" for o in post.outcomes)


def _score(post: PastPublication) -> int:
    published = sum(1 for o in post.outcomes if o.status == "published")
    interactions = post.engagement.interactions if post.engagement is not None else 0
    return interactions * 10 + published


def _engagement_phrase(post: PastPublication) -> str:
    engagement = post.engagement
    if engagement is None or not (engagement.interactions or engagement.views):
        return ""
    parts = []
    if engagement.likes:
        parts.append(f"{engagement.likes} likes")
    if engagement.reposts:
        parts.append(f"{engagement.reposts} reposts")
    if engagement.comments:
        parts.append(f"{engagement.comments} replies")
    if engagement.views and not parts:
        parts.append(f"{engagement.views} views")
    return f" ({_join(parts)})"


def _label(provider: str, ctx: DiscoveryContext) -> str:
    for platform in ctx.platforms:
        if platform.provider == provider:
            return platform.display_name
    return provider.replace("_", " ").title()


def _pick_format(formats: tuple[PlatformFormat, ...], seed: Seed) -> PlatformFormat:
    """The provider's default format; a story or how-to prefers a format that carries media."""
    default = formats[0]
    if seed.kind in {"starter", "interview"} and default.media_max_count == 0:
        with_media = [f for f in formats if f.media_max_count > 0]
        if with_media:
            return with_media[0]
    return default


def _media_kinds(types: tuple[str, ...]) -> str:
    kinds = []
    if any(t.startswith("image/") and t != "image/gif" for t in types):
        kinds.append("images")
    if "image/gif" in types:
        kinds.append("GIFs")
    if any(t.startswith("video/") for t in types):
        kinds.append("video")
    return _join(kinds) or "files"


_MEDIA_HINTS = {
    "focus": "a photo, screenshot or chart that shows the point",
    "gap": "a photo, screenshot or diagram of how you do it",
    "covered": "a before-and-after screenshot or chart",
    "follow_up": "a screenshot of the result since, or of the first post",
    "second_chance": "the first post's visual, if it had one",
    "opinion": "none needed, the claim carries it; skip the stock photo",
    "interview": "one real photo or screenshot from the moment",
    "starter": "one strong visual helps the hook land",
}


def _media(fmt: PlatformFormat, kind: str = "starter") -> str:
    if fmt.media_max_count == 0:
        return "Text only: this format takes no media."
    kinds = _media_kinds(fmt.media_types)
    hint = _MEDIA_HINTS.get(kind, _MEDIA_HINTS["starter"])
    if fmt.media_required:
        count = "one" if fmt.media_max_count == 1 else f"1 to {fmt.media_max_count}"
        if kind == "opinion":
            hint = "a plain image of the claim itself works"
        return f"Required: {count} ({kinds}): {hint}; the text becomes the caption."
    return f"Optional: up to {fmt.media_max_count} ({kinds}); {hint}."


_OBJECTIVES = {  # kind -> (short format, long format)
    "focus": ("Make one clear point people can act on.",
              "Give your full take, with enough detail to act on."),
    "gap": ("Show your take in one point people can act on.",
            "Teach one repeatable method in enough detail to use it."),
    "covered": ("Go one step deeper than last time, in one point.",
                "Go deeper than last time: the method, the result and the caveats."),
    "follow_up": ("Bring back the first post's readers: lead with what changed.",
                  "Bring back the first post's readers: link it, then give the full update."),
    "second_chance": ("Reach the followers who missed it, with a fresh first line.",
                      "Reach the followers who missed it: rewrite the opening, keep the substance."),
    "opinion": ("Spark replies: the claim in the first line, then ask who disagrees.",
                "Make the full case, then ask who disagrees and why."),
    "interview": ("Build trust with one first-person moment.",
                  "Build trust with the whole first-person story."),
    "starter": ("Start a conversation around one clear point.",
                "Introduce the subject with enough detail to act on."),
}


def _objective(fmt: PlatformFormat, kind: str = "starter") -> str:
    short, long = _OBJECTIVES.get(kind, _OBJECTIVES["starter"])
    return short if fmt.text_limit <= 500 else long


def _limit_phrase(fmt: PlatformFormat) -> str:
    """"500 graphemes (each URL counts as 23, …)" from the adapter's counting rule."""
    unit, _, detail = fmt.counting_rule.partition(";")
    detail = detail.strip()
    return f"{fmt.text_limit} {unit.strip()}" + (f" ({detail})" if detail else "")


def _earlier_post_note(platform: PlatformInfo, post: PastPublication, kind: str) -> str:
    statuses = {o.status for o in post.outcomes if o.provider == platform.provider}
    name = platform.display_name
    if "published" in statuses:
        if kind == "second_chance":
            return (
                f"Your {name} followers already saw the first post: post only what is new "
                "here, or leave this platform out."
            )
        return "The first post went out here: reply to it or quote it so the thread stays together."
    if "failed" in statuses:
        return f"The first post failed here, so this is its first real run on {name}."
    return f"The first post did not go to {name}: give readers here one line of context."


def _rationale(platform: PlatformInfo, fmt: PlatformFormat) -> str:
    fit = (
        "Lead with the hook and keep to a single angle."
        if fmt.text_limit <= 500
        else "Room for the hook, two or three points and a closing question."
    )
    if fmt.text_limit > 2000:
        fit = "Room for the full argument; break it into short paragraphs."
    text = f"{platform.display_name} ({fmt.key}): up to {_limit_phrase(fmt)}. {fit}"
    stats = platform.deliveries
    total = stats.published + stats.failed
    if platform.connected_accounts == 0:
        text += f" No {platform.display_name} account is connected yet: connect one before scheduling."
    elif stats.failed and stats.last_error_kind == "auth":
        text += " Your last failed delivery here needed a reconnect: check the account first."
    elif total:
        share = math.floor(100 * stats.published / total)
        text += f" {stats.published} of your last {total} deliveries here were published ({share} %)."
        if stats.failed:
            text += f" Recent failures were {stats.last_error_kind or 'unexplained'}: review them before scheduling."
    else:
        text += " Nothing has gone out here in the last 90 days: a good slot to start."
    return text
