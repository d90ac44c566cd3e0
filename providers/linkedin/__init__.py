"""LinkedIn: the operator's OAuth 2 app (authorization code, no PKCE), posts through the
versioned REST API.

Protocol (learn.microsoft.com/linkedin): ``GET https://www.linkedin.com/oauth/v2/authorization``,
``POST https://www.linkedin.com/oauth/v2/accessToken`` (authorization code, and the refresh token
grant for apps LinkedIn gives refresh tokens), ``POST .../oauth/v2/revoke``, OpenID Connect
``GET /v2/userinfo``, and under ``/rest`` with ``LinkedIn-Version`` and
``X-Restli-Protocol-Version: 2.0.0``: ``POST /rest/images?action=initializeUpload`` then a PUT of
the bytes, ``POST /rest/posts`` (the post URN in ``x-restli-id``), ``GET``/``DELETE
/rest/posts/{urn}``, ``GET /rest/posts?q=author``, ``GET /rest/organizationAcls?q=roleAssignee``,
``GET /rest/socialActions/{urn}``.

The adapter lives in ``adapter``; the commentary limit and the little-format escaping in
``text``.
"""

from providers.linkedin.adapter import LinkedInAdapter
from providers.linkedin.text import POST_PROFILE, escape_little

__all__ = ["POST_PROFILE", "LinkedInAdapter", "escape_little"]
