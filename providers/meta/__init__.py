"""What the Meta providers (``facebook``, ``instagram``) share: the pinned Graph API version and
the operator's Meta app (``graph``), Graph errors mapped to Herald's kinds (``errors``), the
rate-limit usage headers and the pauses before a limit (``usage``), and the ``signed_request``
of Meta's deauthorize and data-deletion callbacks (``signed_request``).

This package is not a provider itself: nothing registers it in ``providers.PROVIDERS``.
"""

from providers.meta.graph import GRAPH_VERSION, MetaApp, MetaGraphAdapter, appsecret_proof
from providers.meta.signed_request import SignedRequestError, parse_signed_request

__all__ = [
    "GRAPH_VERSION",
    "MetaApp",
    "MetaGraphAdapter",
    "SignedRequestError",
    "appsecret_proof",
    "parse_signed_request",
]
