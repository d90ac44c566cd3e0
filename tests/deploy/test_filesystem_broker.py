"""make run's broker (no REDIS_URL): kombu's filesystem transport, each message written under a
temporary name and renamed in place (config/broker.py). kombu's own transport creates the file
under its final name before writing it, and a worker that read it in between stopped for good
(bench/burst.py --embedded: a JSON error, "Unrecoverable error", make run stopped everything)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from kombu import Connection
from kombu.utils.json import register_type

from config.broker import FilesystemTransport


class _Probe:
    """Serialized while the message is being written: records the message files seen then."""

    seen: list[tuple[str, int]]
    folder: Path


def _snapshot(probe: _Probe) -> str:
    for name in os.listdir(probe.folder):
        if name.endswith(".msg"):  # what a worker takes
            probe.seen.append((name, (probe.folder / name).stat().st_size))
    return "probe"


register_type(_Probe, "herald-test-broker-probe", _snapshot)


def _connection(transport: Any, folder: Path) -> Connection:
    return Connection(
        transport=transport,
        transport_options={"data_folder_in": str(folder), "data_folder_out": str(folder)},
    )


def test_no_message_file_is_visible_before_it_is_complete(tmp_path: Path) -> None:
    probe = _Probe()
    probe.seen, probe.folder = [], tmp_path
    with _connection(FilesystemTransport, tmp_path) as connection:
        queue = connection.SimpleQueue("herald-test")
        # The body is serialized before the transport sees it; the headers by the transport.
        queue.put({"n": 1}, headers={"probe": probe})
        message = queue.get(timeout=2)
        message.ack()
        queue.close()
    assert probe.seen == []  # kombu's transport: [('<ms>_<uuid>.herald-test.msg', 0)]
    assert message.payload["n"] == 1
    assert [name for name in os.listdir(tmp_path) if not name.startswith(".")] == []


def test_make_run_uses_it() -> None:
    if settings.CELERY_BROKER_URL.startswith("filesystem"):
        assert settings.CELERY_BROKER_TRANSPORT == "config.broker:FilesystemTransport"
        assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] == 0.1
