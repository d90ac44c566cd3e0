"""Celery's Redis broker transport (kombu's), reusing one redis-py client per channel.

kombu's Redis channel builds a new ``redis.Redis`` client for every synchronous operation it
makes: each task message published, and each acknowledgement and reservation in the workers.
Building one fills redis-py's table of about 170 response callbacks, about a quarter of the CPU
of publishing a task message (``bench/delivery.py``: the dispatcher publishes thousands in a
burst). The connection pool was already shared; this shares the client object that wraps it,
which is thread-safe. When kombu replaces the channel's pool (after a connection error), the next
operation builds a new client on the new pool.

Selected in ``config/settings.py`` for ``redis://`` broker URLs (``rediss://`` keeps kombu's
own transport, whose TLS defaults depend on the scheme's name).

Also the filesystem transport of ``make run`` (no ``REDIS_URL``), whose messages are written
atomically (:class:`FilesystemChannel`).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class RedisChannel(redis.Channel):
    # _create_client is kombu's own (not in its stubs): the two ignores below.
    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[misc]
        pool = self.pool
        client = self.__dict__.get("_shared_client")
        if client is None or client.connection_pool is not pool:
            client = super()._create_client()  # type: ignore[misc]
            self.__dict__["_shared_client"] = client
        return client


class RedisTransport(redis.Transport):
    Channel = RedisChannel


class FilesystemChannel(filesystem.Channel):
    """kombu's filesystem channel, writing each message under a temporary name first.

    kombu creates the message file under its final name, then writes it: a worker that lists
    the folder in between reads an empty file, and the JSON error stops the worker for good
    ("Unrecoverable error", and ``make run`` stops everything). Seen under ``make run`` with a
    burst of 1,000 due posts (bench/burst.py ``--embedded``). Here the message is written to
    ``<name>.part``, which no queue matches, and renamed in place (atomic in one folder).
    """

    # kombu's filesystem channel calls it payload (the stubs: message), and passes **kwargs.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        partial = path + ".part"
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {path!r} to directory") from exc


class FilesystemTransport(filesystem.Transport):
    Channel = FilesystemChannel
