"""Public documents of the built-in Herald feeds (provider ``feed``): no authentication, the
random token in the URL is the only key.

* ``GET /feeds/<token>.atom``: Atom (RFC 4287), ``application/atom+xml``, built with
  ``xml.etree.ElementTree`` (every text escaped; characters XML 1.0 cannot carry, such as most
  C0 control characters, are left out of the Atom and HTML documents only).
* ``GET /feeds/<token>.json``: JSON Feed 1.1, ``application/feed+json``.
* ``GET /feeds/<token>/entries/<entry id>``: an HTML page of one entry (its permalink).
* ``GET /feeds/<token>/media/<media id>``: a media item of a live entry of this feed.

A feed document lists the newest ``MAX_ENTRIES`` (50) live entries. Every answer carries
``ETag`` (a digest of the body) and ``Last-Modified`` (once the second of the last change is
over: HTTP dates have whole seconds) and answers ``304`` to a matching
``If-None-Match`` (or, without one, to an ``If-Modified-Since`` not older than the last
change); ``Cache-Control: public, no-cache`` lets caches keep a copy but revalidate it each
time, so a withdrawn entry or a disconnected feed is not served from a cache.

An unknown token, entry or media item answers ``404``; a disconnected feed answers ``410
Gone`` at all of its URLs, and so does a withdrawn (deleted) entry's permalink.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from django.db.models import Max
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase
from django.utils import timezone
from django.utils.html import escape
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from config.types import ModelId
from providers import credentials
from providers.feed import MAX_ENTRIES, PROVIDER, entry_path, feed_path, media_path
from publishing.models import Account, FeedEnclosure, FeedEntry, Media

ATOM_NS = "http://www.w3.org/2005/Atom"
JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
CACHE_CONTROL = "public, no-cache"
# Characters XML 1.0 cannot contain (C0 controls but tab, newline and carriage return; lone
# surrogates; U+FFFE and U+FFFF).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
TITLE_CHARS = 80


def xml_text(value: str) -> str:
    return _XML_ILLEGAL.sub("", value)


def _plain(status: int, message: str) -> HttpResponse:
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def _feed_or_answer(token: str) -> Account | HttpResponse:
    """The live feed account named by ``token``, or the answer to give instead."""
    account = (
        Account.objects.filter(provider=PROVIDER, external_id=token).order_by("-created_at").first()
    )
    if account is None:
        return _plain(404, "No such feed.")
    if account.status == Account.Status.DISCONNECTED:
        return _plain(410, "This feed was disconnected.")
    return account


def _settings(account: Account) -> dict[str, str]:
    try:
        return (
            credentials.decrypt(account.credentials_encrypted)
            if account.credentials_encrypted
            else {}
        )
    except Exception:  # an unreadable store still serves the feed, with what the row says
        return {}


def _origin(request: HttpRequest, stored: dict[str, str]) -> str:
    return stored.get("origin") or request.build_absolute_uri("/").rstrip("/")


def _not_modified(request: HttpRequest, etag: str, last_modified: datetime) -> bool:
    """RFC 9110 §13.2.2: If-None-Match decides when present; else If-Modified-Since."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
        return "*" in tags or etag in tags
    if_modified_since = request.headers.get("If-Modified-Since")
    if if_modified_since:
        try:
            since = parsedate_to_datetime(if_modified_since)
        except (TypeError, ValueError, IndexError):
            return False
        if since.tzinfo is None:
            return False
        return int(last_modified.timestamp()) <= int(since.timestamp())
    return False


def _conditional(
    request: HttpRequest, body: bytes, content_type: str, last_modified: datetime
) -> HttpResponse:
    etag = f'"{hashlib.sha256(body).hexdigest()[:40]}"'
    if _not_modified(request, etag, last_modified):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type=content_type)
    response["ETag"] = etag
    # HTTP dates have whole seconds: a change later in the second of the last one would carry
    # the same date, so If-Modified-Since would hide it. The date is given once its second is over
    # (until then clients revalidate with the ETag alone).
    if int(last_modified.timestamp()) < int(timezone.now().timestamp()):
        response["Last-Modified"] = http_date(last_modified.timestamp())
    response["Cache-Control"] = CACHE_CONTROL
    response["X-Robots-Tag"] = "noindex"
    return response


