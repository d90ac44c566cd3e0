"""The built-in engine's seeds (what each card is about and why now), straight from a context:
the focus, coverage gaps and covered expertise, follow-ups, second runs, opinions, interview
answers, their interleaving, and the starter seeds that fill a workspace with little material."""

from __future__ import annotations

from discovery.context import DiscoveryContext, Engagement
from discovery.engines.builtin.profile import Profile
from discovery.engines.builtin.signals import Seed, Signals
from tests.discovery.builtin_support import PROFILE_SAVED, TODAY, context, day, post

STARTER_KEYS = [
    "starter:intro",
    "starter:question",
    "starter:behind",
    "starter:lesson",
    "starter:tools",
    "starter:myth",
    "starter:numbers",
    "starter:faq",
]


def seeds(ctx: DiscoveryContext) -> list[Seed]:
    return Signals(ctx, Profile(ctx)).seeds()


def material(found: list[Seed]) -> list[Seed]:
    """The seeds before the starters."""
    return [s for s in found if s.kind != "starter"]


# --- Starters -------------------------------------------------------------------------------------


def test_an_empty_workspace_gets_only_the_eight_starters() -> None:
    found = seeds(context(None))
    assert [s.key for s in found] == STARTER_KEYS
    assert {s.kind for s in found} == {"starter"}
    assert {s.signal_date for s in found} == {TODAY}
    assert found[0].title == "What Acme Ops is here for"
    assert found[0].topic == "what Acme Ops does and who it is for"
    assert found[1].title == "A question for the people who follow your work"
    assert (
        found[1].topic == "the biggest open question the people who follow your work have right now"
    )
    assert found[4].topic == "the few tools and habits behind the work at Acme Ops"
    assert [s.story for s in found] == [""] * 8


def test_starters_use_the_audience_and_the_identity_summary() -> None:
    identity = "We run the on-call rotation for forty small teams."
    found = Signals(
        ctx := context({"identity_summary": identity}, audience="platform leads"),
        Profile(ctx),
    ).starters()
    assert found[0].story == identity  # the introduction is told from the profile
    assert [s.story for s in found[1:]] == [""] * 7
    assert found[1].title == "A question for platform leads"
    assert found[1].topic == "the biggest open question platform leads have right now"
    long_audience = "engineering leads " * 6
    [_, question, *_] = Signals(
        ctx := context(None, audience=long_audience), Profile(ctx)
    ).starters()
    assert question.title.startswith("A question for engineering leads")
    assert question.title.endswith("…")
    assert len(question.title) <= len("A question for ") + 60


# --- Focus ----------------------------------------------------------------------------------------


def test_a_covered_focus_leads_and_cites_the_posts_that_touched_it() -> None:
    posts = (
        post("p2", "Growing tomatoes on a balcony.", 3, ("mastodon", "published")),
        post(
            "p1",
            "Incident response needs runbooks written on a calm day.",
            12,
            ("mastodon", "published"),
        ),
    )
    [focus] = [
        s
        for s in seeds(context(None, publications=posts, focus="Incident response runbooks"))
        if s.kind == "focus"
    ]
    assert focus.key == "focus"
    assert focus.topic == focus.title == "Incident response runbooks"
    assert focus.signal_date == TODAY
    assert focus.why_now == (
        f"You asked for ideas on this now; 1 of your last 2 posts touched it (most recently on "
        f"{day(12)}), so build on what they started."
    )


def test_an_uncovered_focus_points_at_a_waiting_draft_or_scheduled_post() -> None:
    uncovered = (
        "You asked for ideas on this now, and none of your posts from the last 90 days covers "
        "it yet."
    )
    draft = post("d", "Kubernetes upgrades without downtime, step by step.", 2, status="draft")
    [first, *_] = seeds(context(None, publications=(draft,), focus="Kubernetes upgrades"))
    assert first.why_now == (
        f"{uncovered} You already have a draft on it from {day(2)}: use this card to sharpen "
        "that one rather than start over."
    )
    scheduled = post("s", "Kubernetes upgrades without downtime.", 1, status="scheduled")
    [first, *_] = seeds(context(None, publications=(scheduled,), focus="Kubernetes upgrades"))
    assert f"You already have a scheduled post on it from {day(1)}" in first.why_now
    canceled = post("c", "Kubernetes upgrades without downtime.", 1, status="canceled")
    [first, *_] = seeds(context(None, publications=(canceled,), focus="Kubernetes upgrades"))
    assert first.why_now == uncovered


def test_a_long_focus_is_clipped_in_the_title_only() -> None:
    focus = "How we keep incident reviews blameless " * 4
    [first, *_] = seeds(context(None, focus=focus.strip()))
    assert first.topic == focus.strip()
    assert len(first.title) <= 90
    assert first.title.endswith("…")


