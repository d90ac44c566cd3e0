"""Outgoing requests to user-supplied URLs: which addresses count as public (every IPv6 form
that embeds an IPv4 address is judged by that address), and the connection guard (one
resolution per connection, every answer vetted, the connection made to the vetted address, TLS
still checked against the host name, one refusal whether an internal port is open or closed).

Names ending in ``.test`` are answered by a stand-in resolver (``socket.getaddrinfo`` is the
edge of the machine); every connection goes to 127.0.0.1.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from providers.base import ErrorKind, ProviderError
from providers.http import HttpClient
from providers.http_errors import BlockedAddressError
from providers.url_safety import GuardedAdapter, check_public_url, is_public_ip

STAND_IN = "127.0.0.1"


def only_the_stand_in(address: str) -> bool:
    """The tests' address policy: the stand-in on 127.0.0.1 plays a public host."""
    return address == STAND_IN or is_public_ip(address)


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
        "64:ff9b:1::808:808",  # local-use NAT64: the embedding is the operator's choice
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
        "2001:0:a00:1:8000:63bf:f7f7:f7f7",  # Teredo, server 10.0.0.1
        "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
        "::127.0.0.1",  # IPv4-compatible loopback
        "::ffff:0:a9fe:a9fe",  # SIIT 169.254.169.254
        "::ffff:0:7f00:1",  # SIIT loopback
        "::ffff:169.254.169.254",  # IPv4-mapped
        "fec0::1",  # site-local
        "fc00::1",  # unique local
        "fe80::1",  # link-local
        "fe80::1%eth0",  # scoped
        "ff02::1",  # multicast
        "4000::1",  # outside 2000::/3
        "100::1",  # discard
        "2001:db8::1",  # documentation
        "3fff::1",  # documentation
        "::",
        "::1",
        "0.0.0.0",  # noqa: S104 - an address judged, not bound
        "100.64.0.1",  # shared address space (carrier NAT)
        "192.88.99.1",  # 6to4 relay anycast
        "224.0.0.1",
        "255.255.255.255",
        "not an address",
    ],
)
def test_non_public_addresses_in_every_form_are_refused(address: str) -> None:
    assert not is_public_ip(address)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "64:ff9b::808:808",  # NAT64 (DNS64 on an IPv6-only host) of a public address
        "::ffff:8.8.8.8",
        "2002:808:808::1",  # 6to4 of a public address
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, public server and client
    ],
)
def test_public_addresses_in_every_form_are_accepted(address: str) -> None:
    assert is_public_ip(address)


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2002:a9fe:a9fe::1]/",
        "https://[::a9fe:a9fe]/",
        "https://[::ffff:0:a9fe:a9fe]/",
        "https://[fec0::1]/",
        "https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",
    ],
)
def test_urls_with_private_ipv6_literals_are_refused(url: str) -> None:
    with pytest.raises(ProviderError) as caught:
        check_public_url(url, field="url")
    assert "public internet address" in str(caught.value)


# --- The connection guard ---------------------------------------------------------------------


Answers = list[tuple[Any, ...]]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Names ending in ``.test`` answer from ``table[name]`` (a list of addresses, or a callable
    returning one); every lookup of such a name is recorded in ``asked``."""
    real = socket.getaddrinfo
    state: dict[str, Any] = {"table": {}, "asked": []}

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Answers:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not name.endswith(".test"):
            return real(host, port, *args, **kwargs)
        state["asked"].append(name)
        entry = state["table"].get(name, [])
        addresses = entry() if callable(entry) else entry
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        answers: Answers = []
        for address in addresses:
            if ":" in address:
                answers.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                answers.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return answers

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return state


class Listener:
    """A TCP port on 127.0.0.1 that only counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((STAND_IN, 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])

    def connections(self) -> int:
        self.sock.setblocking(False)
        count = 0
        while True:
            try:
                accepted, _ = self.sock.accept()
            except BlockingIOError:
                return count
            accepted.close()
            count += 1

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((STAND_IN, 0))
        return int(probe.getsockname()[1])


