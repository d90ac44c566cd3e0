"""YouTube (Data API v3): the operator's Google OAuth 2 app (offline access, PKCE), videos and
Shorts through the resumable upload as a long send.

Protocol (developers.google.com/youtube): ``GET https://accounts.google.com/o/oauth2/v2/auth``,
``POST https://oauth2.googleapis.com/token`` (authorization code with the PKCE verifier, and the
refresh token grant), ``POST https://oauth2.googleapis.com/revoke``; under
``https://www.googleapis.com``: ``POST /upload/youtube/v3/videos?uploadType=resumable`` then
``PUT`` the bytes to the session URI, ``POST /upload/youtube/v3/thumbnails/set``, ``GET`` /
``DELETE /youtube/v3/videos``, ``GET /youtube/v3/channels?mine=true``,
``GET /youtube/v3/playlistItems`` (the uploads playlist), ``GET /youtube/v3/videoCategories``.

The adapter lives in ``adapter``, the resumable protocol in ``upload``, the formats and options
in ``profiles``.
"""

from providers.youtube.adapter import YouTubeAdapter
from providers.youtube.profiles import SHORT_PROFILE, VIDEO_PROFILE

__all__ = ["SHORT_PROFILE", "VIDEO_PROFILE", "YouTubeAdapter"]
