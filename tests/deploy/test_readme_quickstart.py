"""The README quick start, run as written against a live ``make run``.

The fenced ``sh`` block after the ``<!-- quickstart`` comment in README.md is read and each of its
lines is carried out in order, so the README cannot drift from what Herald does:

* ``make run`` → ``scripts/run.py`` (what the target runs after installing) on a free port with a
  temporary ``HERALD_DATA_DIR``: gunicorn, a Celery worker and beat on a SQLite file database;
  the one-time administrator password is read from its framed output.
* the comment lines (sign in, create a token with the checkbox they name) → the sign-in form and
  the developer settings page, with ``requests`` as a browser would;
* ``. .venv/bin/activate`` → the ``herald`` of this virtual environment is used;
* every ``herald …`` line → that command, run by the installed console script with its own
  ``HERALD_CONFIG_DIR``; ``auth login`` reads the token from stdin; it must exit 0;
* ``curl URL`` → a GET of the URL, whose Atom document must hold the published text.

Substitutions, the only ones: ``http://127.0.0.1:8000`` → the test server's address;
``<account-id>`` and ``<profile-url>`` → the ``ID`` and ``Profile URL`` lines that
``herald account connect`` printed. A line of any other kind fails the test.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import requests

from tests.make_run_support import Run, attempt_sign_in, password_box
from tests.worker_harness import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTED_URL = "http://127.0.0.1:8000"
ATOM = "{http://www.w3.org/2005/Atom}"
COMMAND_SECONDS = 180  # a bound on each command (--follow waits for the worker), not its cost
CREATED_TOKEN = re.compile(r'id="created-token">\s*([^<\s]+)\s*<')


def quickstart_lines() -> list[str]:
    """The lines of the fenced block after the ``<!-- quickstart`` comment."""
    text = README.read_text(encoding="utf-8")
    marker = text.index("<!-- quickstart")
    start = text.index("```sh\n", marker) + len("```sh\n")
    end = text.index("\n```", start)
    return text[start:end].splitlines()


def create_token(session: requests.Session, base: str, checkbox_label: str) -> str:
    """The developer settings form as a browser sends it; the secret shown once after it (at
    once, or on the page the POST redirects to)."""
    page = session.get(f"{base}/settings/developer/", timeout=10)
    assert checkbox_label in page.text, "the README names the checkbox the page has"
    response = session.post(
        f"{base}/settings/developer/",
        data={
            "action": "create",
            "name": "quick start",
            "can_write": "on",
            "workspace": "",
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/settings/developer/"},
        timeout=10,
    )
    assert response.status_code == 200, response.status_code
    found = CREATED_TOKEN.search(response.text)
    assert found, "the new token is shown once"
    return found.group(1)


def test_readme_quick_start_publishes_a_post_to_a_feed(tmp_path: Path) -> None:
    lines = quickstart_lines()
    home = tmp_path / "home"
    home.mkdir()
    config_dir = tmp_path / "herald-config"
    herald_env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    herald_env["HERALD_CONFIG_DIR"] = str(config_dir)
    herald = Path(sys.executable).with_name("herald")
    run: Run | None = None
    base = ""
    password = ""
    token = ""
    printed: dict[str, str] = {}
    published_text = ""
    feed_checked = False
    session: requests.Session | None = None
    try:
        for line in lines:
            words = shlex.split(line, comments=True)
            if not words:  # a comment: the browser steps
                if "/login/" in line:
                    assert run is not None, "the quick start signs in after `make run`"
                    session = attempt_sign_in(base, password)
                    assert session is not None, "the printed password signs in"
                label = re.search(r'create a token with "([^"]+)"', line)
                if label:
                    assert session is not None, "the token is created once signed in"
                    token = create_token(session, base, label.group(1))
                continue
            if words == ["make", "run"]:
                run = Run(tmp_path / "data", free_port(), home)
                base, banner = run.started()
                password = password_box(run, banner)
                continue
            if words == [".", ".venv/bin/activate"]:
                assert herald.exists(), "the virtual environment has `herald`"
                continue
            arguments = [
                word.replace(DOCUMENTED_URL, base)
                .replace("<account-id>", printed.get("ID", "<account-id>"))
                .replace("<profile-url>", printed.get("Profile URL", "<profile-url>"))
                for word in words
            ]
            assert not any("<" in word for word in arguments), f"unfilled placeholder: {line}"
            if words[0] == "curl":
                feed = requests.get(arguments[-1], timeout=10)
                assert feed.status_code == 200, feed.status_code
                assert feed.headers["Content-Type"].startswith("application/atom+xml")
                root = ET.fromstring(feed.content)  # noqa: S314  (Herald's own output, in a test)
                entries = root.findall(f"{ATOM}entry")
                texts = ["".join(entry.itertext()) for entry in entries]  # title, content, links, …
                assert any(published_text in text for text in texts), texts
                feed_checked = True
                continue
            assert words[0] == "herald", f"a quick-start line the test does not know: {line}"
            completed = subprocess.run(
                [str(herald), *arguments[1:]],
                input=token + "\n" if words[1:3] == ["auth", "login"] else "",
                capture_output=True,
                text=True,
                timeout=COMMAND_SECONDS,
                env=herald_env,
                cwd=tmp_path,
                check=False,
            )
            output = completed.stdout + completed.stderr
            assert completed.returncode == 0, f"{line}\n{output}"
            assert token not in output
            if words[1:3] == ["account", "connect"]:
                for row in completed.stdout.splitlines():
                    label_, _, value = row.partition("  ")
                    if label_ in ("ID", "Profile URL"):
                        printed[label_] = value.strip()
                assert printed.get("Profile URL", "").startswith(f"{base}/feeds/"), output
            if words[1:3] == ["publication", "create"]:
                published_text = words[words.index("--text") + 1]
                assert re.search(r"→ published|: published\s", completed.stdout), output
                assert re.search(r"^Publication \S+: published ", completed.stdout, re.M), output
        assert feed_checked, "the quick start ends by opening the feed"
        assert run is not None
        assert run.stop(signal.SIGINT) == 0
    finally:
        if run is not None and run.process.poll() is None:
            run.kill()
