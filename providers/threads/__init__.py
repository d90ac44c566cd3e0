"""Threads (Meta): the operator's app (authorization code, no PKCE), then the long-lived token
exchange; posts through the Threads API.

Protocol (developers.facebook.com/docs/threads): ``GET https://threads.net/oauth/authorize``,
``POST /oauth/access_token`` (short-lived token), ``GET /access_token?grant_type=
th_exchange_token`` (long-lived, 60 days), ``GET /refresh_access_token?grant_type=
th_refresh_token`` (a long-lived token at least 24 h old and unexpired), ``GET /v1.0/me``,
two-step publishing (``POST /v1.0/{user-id}/threads`` creates a container, its status is polled
with ``GET /v1.0/{container-id}?fields=status,error_message``, ``POST /v1.0/{user-id}/
threads_publish`` publishes it), ``GET /v1.0/{user-id}/threads`` (reconcile),
``GET /v1.0/{media-id}/insights`` and ``DELETE /v1.0/{media-id}``.

Threads fetches images by URL: the adapter sends each media item's ``url`` (Herald's signed
public media URL). See docs/providers/threads.md.
"""

from providers.threads.adapter import ThreadsAdapter
from providers.threads.text import POST_PROFILE, threads_length

__all__ = ["POST_PROFILE", "ThreadsAdapter", "threads_length"]
