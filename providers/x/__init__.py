"""X (formerly Twitter): the operator's OAuth 2 app (authorization code with PKCE, S256), posts
through the X API v2.

Protocol (docs.x.com): ``GET https://x.com/i/oauth2/authorize``, ``POST /2/oauth2/token``
(authorization code and refresh token grants, HTTP Basic client authentication; refresh tokens
rotate), ``POST /2/oauth2/revoke``, ``GET /2/users/me``, the v2 chunked media upload
(``POST /2/media/upload/initialize``, ``/2/media/upload/:id/append``, ``/:id/finalize``,
``GET /2/media/upload?command=STATUS``, ``POST /2/media/metadata`` for alt text),
``POST /2/tweets``, ``GET /2/tweets/:id``, ``DELETE /2/tweets/:id``, ``GET /2/users/:id/tweets``.

X has no idempotency key: reconcile looks for the post among the account's own recent posts.

The adapter lives in ``adapter``; the weighted length rule and the post format in ``text``; a
video's chunked upload and processing, step by step, in ``video``.
"""

from providers.x.adapter import XAdapter
from providers.x.text import POST_PROFILE, x_weighted_length

__all__ = ["POST_PROFILE", "XAdapter", "x_weighted_length"]
