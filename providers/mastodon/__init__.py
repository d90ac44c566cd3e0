"""Mastodon: any instance (federated), OAuth 2 authorization code with PKCE (S256).

Protocol (docs.joinmastodon.org): ``POST /api/v1/apps`` (one app per instance),
``GET /oauth/authorize``, ``POST /oauth/token``, ``POST /oauth/revoke``,
``GET /api/v1/accounts/verify_credentials``, ``POST /api/v2/media`` (+ ``GET /api/v1/media/:id``
while it answers 206), ``POST /api/v1/statuses`` with ``Idempotency-Key``,
``GET /api/v1/statuses/:id`` (+ ``/source``), ``GET /api/v1/accounts/:id/statuses``,
``POST /api/v1/statuses/:id/reblog`` / ``unreblog``, ``GET /api/v2/search``.

The adapter lives in ``adapter``; the post format, visibility and status bodies in ``statuses``;
the OAuth (PKCE) pieces in ``oauth``.
"""

from providers.mastodon.adapter import MastodonAdapter
from providers.mastodon.statuses import mastodon_length

__all__ = ["MastodonAdapter", "mastodon_length"]
