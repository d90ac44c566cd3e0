"""Signed public media URLs (``publishing.media_files``), mounted at ``/media/``."""

from django.urls import re_path

from publishing import media_files

app_name = "media-files"

# <media id hex>.<expiry base 36>.<HMAC-SHA256, base64url> (publishing.services.media_links)
_LINK = r"(?P<token>[0-9a-f]{32}\.[0-9a-z]{1,13}\.[A-Za-z0-9_-]{43})"

urlpatterns = [
    re_path(rf"^{_LINK}/poster\.jpg$", media_files.media_poster, name="poster"),
    re_path(rf"^{_LINK}/(?P<filename>[^/]{{1,200}})$", media_files.media_file, name="file"),
]
