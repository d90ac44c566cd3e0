"""Gathering the built-in engine's signals: the seeds (what each card is about, why now) from
the focus, the profile and the workspace's recent publications, ranked and interleaved, then
starter seeds when the material runs out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from discovery.context import DiscoveryContext, PastPublication
from discovery.engines.builtin.profile import Profile
from discovery.engines.builtin.text import _clip, _covers, _gist, _join, _relevance, _tokens

PLANNED_STATUSES = frozenset({"draft", "scheduled", "publishing"})


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


class Signals:
    def __init__(self, ctx: DiscoveryContext, profile: Profile) -> None:
        self.ctx = ctx
        self.profile = profile
        # Coverage counts what went out; drafts and scheduled posts are "planned" (a topic with
        # a draft waiting is not one the audience has heard about).
        self.post_tokens = [
            (p, _tokens(p.text)) for p in ctx.publications if _published_somewhere(p)
        ]
        self.planned_tokens = [
            (p, _tokens(p.text))
            for p in ctx.publications
            if not _published_somewhere(p) and p.status in PLANNED_STATUSES and p.text.strip()
        ]

    def coverage(self, topic: str) -> list[PastPublication]:
        """Posts published (somewhere) in the last 90 days that touch ``topic``."""
        topic_tokens = _tokens(topic)
        return [p for p, tokens in self.post_tokens if _covers(topic_tokens, tokens)]

    def planned_note(self, topic: str) -> str:
        """ " You already have a draft on it from …" when an unpublished post touches it."""
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

        expertise = list(self.profile.items("expertise"))
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
                gaps.append(
                    Seed(f"gap:{topic}", "gap", topic, self.profile.profile_date, why, topic)
                )
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
                        f"covered:{topic}",
                        "covered",
                        topic,
                        best.created_at.date(),
                        why,
                        topic,
                        publication=best,
                    )
                )

        follow_ups: list[Seed] = []
        # Posts that failed somewhere get a second run instead; posts a covered-expertise card
        # already builds on are not repeated.
        taken = {s.publication.id for s in covered_seeds if s.publication is not None}
        ranked = sorted(
            (
                p
                for p in ctx.publications
                if _published_somewhere(p)
                and p.text.strip()
                and p.id not in taken
                and not any(o.status == "failed" for o in p.outcomes)
            ),
            key=lambda p: (-_score(p), -p.created_at.timestamp(), p.id),
        )
        for post in ranked[:4]:
            gist = _gist(post.text)
            if not gist:
                continue
            where = _join(
                sorted({_label(o.provider, ctx) for o in post.outcomes if o.status == "published"})
            )
            engaged = _engagement_phrase(post)
            why = (
                f"Your post of {post.created_at.date().isoformat()} went out on {where}{engaged}; "
                "a follow-up while it is fresh carries the conversation forward."
            )
            follow_ups.append(
                Seed(
                    f"follow:{post.id}",
                    "follow_up",
                    gist,
                    post.created_at.date(),
                    why,
                    f"Follow-up: {gist}",
                    publication=post,
                )
            )

        second: list[Seed] = []
        for post in ctx.publications:
            failed = sorted({o.provider for o in post.outcomes if o.status == "failed"})
            if not failed or not post.text.strip():
                continue
            gist = _gist(post.text)
            kinds = sorted(
                {o.error_kind for o in post.outcomes if o.status == "failed" and o.error_kind}
            )
            reason = f" ({', '.join(kinds)})" if kinds else ""
            why = (
                f"Your post of {post.created_at.date().isoformat()} failed on "
                f"{_join([_label(p, ctx) for p in failed])}{reason}, so that audience never saw it."
            )
            second.append(
                Seed(
                    f"second:{post.id}",
                    "second_chance",
                    gist,
                    post.created_at.date(),
                    why,
                    f"Second run: {gist}",
                    publication=post,
                )
            )
            if len(second) >= 2:
                break

        opinions: list[Seed] = []
        for opinion in self.profile.items("opinions"):
            why = (
                "It is a view you hold and have not argued in public recently; a clear stand "
                "invites replies."
                if not self.coverage(opinion)
                else "You touched this view recently; the replies deserve a sharper, fuller case."
            )
            opinions.append(
                Seed(
                    f"opinion:{opinion}",
                    "opinion",
                    opinion,
                    self.profile.profile_date,
                    why,
                    f"Where you stand: {_clip(opinion.rstrip('.!'), 80)}",
                    opinion=opinion,
                )
            )

        interviews: list[Seed] = []
        for answer in self.profile.items("interview_answers"):
            question = answer.get("question", "")
            why = (
                "You already answered this in your profile interview; the answer is a ready "
                "first draft in your own words."
            )
            interviews.append(
                Seed(
                    f"interview:{question}",
                    "interview",
                    question,
                    self.profile.profile_date,
                    why,
                    f"In your words: {_clip(question.rstrip('?'), 80)}",
                    story=answer.get("answer", ""),
                )
            )

        ordered = focus_seeds + _interleave(
            gaps, follow_ups, covered_seeds, opinions, second, interviews
        )
        return ordered + self.starters()

    def starters(self) -> list[Seed]:
        ctx = self.ctx
        audience = ctx.audience or "the people who follow your work"
        name = ctx.workspace_name
        identity = self.profile.text("identity_summary")
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
