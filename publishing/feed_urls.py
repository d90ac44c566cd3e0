"""Public URLs of the built-in Herald feeds (``publishing.feeds``), mounted at ``/feeds/``."""

from django.urls import re_path

from publishing import calendar_feed, feeds

app_name = "feeds"

_FEED = r"(?P<token>[0-9a-f]{32})"  # secrets.token_hex(16)
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

urlpatterns = [
    re_path(rf"^calendar/{_FEED}\.ics$", calendar_feed.calendar_ics, name="calendar"),
    re_path(rf"^{_FEED}\.atom$", feeds.feed_atom, name="atom"),
    re_path(rf"^{_FEED}\.json$", feeds.feed_json, name="json"),
    re_path(rf"^{_FEED}/entries/(?P<entry_id>{_UUID})$", feeds.feed_entry, name="entry"),
    re_path(rf"^{_FEED}/media/(?P<media_id>{_UUID})$", feeds.feed_media, name="media"),
]
