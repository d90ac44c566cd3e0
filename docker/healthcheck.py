"""Container health check: the liveness probe only.

    python /app/healthcheck.py http://127.0.0.1:8000/api/v1/health

Exit status 0 when the probe answers 200 with ``{"status": "ok"}``, 1 otherwise. It never calls
the readiness probe (/api/v1/ready): a database outage must not mark the web process unhealthy.
Standard library only.

Outside HERALD_ENVIRONMENT=local, Django accepts only the hosts in ALLOWED_HOSTS (default: the
host of HERALD_PUBLIC_URL), so the request carries one of those as its Host header.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000/api/v1/health"
TIMEOUT_SECONDS = 4.0


def _env(name: str) -> str:
    """Like config.env: NAME, or the contents of the file named by NAME_FILE."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        return Path(file_path).read_text(encoding="utf-8").strip()
    return os.environ.get(name, "").strip()


def probe_host() -> str | None:
    """A Host header the settings accept, or None to send the URL's own host.

    Mirrors config/settings.py: ALLOWED_HOSTS when set, else (outside local) the host of
    HERALD_PUBLIC_URL; locally 127.0.0.1 is always allowed.
    """
    for entry in _env("ALLOWED_HOSTS").split(","):
        host = entry.strip()
        if host and host != "*":
            # ".example.com" allows example.com and every subdomain of it.
            return host.lstrip(".")
    if _env("HERALD_ENVIRONMENT") in ("", "local"):
        return None
    public_url = _env("HERALD_PUBLIC_URL")
    hostname = urllib.parse.urlsplit(public_url).hostname if public_url else None
    if hostname and ":" in hostname:  # IPv6 literal
        return f"[{hostname}]"
    return hostname


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is a failed probe, not something to follow


def main(argv: list[str]) -> int:
    url = argv[1] if len(argv) > 1 else DEFAULT_URL
    if not url.startswith(("http://", "https://")):
        sys.stderr.write(f"unsupported probe URL: {url}\n")
        return 1
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    host = probe_host()
    if host:
        request.add_header("Host", host)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=TIMEOUT_SECONDS) as response:
            status = response.status
            body = json.loads(response.read(65536) or b"{}")
    except (OSError, ValueError, urllib.error.URLError) as exc:
        sys.stderr.write(f"liveness probe failed: {exc}\n")
        return 1
    if status != 200 or body.get("status") != "ok":
        sys.stderr.write(f"liveness probe failed: HTTP {status} {body!r}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
