"""URL safety for user-supplied URLs (a Mastodon instance, a webhook): validation (https,
public addresses only) and the connection guard :class:`~providers.http.HttpClient`
mounts, which resolves once, vets every answer and connects to the vetted address."""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

from providers.base import ErrorKind, ProviderError, ProviderInputError
from providers.http_errors import BlockedAddressError, ProviderHTTPError

_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


# IPv4 ranges that are never a public destination (IANA special-purpose registry), checked on
# top of ``is_global`` so the verdict does not depend on the Python patch release.
_NON_PUBLIC_V4 = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
# IPv6 forms that carry an IPv4 address in their last 32 bits: the IPv4 address decides.
_EMBEDS_V4_LOW32 = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::/96",  # IPv4-compatible (deprecated); also :: and ::1
        "::ffff:0:0:0/96",  # SIIT
        "64:ff9b::/96",  # NAT64, well-known prefix
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
# Inside 2000::/3 but not a public destination. The local-use NAT64 prefix is operator-defined
# (its IPv4 address may sit at several offsets), so no embedded address can be judged there.
_NON_PUBLIC_V6 = tuple(
    ipaddress.IPv6Network(net)
    for net in ("2001:db8::/32", "3fff::/20", "2001:10::/28", "2001:2::/48", "64:ff9b:1::/48")
)


def _is_public_v4(address: ipaddress.IPv4Address) -> bool:
    return address.is_global and not any(address in net for net in _NON_PUBLIC_V4)


def is_public_ip(value: str) -> bool:
    """Whether ``value`` (an address literal) is a public internet destination.

    IPv6 counts only inside global unicast ``2000::/3``; a form that embeds an IPv4 address
    (mapped, compatible, SIIT, NAT64, 6to4, Teredo) is judged by that IPv4 address, because a
    translator or relay delivers it there.
    """
    if "%" in value:  # a scoped (link-local) address
        return False
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return _is_public_v4(address)
    if any(address in net for net in _EMBEDS_V4_LOW32):
        return _is_public_v4(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        return _is_public_v4(address.sixtofour)
    if address.teredo is not None:
        return all(_is_public_v4(v4) for v4 in address.teredo)
    return (
        address in _GLOBAL_UNICAST_V6
        and address.is_global
        and not any(address in net for net in _NON_PUBLIC_V6)
    )


def allow_any_address(value: str) -> bool:
    """The address policy of ``HERALD_ALLOW_PRIVATE_PROVIDER_URLS`` (tests, private deployments)."""
    return True


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
    bad = _refusal(f"{provider}: the {what} is not a valid https URL.", field)
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
    if not allow_private:
        _check_public_host(host, port, resolve=resolve, provider=provider, what=what, field=field)
    return normalized


def _refusal(message: str, field: str | None) -> ProviderError:
    """The user's input is wrong (at ``field``), or, without a field, the provider's URL is."""
    if field:
        return ProviderInputError(field, message)
    return ProviderHTTPError(ErrorKind.PERMANENT, message)


def _check_public_host(
    host: str, port: int | None, *, resolve: bool, provider: str, what: str, field: str | None
) -> None:
    """Refuse a local name, a non-public address literal and, with ``resolve``, a name any of
    whose DNS answers is not a public address."""
    blocked = _refusal(f"{provider}: the {what} must point to a public internet address.", field)
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        raise blocked
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        pass
    else:
        if not is_public_ip(literal):
            raise blocked
        return
    if resolve:
        answers = _resolve(host, port, provider=provider, what=what, field=field)
        if not answers or not all(is_public_ip(str(a[4][0])) for a in answers):
            raise blocked


def _resolve(
    host: str, port: int | None, *, provider: str, what: str, field: str | None
) -> list[Any]:
    """``getaddrinfo``'s answers for ``host``. A name that does not exist is the input's fault
    (a refusal at ``field``); a resolver that failed to answer is a ProviderHTTPError either way."""
    try:
        return socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        message = f"{provider}: the {what} host {host} could not be resolved."
        if isinstance(exc, UnicodeError) or (
            isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_HOST
        ):
            raise _refusal(message, field) from None
        raise ProviderHTTPError(ErrorKind.PERMANENT, message) from None


AddressPolicy = Callable[[str], bool]


def _vetted_socket(conn: HTTPConnection, allowed: AddressPolicy) -> socket.socket:
    """Resolve the host once, vet every answer, then connect to a vetted address.

    A private answer refuses the whole name before any connection is tried, so an internal port
    that is open and one that is closed give the same refusal, and a second, rebinding answer is
    never asked for. TLS (set up by urllib3 after this) still checks the certificate against the
    host name, not the address.
    """
    host = conn.host.strip("[]")
    try:
        answers = socket.getaddrinfo(host, conn.port, 0, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    if not answers or not all(allowed(str(answer[4][0])) for answer in answers):
        raise BlockedAddressError("non-public address")
    failure: OSError | None = None
    for family, kind, proto, _name, address in answers:
        sock = socket.socket(family, kind, proto)
        try:
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if isinstance(conn.timeout, int | float):
                sock.settimeout(conn.timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            sock.connect(address)
        except TimeoutError as exc:
            sock.close()
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.") from exc
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        sys.audit("http.client.connect", conn, conn.host, conn.port)
        return sock
    raise NewConnectionError(conn, f"Failed to establish a new connection: {failure}")


def _pool_classes(
    allowed: AddressPolicy,
) -> dict[str, type[HTTPConnectionPool]]:
    class VettedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return _vetted_socket(self, allowed)

    class VettedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return _vetted_socket(self, allowed)

    class VettedHTTPPool(HTTPConnectionPool):
        ConnectionCls = VettedHTTPConnection

    class VettedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = VettedHTTPSConnection

    return {"http": VettedHTTPPool, "https": VettedHTTPSPool}


class GuardedAdapter(HTTPAdapter):
    """Connects only to addresses ``allowed`` accepts, resolving each host once per connection
    and connecting to the very address it vetted (defeats DNS rebinding). Use with
    ``Session.trust_env = False`` so no proxy stands between the guard and the peer."""

    def __init__(self, *args: Any, allowed: AddressPolicy = is_public_ip, **kwargs: Any) -> None:
        self._pool_classes = _pool_classes(allowed)
        super().__init__(*args, **kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes
