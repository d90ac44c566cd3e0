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
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis


class RedisChannel(redis.Channel):
    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool = self.pool
        client = self.__dict__.get("_shared_client")
        if client is None or client.connection_pool is not pool:
            client = super()._create_client()
            self.__dict__["_shared_client"] = client
        return client


class RedisTransport(redis.Transport):
    Channel = RedisChannel
