"""TikTok (Login Kit and the Content Posting API): the operator's TikTok app (OAuth 2 with
``client_key`` and PKCE), direct video posts uploaded in chunks (``FILE_UPLOAD``) as a long
send whose publish status is polled without holding a worker thread.

Protocol (developers.tiktok.com): ``GET https://www.tiktok.com/v2/auth/authorize/``; under
``https://open.tiktokapis.com``: ``POST /v2/oauth/token/`` (authorization code with the PKCE
verifier, and the refresh token grant), ``POST /v2/oauth/revoke/``, ``GET /v2/user/info/``,
``POST /v2/post/publish/creator_info/query/``, ``POST /v2/post/publish/video/init/`` then
``PUT`` the chunks to the ``upload_url`` it answers, ``POST /v2/post/publish/status/fetch/``,
``POST /v2/video/query/`` (metrics). The Content Posting API has no delete.

The adapter lives in ``adapter``, the formats, chunk plan and options in ``profiles``.
"""

from providers.tiktok.adapter import TikTokAdapter
from providers.tiktok.profiles import VIDEO_PROFILE

__all__ = ["VIDEO_PROFILE", "TikTokAdapter"]
