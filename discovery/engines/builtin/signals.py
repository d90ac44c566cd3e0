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
        """The focus first, then each kind of material in turn, then the starters."""
        gaps, covered = self.expertise_seeds()
        taken = {s.publication.id for s in covered if s.publication is not None}
        interleaved = _interleave(
            gaps,
            self.follow_up_seeds(taken),
            covered,
            self.opinion_seeds(),
            self.second_chance_seeds(),
            self.interview_seeds(),
        )
        return self.focus_seeds() + interleaved + self.starters()

    def focus_seeds(self) -> list[Seed]:
        ctx = self.ctx
        if not ctx.focus:
            return []
        covered = self.coverage(ctx.focus)
        if covered:
            last = covered[0].created_at.date().isoformat()
            why = (
                f"You asked for ideas on this now; {len(covered)} of your last "
                f"{len(self.post_tokens)} posts touched it (most recently on {last}), so build "
                "on what they started."
            )
        else:
            why = (
                "You asked for ideas on this now, and none of your posts from the last 90 "
                "days covers it yet."
            ) + self.planned_note(ctx.focus)
        return [Seed("focus", "focus", ctx.focus, ctx.today, why, _clip(ctx.focus, 90))]

    def expertise_seeds(self) -> tuple[list[Seed], list[Seed]]:
        """The expertise not covered lately (gaps) and the expertise covered, closest to the
        focus first (stable for ties)."""
        expertise = list(self.profile.items("expertise"))
        if self.ctx.focus:
            expertise.sort(key=lambda e: -_relevance(self.ctx.focus, e))
        gaps: list[Seed] = []
        covered_seeds: list[Seed] = []
        for topic in expertise:
            covered = self.coverage(topic)
            if covered:
                covered_seeds.append(self._covered_seed(topic, covered))
            else:
                gaps.append(self._gap_seed(topic))
        return gaps, covered_seeds

    def _gap_seed(self, topic: str) -> Seed:
        total = len(self.post_tokens)
        why = (
            f"It is one of your areas of expertise, yet none of your {total} posts from "
            "the last 90 days touched it: your audience has not heard your take lately."
            if total
            else "It is one of your areas of expertise and a natural first subject: "
            "nothing has been published from this workspace yet."
        ) + self.planned_note(topic)
        return Seed(f"gap:{topic}", "gap", topic, self.profile.profile_date, why, topic)

    def _covered_seed(self, topic: str, covered: list[PastPublication]) -> Seed:
        best = max(covered, key=lambda p: (_score(p), p.created_at))
        posts = "post" if len(covered) == 1 else "posts"
        why = (
            f"You covered it in {len(covered)} recent {posts}; the one from "
            f"{best.created_at.date().isoformat()}{_engagement_phrase(best)} shows the interest "
            "is there for a deeper follow-up."
        )
        return Seed(
            f"covered:{topic}",
            "covered",
            topic,
            best.created_at.date(),
            why,
            topic,
            publication=best,
        )

    def follow_up_seeds(self, taken: set[str]) -> list[Seed]:
        """Follow-ups to the four best-received posts that went out. Posts that failed
        somewhere get a second run instead; posts in ``taken`` (a covered-expertise card
        already builds on them) are not repeated."""
        ranked = sorted(
            (
                p
                for p in self.ctx.publications
                if _published_somewhere(p)
                and p.text.strip()
                and p.id not in taken
                and not any(o.status == "failed" for o in p.outcomes)
            ),
            key=lambda p: (-_score(p), -p.created_at.timestamp(), p.id),
        )
        seeds = []
        for post in ranked[:4]:
            gist = _gist(post.text)
            if not gist:
                continue
            where = _join(
                sorted(
                    {_label(o.provider, self.ctx) for o in post.outcomes if o.status == "published"}
                )
            )
            why = (
                f"Your post of {post.created_at.date().isoformat()} went out on {where}"
                f"{_engagement_phrase(post)}; a follow-up while it is fresh carries the "
                "conversation forward."
            )
            seeds.append(_post_seed("follow", "follow_up", "Follow-up", post, gist, why))
        return seeds

    def second_chance_seeds(self) -> list[Seed]:
        """A second run of the first two posts whose delivery failed somewhere."""
        seeds: list[Seed] = []
        for post in self.ctx.publications:
            failed = sorted({o.provider for o in post.outcomes if o.status == "failed"})
            if not failed or not post.text.strip():
                continue
            kinds = sorted(
                {o.error_kind for o in post.outcomes if o.status == "failed" and o.error_kind}
            )
            reason = f" ({', '.join(kinds)})" if kinds else ""
            where = _join([_label(p, self.ctx) for p in failed])
            why = (
                f"Your post of {post.created_at.date().isoformat()} failed on {where}{reason}, "
                "so that audience never saw it."
            )
            gist = _gist(post.text)
            seeds.append(_post_seed("second", "second_chance", "Second run", post, gist, why))
            if len(seeds) >= 2:
                break
        return seeds

    def opinion_seeds(self) -> list[Seed]:
        seeds = []
        for opinion in self.profile.items("opinions"):
            why = (
                "It is a view you hold and have not argued in public recently; a clear stand "
                "invites replies."
                if not self.coverage(opinion)
                else "You touched this view recently; the replies deserve a sharper, fuller case."
            )
            title = f"Where you stand: {_clip(opinion.rstrip('.!'), 80)}"
            seeds.append(
                Seed(
                    f"opinion:{opinion}",
                    "opinion",
                    opinion,
                    self.profile.profile_date,
                    why,
                    title,
                    opinion=opinion,
                )
            )
        return seeds

    def interview_seeds(self) -> list[Seed]:
        why = (
            "You already answered this in your profile interview; the answer is a ready "
            "first draft in your own words."
        )
        seeds = []
        for answer in self.profile.items("interview_answers"):
            question = answer.get("question", "")
            title = f"In your words: {_clip(question.rstrip('?'), 80)}"
            seeds.append(
                Seed(
                    f"interview:{question}",
                    "interview",
                    question,
                    self.profile.profile_date,
                    why,
                    title,
                    story=answer.get("answer", ""),
                )
            )
        return seeds

    def starters(self) -> list[Seed]:
        """The starter seeds, for a workspace whose material runs out; the introduction is
        told from the profile's identity summary where there is one."""
        audience = self.ctx.audience or "the people who follow your work"
        values = {
            "name": self.ctx.workspace_name,
            "audience": audience,
            "short_audience": _clip(audience, 60),
        }
        identity = self.profile.text("identity_summary")
        seeds = []
        for key, title, topic, why in _STARTERS:
            seed = Seed(
                key,
                "starter",
                topic.format(**values),
                self.ctx.today,
                why.format(**values),
                title.format(**values),
            )
            if identity and key == "starter:intro":
                seed.story = identity
            seeds.append(seed)
        return seeds


# Starter seeds: (key, title, topic, why now); {name}, {audience} and {short_audience} are
# filled in.
_STARTERS: tuple[tuple[str, str, str, str], ...] = (
    (
        "starter:intro",
        "What {name} is here for",
        "what {name} does and who it is for",
        "A short introduction sets expectations for {audience} and anchors every later post.",
    ),
    (
        "starter:question",
        "A question for {short_audience}",
        "the biggest open question {audience} have right now",
        "Asking before telling shows what your audience wants from you and gives you "
        "material for the next posts.",
    ),
    (
        "starter:behind",
        "Behind the scenes this week",
        "how the work at {name} actually gets done",
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
        "the few tools and habits behind the work at {name}",
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
)


def _post_seed(
    prefix: str, kind: str, label: str, post: PastPublication, gist: str, why: str
) -> Seed:
    """A seed about an earlier post (a follow-up or a second run)."""
    return Seed(
        f"{prefix}:{post.id}",
        kind,
        gist,
        post.created_at.date(),
        why,
        f"{label}: {gist}",
        publication=post,
    )


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
