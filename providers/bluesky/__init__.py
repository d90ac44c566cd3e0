"""Bluesky (AT Protocol): handle + app password session; records on the account's PDS.

Protocol (atproto.com, docs.bsky.app): ``com.atproto.server.createSession`` /
``refreshSession`` / ``deleteSession``, ``com.atproto.identity.resolveHandle``,
``com.atproto.repo.uploadBlob`` / ``createRecord`` / ``getRecord`` / ``deleteRecord``,
``app.bsky.feed.getPosts``, ``app.bsky.actor.getProfile``; records ``app.bsky.feed.post``
(facets with UTF-8 byte offsets, ``app.bsky.embed.images``) and ``app.bsky.feed.repost``.

Idempotency: every post is created with a record key derived from the idempotency key, so a
second create of the same key cannot make a second post, and reconcile is one ``getRecord``.

The adapter lives in ``adapter``; the records it writes (length rules, record keys, facets) in
``records``; image reading and embedding in ``media``; the video service (service token,
``app.bsky.video.uploadVideo``, ``getJobStatus``, ``getUploadLimits``, ``app.bsky.embed.video``)
step by step in ``video``.
"""

from providers.bluesky.adapter import DEFAULT_SERVICE_URL, BlueskyAdapter
from providers.bluesky.records import (
    bluesky_graphemes,
    bluesky_length,
    build_facets,
    record_key_for,
)

__all__ = [
    "DEFAULT_SERVICE_URL",
    "BlueskyAdapter",
    "bluesky_graphemes",
    "bluesky_length",
    "build_facets",
    "record_key_for",
]
