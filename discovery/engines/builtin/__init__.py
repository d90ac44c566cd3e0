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

The stages live in sibling modules: ``signals`` (seeds and their ranking), ``cards`` (card
assembly, scrubbing and validation), ``angles``, ``treatments`` (per platform), ``profile``
(reading the voice profile) and ``text`` (word and sentence helpers).
"""

from __future__ import annotations

from discovery.context import DiscoveryContext
from discovery.context import EngineResult as Result
from discovery.engines.builtin.cards import _Builder

NAME = "herald-builtin"
VERSION = "1.1"
MODEL = f"{NAME}/{VERSION}"


class BuiltinEngine:
    name = NAME
    version = VERSION
    time_budget_seconds = 5.0  # local computation over at most a few hundred rows

    def discover(self, context: DiscoveryContext) -> Result:
        builder = _Builder(context)
        return Result(model=MODEL, opportunities=builder.cards())
