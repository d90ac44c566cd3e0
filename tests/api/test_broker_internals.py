"""``config/broker.py`` overrides two methods of kombu's transports: the Redis channel's
``_create_client`` (one redis-py client per channel: about a quarter of the CPU of publishing a
task message, bench/README.md) and the filesystem channel's ``_put`` (the virtual-transport
method a kombu transport implements; written atomically for ``make run``). Each is checked here
by name and signature, so that a kombu upgrade that renames or reshapes one fails in this file,
saying which, instead of as a slow or crashing worker."""

from __future__ import annotations

import inspect

from kombu.transport import filesystem, redis

from config.broker import FilesystemChannel, RedisChannel


def test_kombu_redis_channel_builds_clients_through_create_client() -> None:
    parameters = inspect.signature(redis.Channel._create_client).parameters
    assert list(parameters) == ["self", "asynchronous"]
    assert parameters["asynchronous"].default is False
    assert "_create_client" in redis.Channel.__dict__
    assert RedisChannel._create_client is not redis.Channel._create_client


def test_kombu_filesystem_channel_writes_messages_through_put() -> None:
    assert list(inspect.signature(filesystem.Channel._put).parameters) == [
        "self",
        "queue",
        "payload",
        "kwargs",
    ]
    assert "data_folder_out" in dir(filesystem.Channel)
    assert FilesystemChannel._put is not filesystem.Channel._put