class Seen(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host", ""))  # type: ignore[attr-defined]
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class Server:
    """An HTTP(S) server on 127.0.0.1 recording the Host header (and SNI) of each request."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.httpd = ThreadingHTTPServer((STAND_IN, 0), Seen)
        self.httpd.hosts = []  # type: ignore[attr-defined]
        self.sni: list[str | None] = []
        if context is not None:
            context.sni_callback = lambda _sock, name, _ctx: self.sni.append(name)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def hosts(self) -> list[str]:
        hosts: list[str] = self.httpd.hosts  # type: ignore[attr-defined]
        return hosts

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def guarded_session(allowed: Callable[[str], bool] = only_the_stand_in) -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    adapter = GuardedAdapter(allowed=allowed)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def test_a_private_address_is_never_connected_to(resolver: Any, listener: Listener) -> None:
    resolver["table"]["internal.test"] = [STAND_IN]
    client = HttpClient(read_timeout=1, connect_timeout=1)
    for url in (
        f"http://{STAND_IN}:{listener.port}/",
        f"http://[::ffff:{STAND_IN}]:{listener.port}/",
        f"http://internal.test:{listener.port}/",
    ):
        with pytest.raises(ProviderError) as caught:
            client.request("GET", url, provider="X", operation="read", write=False, user_url=True)
        assert caught.value.kind == ErrorKind.PERMANENT
    assert listener.connections() == 0


def test_an_open_and_a_closed_internal_port_get_the_same_refusal(
    resolver: Any, listener: Listener
) -> None:
    resolver["table"]["internal.test"] = [STAND_IN]
    client = HttpClient(read_timeout=1, connect_timeout=1)
    for host in (STAND_IN, "internal.test"):
        outcomes = []
        for port in (listener.port, closed_port()):
            with pytest.raises(ProviderError) as caught:
                client.request(
                    "GET",
                    f"http://{host}:{port}/",
                    provider="X",
                    operation="read",
                    write=False,
                    user_url=True,
                )
            outcomes.append((caught.value.kind, str(caught.value), caught.value.retry_after))
        assert outcomes[0] == outcomes[1]


def test_every_answer_is_vetted_before_any_connection(resolver: Any, listener: Listener) -> None:
    resolver["table"]["mixed.test"] = [STAND_IN, "10.0.0.1"]
    with pytest.raises(BlockedAddressError), guarded_session() as session:
        session.get(f"http://mixed.test:{listener.port}/", timeout=1)
    assert listener.connections() == 0


def test_a_rebinding_name_is_resolved_once_per_connection_and_the_vetted_address_used(
    resolver: Any, listener: Listener
) -> None:
    """The first answer is the (allowed) stand-in, every later one the metadata address: the
    connection made from the first answer reaches the stand-in without a second lookup, and a
    new connection after the rebind is refused without connecting anywhere."""
    server = Server()
    answers = iter([[STAND_IN]])
    resolver["table"]["rebind.test"] = lambda: next(answers, ["169.254.169.254"])
    try:
        with guarded_session() as session:
            reply = session.get(f"http://rebind.test:{server.port}/", timeout=2)
        assert reply.status_code == 200
        assert resolver["asked"] == ["rebind.test"]
        assert server.hosts == [f"rebind.test:{server.port}"]
        with pytest.raises(BlockedAddressError), guarded_session() as session:
            session.get(f"http://rebind.test:{server.port}/", timeout=2)
        assert resolver["asked"] == ["rebind.test", "rebind.test"]
        assert len(server.hosts) == 1
    finally:
        server.close()


def certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (its own CA) and its key, written as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls_is_verified_against_the_host_name_not_the_vetted_address(
    resolver: Any, tmp_path: Path
) -> None:
    cert_path, key_path = certificate(tmp_path, "hook.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server = Server(context)
    resolver["table"]["hook.test"] = [STAND_IN]
    resolver["table"]["other.test"] = [STAND_IN]
    try:
        with guarded_session() as session:
            reply = session.get(f"https://hook.test:{server.port}/", timeout=2, verify=cert_path)
            assert reply.status_code == 200
            assert server.sni == ["hook.test"]
            assert server.hosts == [f"hook.test:{server.port}"]
            with pytest.raises(requests.exceptions.SSLError):
                session.get(f"https://other.test:{server.port}/", timeout=2, verify=cert_path)
    finally:
        server.close()


# --- check_public_url: names and their DNS answers ----------------------------------------------


def test_a_name_is_accepted_only_when_every_answer_is_public(resolver: Any) -> None:
    resolver["table"]["public.test"] = ["8.8.8.8", "2001:4860:4860::8888"]
    resolver["table"]["mixed.test"] = ["8.8.8.8", "10.0.0.8"]
    assert (
        check_public_url("https://Public.test:8443/a/", field="url") == "https://public.test:8443/a"
    )
    with pytest.raises(ProviderError) as caught:
        check_public_url("https://mixed.test/", provider="Mastodon", what="instance URL")
    assert (
        str(caught.value) == "Mastodon: the instance URL must point to a public internet address."
    )
    assert not hasattr(caught.value, "field")  # the URL came from a provider: not a 422
    assert resolver["asked"] == ["public.test", "mixed.test"]


def test_a_name_that_does_not_exist_is_the_input_at_fault(resolver: Any) -> None:
    with pytest.raises(ProviderError) as caught:
        check_public_url("https://nowhere.test/", provider="Webhook", field="webhook_url")
    assert getattr(caught.value, "field", None) == "webhook_url"
    assert str(caught.value) == "Webhook: the URL host nowhere.test could not be resolved."


def test_a_resolver_that_fails_to_answer_is_not_the_input_at_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unanswered(*args: Any, **kwargs: Any) -> Answers:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", unanswered)
    with pytest.raises(ProviderError) as caught:
        check_public_url("https://busy.test/", provider="Webhook", field="webhook_url")
    assert not hasattr(caught.value, "field")
    assert caught.value.kind == ErrorKind.PERMANENT
    assert str(caught.value) == "Webhook: the URL host busy.test could not be resolved."


def test_local_names_and_literals_are_judged_without_asking_the_resolver(resolver: Any) -> None:
    for url in ("https://printer.local/", "https://localhost/", "https://[fe80::1]/"):
        with pytest.raises(ProviderError, match="public internet address"):
            check_public_url(url, field="url")
    assert (
        check_public_url("https://[2001:4860:4860::8888]/x/") == "https://[2001:4860:4860::8888]/x"
    )
    assert check_public_url("https://unknown.test/", resolve=False) == "https://unknown.test"
    assert check_public_url("http://printer.local/", allow_private=True) == "http://printer.local"
    assert resolver["asked"] == []


@pytest.mark.parametrize(
    "url",
    ["https://8.8.8.8:99999/", "https://user@8.8.8.8/", "http://8.8.8.8/", "https:///path"],
)
def test_a_malformed_url_is_refused_at_its_field(url: str) -> None:
    with pytest.raises(ProviderError) as caught:
        check_public_url(url, provider="Mastodon", what="instance URL", field="instance_url")
    assert getattr(caught.value, "field", None) == "instance_url"
    assert str(caught.value) == "Mastodon: the instance URL is not a valid https URL."