# --- Expertise: gaps and covered topics -----------------------------------------------------------


def test_expertise_is_a_gap_or_builds_on_its_best_received_post() -> None:
    best = post(
        "p1",
        "Incident response is easier with runbooks.",
        12,
        ("mastodon", "published"),
        engagement=Engagement(likes=42, comments=5, reposts=7),
    )
    recent = post("p2", "Incident response drills every quarter.", 4, ("mastodon", "published"))
    ctx = context(
        {"expertise": ["Incident response", "PostgreSQL tuning"]}, publications=(recent, best)
    )
    gap, follow, covered = material(seeds(ctx))

    assert (gap.key, gap.kind, gap.topic, gap.title) == (
        "gap:PostgreSQL tuning",
        "gap",
        "PostgreSQL tuning",
        "PostgreSQL tuning",
    )
    assert gap.signal_date == PROFILE_SAVED.date()
    assert gap.why_now == (
        "It is one of your areas of expertise, yet none of your 2 posts from the last 90 days "
        "touched it: your audience has not heard your take lately."
    )
    assert (covered.key, covered.kind, covered.publication) == (
        "covered:Incident response",
        "covered",
        best,
    )
    assert covered.signal_date.isoformat() == day(12)
    assert covered.why_now == (
        f"You covered it in 2 recent posts; the one from {day(12)} (42 likes, 7 reposts and 5 "
        "replies) shows the interest is there for a deeper follow-up."
    )
    # The post the covered card builds on is not followed up again; the other one is.
    assert (follow.kind, follow.publication) == ("follow_up", recent)
    assert follow.title == "Follow-up: Incident response drills every quarter"


def test_expertise_of_a_workspace_that_never_published_is_a_first_subject() -> None:
    [gap] = material(seeds(context({"expertise": ["Incident response"]})))
    assert gap.why_now == (
        "It is one of your areas of expertise and a natural first subject: nothing has been "
        "published from this workspace yet."
    )


def test_expertise_closest_to_the_focus_comes_first() -> None:
    ctx = context(
        {"expertise": ["Balcony gardening", "Incident response", "Team rituals"]},
        focus="Incident response drills",
    )
    assert [s.topic for s in material(seeds(ctx))] == [
        "Incident response drills",
        "Incident response",
        "Balcony gardening",
        "Team rituals",
    ]
    unfocused = context({"expertise": ["Balcony gardening", "Incident response"]})
    assert [s.topic for s in material(seeds(unfocused))] == [
        "Balcony gardening",
        "Incident response",
    ]


# --- Follow-ups and second runs -------------------------------------------------------------------


def test_follow_ups_take_the_four_best_received_posts_that_went_out_everywhere() -> None:
    posts = (
        post("b", "Beta post about caching.", 1, ("mastodon", "published")),
        post("e", "Epsilon post about queues.", 2, ("mastodon", "published")),
        post("c", "Gamma post about retries.", 5, ("mastodon", "published")),
        post(
            "a",
            "Alpha post about indexes.",
            10,
            ("mastodon", "published"),
            engagement=Engagement(likes=1),
        ),
        post(
            "d",
            "Delta post about backups.",
            20,
            ("mastodon", "published"),
            engagement=Engagement(likes=3),
        ),
        post("blank", "   ", 1, ("mastodon", "published")),
        post("draft", "A draft about logging.", 1, status="draft"),
        post(
            "split",
            "Split post about tracing.",
            1,
            ("mastodon", "published"),
            ("bluesky", "failed"),
            engagement=Engagement(likes=100),
        ),
    )
    follow_ups = [s for s in seeds(context(None, publications=posts)) if s.kind == "follow_up"]
    # Engagement first, then the newest; a post that failed somewhere gets a second run instead.
    assert [s.key for s in follow_ups] == ["follow:d", "follow:a", "follow:b", "follow:e"]
    delta = follow_ups[0]
    assert delta.topic == "Delta post about backups"
    assert delta.title == "Follow-up: Delta post about backups"
    assert delta.signal_date.isoformat() == day(20)
    assert delta.why_now == (
        f"Your post of {day(20)} went out on Mastodon (3 likes); a follow-up while it is fresh "
        "carries the conversation forward."
    )
    assert follow_ups[2].why_now == (
        f"Your post of {day(1)} went out on Mastodon; a follow-up while it is fresh carries the "
        "conversation forward."
    )


def test_a_post_without_a_first_sentence_gets_no_follow_up() -> None:
    posts = (
        post("dots", "...", 1, ("mastodon", "published")),
        post("text", "A post about queues.", 2, ("mastodon", "published")),
    )
    found = [s.key for s in seeds(context(None, publications=posts)) if s.kind == "follow_up"]
    assert found == ["follow:text"]


def test_engagement_is_described_by_what_is_known() -> None:
    viewed = post(
        "v",
        "Viewed post on tracing.",
        3,
        ("mastodon", "published"),
        engagement=Engagement(views=900),
    )
    quiet = post(
        "q", "Quiet post on logging.", 4, ("mastodon", "published"), engagement=Engagement()
    )
    follow_ups = {s.key: s for s in seeds(context(None, publications=(viewed, quiet)))}
    assert "went out on Mastodon (900 views);" in follow_ups["follow:v"].why_now
    assert "went out on Mastodon;" in follow_ups["follow:q"].why_now


def test_a_post_that_failed_somewhere_gets_a_second_run_at_most_twice() -> None:
    posts = (
        post(
            "f1",
            "Why we moved our CI to a paved road. It took a week.",
            5,
            ("mastodon", "failed", "transient"),
            ("some_network", "failed", "auth"),
        ),
        post(
            "f2",
            "Four-day weeks, six months in.",
            6,
            ("mastodon", "published"),
            ("bluesky", "failed"),
        ),
        post("f3", "A third failure.", 7, ("mastodon", "failed")),
    )
    second = [s for s in seeds(context(None, publications=posts)) if s.kind == "second_chance"]
    assert [s.key for s in second] == ["second:f1", "second:f2"]
    first = second[0]
    assert first.topic == "Why we moved our CI to a paved road"
    assert first.title == "Second run: Why we moved our CI to a paved road"
    assert first.publication is posts[0]
    # Platform names from the requested platforms, else from the provider key.
    assert first.why_now == (
        f"Your post of {day(5)} failed on Mastodon and Some Network (auth, transient), so that "
        "audience never saw it."
    )
    assert second[1].why_now == (
        f"Your post of {day(6)} failed on Bluesky, so that audience never saw it."
    )


# --- Opinions and interview answers ---------------------------------------------------------------


def test_opinions_become_stands_and_say_whether_they_were_argued_lately() -> None:
    opinions = [
        "Most teams should run fewer microservices than they do.",
        "On-call pain is a design smell!",
    ]
    argued = post("p", "Our teams now run fewer microservices.", 3, ("mastodon", "published"))
    found = [
        s
        for s in seeds(context({"opinions": opinions}, publications=(argued,)))
        if s.kind == "opinion"
    ]
    assert [(s.key, s.opinion, s.topic) for s in found] == [
        (f"opinion:{opinions[0]}", opinions[0], opinions[0]),
        (f"opinion:{opinions[1]}", opinions[1], opinions[1]),
    ]
    assert [s.title for s in found] == [
        "Where you stand: Most teams should run fewer microservices than they do",
        "Where you stand: On-call pain is a design smell",
    ]
    assert found[0].why_now == (
        "You touched this view recently; the replies deserve a sharper, fuller case."
    )
    assert found[1].why_now == (
        "It is a view you hold and have not argued in public recently; a clear stand invites "
        "replies."
    )
    assert {s.signal_date for s in found} == {PROFILE_SAVED.date()}


def test_interview_answers_become_stories_in_the_authors_words() -> None:
    question = "What is the hardest incident you handled?"
    answer = "A cascading failure took our database down; we added backoff."
    [interview] = material(
        seeds(context({"interview_answers": [{"question": question, "answer": answer}]}))
    )
    assert (interview.key, interview.kind, interview.topic, interview.story) == (
        f"interview:{question}",
        "interview",
        question,
        answer,
    )
    assert interview.title == "In your words: What is the hardest incident you handled"
    assert interview.signal_date == PROFILE_SAVED.date()
    assert interview.why_now.startswith("You already answered this in your profile interview")


# --- Order ----------------------------------------------------------------------------------------


def test_the_focus_leads_then_each_kind_takes_turns_then_the_starters() -> None:
    definition = {
        "expertise": ["Balcony gardening", "Team rituals", "Incident response"],
        "opinions": ["Retries need budgets", "Dashboards rot"],
        "interview_answers": [{"question": "Why ops?", "answer": "Because I like calm nights."}],
    }
    posts = (
        post("ok1", "Incident response basics for startups.", 2, ("mastodon", "published")),
        post("ok2", "Quarterly planning without spreadsheets.", 3, ("mastodon", "published")),
        post("bad", "Caching layers explained.", 4, ("mastodon", "failed")),
    )
    found = seeds(context(definition, publications=posts, focus="Retry budgets"))
    assert [s.key for s in found] == [
        "focus",
        "gap:Balcony gardening",
        "follow:ok2",  # ok1 is the post the covered card builds on
        "covered:Incident response",
        "opinion:Retries need budgets",
        "second:bad",
        "interview:Why ops?",
        "gap:Team rituals",
        "opinion:Dashboards rot",
        *STARTER_KEYS,
    ]
