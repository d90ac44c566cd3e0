"""URL safety for user-supplied URLs (a Mastodon instance, a Discord webhook): validation
(https, public addresses only) and the socket-level guard :class:`~publishing.providers.http.HttpClient`
mounts, which re-checks the address actually connected to (defeats DNS rebinding)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from publishing.providers.base import ErrorKind, ProviderError, ProviderInputError
from publishing.providers.http_errors import BlockedAddressError, ProviderHTTPError

_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


def is_public_ip(value: str) -> bool:
    try:
        address = ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return bool(address.is_global) and not address.is_multicast


# getaddrinfo's answers for a name that does not exist (not a resolver that failed to answer).
_NO_SUCH_HOST = frozenset(
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)
)


def check_public_url(
    url: str,
    *,
    allow_private: bool = False,
    provider: str = "provider",
    what: str = "URL",
    resolve: bool = True,
    field: str | None = None,
) -> str:
    """Validate a user-supplied URL; returns it normalized (no fragment, no trailing slash).

    Without ``allow_private``: https only, no user info, and the host (literal or every DNS
    answer) must be a public address. With it (tests, private deployments): http or https, any
    host. The socket-level guard of :class:`HttpClient` re-checks the address actually used.

    With ``field`` (the URL is the user's input) a refusal is a :class:`ProviderInputError` at
    that field; without it (the URL came from a provider) a :class:`ProviderHTTPError`.
    """

    def refusal(message: str) -> ProviderError:
        if field:
            return ProviderInputError(field, message)
        return ProviderHTTPError(ErrorKind.PERMANENT, message)

    bad = refusal(f"{provider}: the {what} is not a valid https URL.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise bad from None
    host = (parts.hostname or "").lower()
    if not host or parts.username or parts.password:
        raise bad
    if parts.scheme not in (("http", "https") if allow_private else ("https",)):
        raise bad
    normalized = urlunsplit(
        (parts.scheme, parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")
    )
    if allow_private:
        return normalized
    blocked = refusal(f"{provider}: the {what} must point to a public internet address.")
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        raise blocked
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        is_literal = False
    else:
        is_literal = True
    if is_literal:
        if not is_public_ip(host.strip("[]")):
            raise blocked
        return normalized
    if resolve:
        try:
            answers = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            message = f"{provider}: the {what} host {host} could not be resolved."
            if isinstance(exc, UnicodeError) or (
                isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_HOST
            ):
                raise refusal(message) from None  # the name does not exist: the input is wrong
            raise ProviderHTTPError(ErrorKind.PERMANENT, message) from None
        if not answers or not all(is_public_ip(str(a[4][0])) for a in answers):
            raise blocked
    return normalized


class _GuardMixin:
    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]  # mixed into urllib3
        try:
            peer = str(sock.getpeername()[0])
        except OSError:
            peer = ""
        if not is_public_ip(peer):
            sock.close()
            raise BlockedAddressError("non-public address")
        return sock


class _GuardedHTTPConnection(_GuardMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """Refuses, at connect time, any peer address that is not public (defeats DNS rebinding)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _GuardedHTTPPool,
            "https": _GuardedHTTPSPool,
        }
