"""Database helpers shared by the apps."""

from __future__ import annotations

from django.db import connection


def release_connection() -> None:
    """Give a pooled connection back to the pool before a long wait (a provider call).

    With ``HERALD_DB_POOL_SIZE`` the delivery worker's threads share a few connections; a thread
    that held its connection while the provider answers would make the pool size, not the
    worker's concurrency, the number of sends at once. The next query takes a connection from
    the pool again. Nothing happens without a pool, or inside a transaction.
    """
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()
