"""Facebook Pages through the operator's Meta app (``providers/meta``): Facebook Login with a
choice of Pages, then posts as the Page with its Page token.

Protocol (developers.facebook.com/docs/pages-api): ``POST /{page}/feed`` (text, link, and
photos attached with ``attached_media``), ``POST /{page}/photos`` (a photo post, or an
unpublished photo), ``POST /{page}/videos`` (``file_url``), ``POST /{page}/video_reels`` and
``/video_stories`` (``upload_phase`` start / finish, the file's URL given to the upload URL),
``POST /{page}/photo_stories``, ``POST /{post}/comments`` (first comment), ``GET
/{page}/published_posts`` (reconcile), ``GET /{video}?fields=status`` (processing), ``DELETE
/{post}``. See docs/providers/facebook.md.
"""

from providers.facebook.adapter import FacebookAdapter
from providers.facebook.formats import POST_PROFILE, REEL_PROFILE, STORY_PROFILE

__all__ = ["POST_PROFILE", "REEL_PROFILE", "STORY_PROFILE", "FacebookAdapter"]
