"""The Graph API plumbing shared by the ``facebook`` and ``instagram`` adapters: the pinned API
version, the operator's Meta app, and calls that keep Meta's rate limits.

The Graph API version is pinned here and only here (:data:`GRAPH_VERSION`); an operator moves it
with ``HERALD_META_GRAPH_VERSION`` (``v26.0``-style). Every versioned call is
``{api_url}/{version}{path}``; ``HERALD_META_API_URL`` (graph.facebook.com),
``HERALD_INSTAGRAM_API_URL`` (graph.instagram.com) and ``HERALD_META_AUTHORIZE_URL`` (the
Facebook Login dialog) point Herald at stand-ins in tests.

Every call with a token also sends ``appsecret_proof`` (the HMAC-SHA256 of the token with the
app secret), which Meta requires when the app enables "Require App Secret" and accepts
otherwise. Before a call, :class:`MetaGraphAdapter` checks whether the app or the business object
is paused (``providers.meta.usage``) and refuses it without calling; after it, the usage headers
of the answer set the next pause.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from typing import Any

import requests

from providers.base import ErrorKind, ProviderError
from providers.http import HttpClient
from providers.http_errors import ErrorDetail, ProviderHTTPError
from providers.meta import errors as meta_errors
from providers.meta import usage as meta_usage
from providers.oauth_http import OAuthHttpAdapter

GRAPH_VERSION = "v26.0"  # the one pinned Graph API version (HERALD_META_GRAPH_VERSION moves it)
DEFAULT_API_URL = "https://graph.facebook.com"
DEFAULT_INSTAGRAM_API_URL = "https://graph.instagram.com"
DEFAULT_DIALOG_URL = "https://www.facebook.com/{version}/dialog/oauth"
_VERSION = re.compile(r"v\d{1,3}\.\d{1,2}")
APP_SETTINGS = "HERALD_META_APP_ID, HERALD_META_APP_SECRET"


class MetaApp:
    """The operator's Meta app as ``PROVIDER_OAUTH_APPS["facebook"]`` / ``["instagram"]`` hold
    it (config/oauth_apps.py): ``client_id`` (app id), ``client_secret`` (app secret),
    ``graph_version``, ``api_url``, ``authorize_url``, ``instagram_api_url``,
    ``usage_pause_percent``."""

    def __init__(self, app: dict[str, Any] | None = None) -> None:
        app = dict(app or {})
        self.app_id = str(app.get("client_id") or "")
        self.app_secret = str(app.get("client_secret") or "")
        version = str(app.get("graph_version") or GRAPH_VERSION).strip()
        if not version.startswith("v"):
            version = "v" + version
        if not _VERSION.fullmatch(version):
            raise ValueError(f"HERALD_META_GRAPH_VERSION must look like {GRAPH_VERSION}")
        self.graph_version = version
        self.api_url = str(app.get("api_url") or DEFAULT_API_URL).rstrip("/")
        self.instagram_api_url = str(
            app.get("instagram_api_url") or DEFAULT_INSTAGRAM_API_URL
        ).rstrip("/")
        self.authorize_url = str(
            app.get("authorize_url") or DEFAULT_DIALOG_URL.format(version=version)
        )
        try:
            percent = float(app.get("usage_pause_percent") or meta_usage.DEFAULT_PAUSE_PERCENT)
        except (TypeError, ValueError):
            percent = meta_usage.DEFAULT_PAUSE_PERCENT
        self.usage_pause_percent = min(max(percent, 1.0), 100.0)

    @property
    def configured(self) -> bool:
        return bool(self.app_id and self.app_secret)


def appsecret_proof(token: str, app_secret: str) -> str:
    return hmac.new(app_secret.encode(), token.encode(), hashlib.sha256).hexdigest()


class MetaGraphAdapter(OAuthHttpAdapter):
    """Base of the Meta adapters: set ``label`` and ``capabilities``; call :meth:`_graph`."""

    error_parser = staticmethod(meta_errors.parse_error)
    send_appsecret_proof = True

    def __init__(self, *, http: HttpClient | None = None, app: dict[str, Any] | None = None):
        self.http = http or HttpClient()
        self.meta = MetaApp(app)
        self.client_id = self.meta.app_id
        self.client_secret = self.meta.app_secret
        self.api_url = self.meta.api_url

    def _require_app(self) -> None:
        if not self.meta.configured:
            raise ProviderError(
                ErrorKind.PERMANENT,
                f"{self.label}: the Meta app is not configured ({APP_SETTINGS}).",
            )

    def graph_url(self, path: str, *, api_url: str = "") -> str:
        """``{api_url}/{version}{path}`` (the Facebook Graph host unless ``api_url``)."""
        return f"{(api_url or self.api_url).rstrip('/')}/{self.meta.graph_version}{path}"

    def _graph(
        self,
        method: str,
        path_or_url: str,
        *,
        operation: str,
        token: str = "",
        object_id: str = "",
        api_url: str = "",
        token_endpoint: bool = False,
        params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """One Graph call. A path is versioned under ``api_url``; a full URL is called as it
        is. ``object_id``: the Page or Instagram account the call acts for (its pause is
        checked, its usage recorded). A paused app or object raises a rate-limit error without
        calling; a token endpoint's refusal is a grant to renew."""
        if not token_endpoint:
            self._refuse_if_paused(object_id)
        url = path_or_url if "://" in path_or_url else self.graph_url(path_or_url, api_url=api_url)
        params = dict(params or {})
        if token and self.send_appsecret_proof and self.client_secret:
            params["appsecret_proof"] = appsecret_proof(token, self.client_secret)
        parser = meta_errors.parse_token_error if token_endpoint else meta_errors.parse_error
        try:
            response = self._call(
                method,
                url,
                operation=operation,
                token=token,
                params=params or None,
                parse_error=self._noting_usage(parser, object_id),
                **kwargs,
            )
        except ProviderHTTPError as exc:
            self._pause_after_limit(exc, object_id)
            raise
        self._note_usage(response.headers, object_id)
        return response

    # --- usage and pauses ---------------------------------------------------------------------

    def _noting_usage(
        self, parser: Callable[[requests.Response], ErrorDetail], object_id: str
    ) -> Callable[[requests.Response], ErrorDetail]:
        def parse(response: requests.Response) -> ErrorDetail:
            self._note_usage(response.headers, object_id)
            return parser(response)

        return parse

    def _note_usage(self, headers: Any, object_id: str) -> None:
        readings = meta_usage.read_usage(headers, page_id=object_id)
        meta_usage.record(readings, app_id=self.client_id, threshold=self.meta.usage_pause_percent)

    def _pause_after_limit(self, exc: ProviderHTTPError, object_id: str) -> None:
        """A refusal for a rate limit pauses what it names: code 4 the app, the others the
        object the call acted for (the app when there is none)."""
        if exc.kind != ErrorKind.RATE_LIMITED:
            return
        code, subcode = meta_errors.codes(exc)
        if subcode == 2207042:  # the publishing limit: the instagram adapter waits for a slot
            return
        target = "" if code in meta_errors.APP_RATE_CODES else object_id
        meta_usage.pause(
            self.client_id, target, exc.retry_after or meta_usage.DEFAULT_PAUSE_SECONDS
        )
        exc.host_wide = not target

    def _refuse_if_paused(self, object_id: str) -> None:
        left, what = meta_usage.paused_for(self.client_id, (object_id,))
        if left <= 0:
            return
        target = "the Meta app" if not what else f"{what}"
        raise ProviderError(
            ErrorKind.RATE_LIMITED,
            f"{self.label}: paused for {int(left) + 1} s: {target} is close to its Meta rate "
            "limit (nothing was sent).",
            retry_after=left,
            host_wide=not what,
        )
