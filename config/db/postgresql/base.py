"""Django's PostgreSQL backend, with a connection health check that costs no round trip while
the connection is quiet.

With ``CONN_HEALTH_CHECKS``, Django checks a persistent connection before the first query of
every request (and, in the workers, of every task): ``SELECT 1`` on the server, one more round
trip per request. Here the check first looks at the connection without asking the server: it is
open, not in a transaction, and its socket has nothing to read. A healthy idle connection never
has anything to read, because the server speaks only when asked. A connection the server ended
(a restart, ``pg_terminate_backend``, an idle timeout) has its termination notice or the end of
the stream waiting, and so does one a proxy closed. Only then, or when psycopg already knows
the connection is broken, does Django's own check run (and reconnect if it fails). What neither
check can tell apart is a peer that vanished without a word (a cable cut): ``SELECT 1`` would
wait for the TCP timeout there too.

After a database error in a request, Django checks the connection with ``SELECT 1`` as before.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and not self.pool
            and self._quiet()
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _quiet(self) -> bool:
        """Open, idle, and nothing from the server since the last result."""
        connection = self.connection
        if connection.closed or connection.broken:
            return False
        if connection.info.transaction_status != pq.TransactionStatus.IDLE:
            return False
        try:
            poller = select.poll()
            poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False
