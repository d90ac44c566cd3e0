"""Plumbing shared by the adapters that call their provider's API with an operator's OAuth app
and the account's bearer token (X, LinkedIn, Threads).

:class:`OAuthHttpAdapter`: the account's access token, the call through
:class:`~providers.http.HttpClient` (bearer header, the token and the app secret kept
out of every error message) and the JSON object of an answer. What differs per provider stays in
its adapter: the error parser, extra headers (LinkedIn's versions), URL layout (Threads' Graph
API version).
"""

from __future__ import annotations

from typing import Any, ClassVar

import requests

from providers.base import AccountContext, ErrorKind, ProviderAdapter, ProviderError
from providers.http import HttpClient
from providers.http_errors import ErrorParser


class OAuthHttpAdapter(ProviderAdapter):
    label: ClassVar[str]  # the provider's name in messages
    error_parser: ErrorParser  # unless a call names another
    # Set by the adapter's __init__.
    http: HttpClient
    api_url: str
    client_secret: str

    def _token(self, account: AccountContext) -> str:
        token = account.credentials.get("access_token", "")
        if not token:
            raise ProviderError(
                ErrorKind.AUTH, f"{self.label}: no access token; reconnect the account."
            )
        return token

    def _call(
        self,
        method: str,
        path_or_url: str,
        *,
        operation: str,
        token: str = "",
        write: bool = False,
        ok: tuple[int, ...] = (200, 201),
        headers: dict[str, str] | None = None,
        extra_secrets: tuple[str, ...] = (),
        parse_error: ErrorParser | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """A path is under ``api_url``; a full URL (the OAuth endpoints) is called as it is."""
        url = path_or_url if "://" in path_or_url else self.api_url + path_or_url
        all_headers = dict(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        return self.http.request(
            method,
            url,
            provider=self.label,
            operation=operation,
            write=write,
            ok=ok,
            headers=all_headers,
            secrets=(token, self.client_secret, *extra_secrets),
            parse_error=parse_error or self.error_parser,
            **kwargs,
        )

    def _json(self, response: requests.Response, operation: str, write: bool = False) -> Any:
        """The answer's JSON object (``{}`` for any other JSON value)."""
        body = self.http.json(response, provider=self.label, operation=operation, write=write)
        return body if isinstance(body, dict) else {}