def _last_modified(account: Account) -> datetime:
    # Withdrawn entries count (``delete`` keeps the row and moves its ``updated_at``).
    newest = FeedEntry.objects.filter(account=account).aggregate(newest=Max("updated_at"))["newest"]
    latest: datetime = max(filter(None, (account.updated_at, account.created_at, newest)))
    return latest


def _entries(account: Account) -> list[FeedEntry]:
    entries = list(
        FeedEntry.objects.filter(account=account, deleted_at__isnull=True).order_by(
            "-published_at", "-id"
        )[:MAX_ENTRIES]
    )
    enclosures: dict[Any, list[Media]] = {}
    for enclosure in (
        FeedEnclosure.objects.filter(entry__in=entries)
        .select_related("media")
        .order_by("entry_id", "position")
    ):
        enclosures.setdefault(enclosure.entry_id, []).append(enclosure.media)
    for entry in entries:
        # An attribute of this list's entries only, read by the feed writer (hence the ignore).
        entry.media_items = enclosures.get(entry.pk, [])  # type: ignore[attr-defined]
    return entries


def entry_title(text: str) -> str:
    """The first line of the text, shortened: feed readers show it as the entry's title."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first:
        return "(media)"
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def atom_document(
    *, account: Account, stored: dict[str, str], origin: str, entries: list[Any], updated: datetime
) -> bytes:
    token = account.external_id
    atom_url = f"{origin}{feed_path(token, 'atom')}"

    def sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
        element = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
        if text is not None:
            element.text = xml_text(text)
        return element

    feed = ET.Element("feed", {"xmlns": ATOM_NS})  # children inherit the default namespace
    sub(feed, "id", atom_url)
    sub(feed, "title", account.display_name or account.username)
    if stored.get("description"):
        sub(feed, "subtitle", stored["description"])
    sub(feed, "updated", _iso(updated))
    sub(feed, "link", rel="self", type="application/atom+xml", href=atom_url)
    sub(
        feed,
        "link",
        rel="alternate",
        type="application/feed+json",
        href=f"{origin}{feed_path(token, 'json')}",
    )
    author = sub(feed, "author")
    sub(author, "name", account.display_name or account.username)
    sub(feed, "generator", "Herald")
    for entry in entries:
        item = sub(feed, "entry")
        sub(item, "id", f"urn:uuid:{entry.pk}")
        sub(item, "title", entry_title(entry.text))
        sub(item, "published", _iso(entry.published_at))
        sub(item, "updated", _iso(max(entry.published_at, entry.updated_at)))
        sub(
            item,
            "link",
            rel="alternate",
            type="text/html",
            href=f"{origin}{entry_path(token, entry.pk)}",
        )
        sub(item, "content", entry.text, type="text")
        for media in entry.media_items:
            attrs = {
                "rel": "enclosure",
                "type": media.mime_type,
                "length": str(media.size_bytes),
                "href": f"{origin}{media_path(token, media.pk)}",
            }
            if media.alt_text:
                attrs["title"] = media.alt_text
            sub(item, "link", **attrs)
    document: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return document


def json_document(
    *, account: Account, stored: dict[str, str], origin: str, entries: list[Any]
) -> bytes:
    token = account.external_id
    name = account.display_name or account.username
    document: dict[str, Any] = {
        "version": JSON_FEED_VERSION,
        "title": name,
        "feed_url": f"{origin}{feed_path(token, 'json')}",
        "authors": [{"name": name}],
    }
    if stored.get("description"):
        document["description"] = stored["description"]
    items = []
    for entry in entries:
        item: dict[str, Any] = {
            "id": str(entry.pk),
            "url": f"{origin}{entry_path(token, entry.pk)}",
            "title": entry_title(entry.text),
            "content_text": entry.text,
            "date_published": _iso(entry.published_at),
            "date_modified": _iso(max(entry.published_at, entry.updated_at)),
        }
        if entry.media_items:
            item["attachments"] = [
                {
                    "url": f"{origin}{media_path(token, media.pk)}",
                    "mime_type": media.mime_type,
                    "size_in_bytes": media.size_bytes,
                    **({"title": media.alt_text} if media.alt_text else {}),
                }
                for media in entry.media_items
            ]
        items.append(item)
    document["items"] = items
    return json.dumps(document, ensure_ascii=False).encode()


@require_safe
def feed_atom(request: HttpRequest, token: str) -> HttpResponse:
    account = _feed_or_answer(token)
    if isinstance(account, HttpResponse):
        return account
    stored = _settings(account)
    updated = _last_modified(account)
    body = atom_document(
        account=account,
        stored=stored,
        origin=_origin(request, stored),
        entries=_entries(account),
        updated=updated,
    )
    return _conditional(request, body, "application/atom+xml; charset=utf-8", updated)


@require_safe
def feed_json(request: HttpRequest, token: str) -> HttpResponse:
    account = _feed_or_answer(token)
    if isinstance(account, HttpResponse):
        return account
    stored = _settings(account)
    body = json_document(
        account=account, stored=stored, origin=_origin(request, stored), entries=_entries(account)
    )
    return _conditional(
        request, body, "application/feed+json; charset=utf-8", _last_modified(account)
    )


@require_safe
def feed_entry(request: HttpRequest, token: str, entry_id: ModelId) -> HttpResponse:
    account = _feed_or_answer(token)
    if isinstance(account, HttpResponse):
        return account
    entry = FeedEntry.objects.filter(account=account, pk=entry_id).first()
    if entry is None:
        return _plain(404, "No such entry.")
    if entry.deleted_at is not None:
        return _plain(410, "This entry was withdrawn.")
    stored = _settings(account)
    origin = _origin(request, stored)
    token = account.external_id
    name = account.display_name or account.username
    media_html = "".join(
        f'<figure><a href="{escape(media_path(token, m.pk))}">'
        + (
            f'<img src="{escape(media_path(token, m.pk))}" alt="{escape(xml_text(m.alt_text))}">'
            if m.mime_type.startswith("image/")
            else f'<video src="{escape(media_path(token, m.pk))}" controls></video>'
        )
        + "</a></figure>"
        for m in (e.media for e in entry.enclosures.select_related("media"))
    )
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(xml_text(entry_title(entry.text)))} · {escape(xml_text(name))}</title>"
        f'<link rel="alternate" type="application/atom+xml" href="{escape(origin + feed_path(token, "atom"))}">'
        '<meta name="robots" content="noindex"></head><body><article>'
        f"<p>{escape(xml_text(entry.text)).replace(chr(10), '<br>')}</p>{media_html}"
        f'<footer><a href="{escape(feed_path(token, "atom"))}">{escape(xml_text(name))}</a> · '
        f'<time datetime="{_iso(entry.published_at)}">{_iso(entry.published_at)}</time></footer>'
        "</article></body></html>\n"
    )
    return _conditional(
        request,
        page.encode(),
        "text/html; charset=utf-8",
        max(entry.updated_at, account.updated_at),
    )


@require_safe
def feed_media(request: HttpRequest, token: str, media_id: ModelId) -> HttpResponseBase:
    account = _feed_or_answer(token)
    if isinstance(account, HttpResponse):
        return account
    # Only media of a live entry of this very feed: a media id alone opens nothing.
    enclosure = (
        FeedEnclosure.objects.select_related("media")
        .filter(media_id=media_id, entry__account=account, entry__deleted_at__isnull=True)
        .first()
    )
    if enclosure is None:
        return _plain(404, "No such media in this feed.")
    media = enclosure.media
    etag = f'"{media.checksum_sha256[:40]}"'
    if _not_modified(request, etag, media.created_at):
        response: HttpResponseBase = HttpResponse(status=304)
    else:
        try:
            handle = media.file.open("rb")
        except OSError:
            return _plain(404, "The media file is missing.")
        response = FileResponse(handle, content_type=media.mime_type)  # sets Content-Length
    response["ETag"] = etag
    response["Last-Modified"] = http_date(media.created_at.timestamp())
    response["Cache-Control"] = CACHE_CONTROL
    response["X-Robots-Tag"] = "noindex"
    return response
