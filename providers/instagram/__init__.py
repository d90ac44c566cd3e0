"""Instagram (Meta): professional accounts, connected through Facebook Login (a Page's linked
account) or Instagram's own login; feed posts (one image or video, carousels of 2 to 10), Reels
and Stories through the container flow, the content publishing limit, reconcile, delete,
insights. See docs/providers/instagram.md.
"""

from providers.instagram.adapter import InstagramAdapter
from providers.instagram.rules import POST_PROFILE, REEL_PROFILE, STORY_PROFILE

__all__ = ["POST_PROFILE", "REEL_PROFILE", "STORY_PROFILE", "InstagramAdapter"]
