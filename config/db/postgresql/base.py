"""Django's PostgreSQL backend, with a connection health check that costs no round trip while
the connection is quiet, and prepared statements for the queries that ask for them.

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

Prepared statements: ``prepared_cursor()`` is a cursor whose statements PostgreSQL parses and
plans once per connection, then only executes (``config.queries.CompiledQuery`` runs the hot
queries on it). Every other query keeps Django's client-side binding, unprepared: server-side
binding changes the meaning of some ORM queries, and the statements' text changes with each
call anyway. psycopg keeps the connection's statements (``prepared_max``, least recently used
deallocated) and forgets them on a rollback; a new connection starts empty. A statement the
server no longer matches (a schema change: "cached plan must not change result type"; or a
pooler that lost it) makes this connection stop preparing, and outside a transaction the
statement runs again unprepared, so the query still answers. ``HERALD_DB_PREPARE=false``, or
``OPTIONS["prepare_threshold"]`` set to ``None``, turns preparing off: needed behind a pooler
in transaction mode unless it keeps prepared statements (PgBouncer >= 1.22 with
``max_prepared_statements`` > 0).
"""

from __future__ import annotations

import logging
import select
import sys
from typing import Any

from django.db.backends.postgresql import base
from django.utils.asyncio import async_unsafe
from psycopg import errors, pq

from config.env import env_bool

logger = logging.getLogger(__name__)

# psycopg prepares nothing while a connection's threshold is None (Django's default), not even
# on ``prepare=True``. A threshold no query count reaches prepares only what asks to be.
ONLY_WHEN_ASKED = sys.maxsize

_MAYBE_STALE = (
    errors.InvalidSqlStatementName,
    errors.DuplicatePreparedStatement,
    errors.FeatureNotSupported,
)


class PreparedStatementCursor(base.ServerBindingCursor):
    """Binds parameters on the server and runs every statement as a prepared statement of the
    connection (psycopg prepares it on first use, then reuses it)."""

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Any:
        try:
            return super().execute(query, params, prepare=prepare is not False, binary=binary)
        except _MAYBE_STALE as error:
            if not _prepared_statement_stale(error):
                raise
            # psycopg would go on using the stale statement on this connection: stop preparing
            # here (a new connection prepares again). Outside a transaction, nothing was done:
            # run it again, unprepared. Inside one, the transaction has failed: raise.
            self.connection.prepare_threshold = None
            logger.warning(
                "Prepared statement stale (%s: %s); this connection stops preparing",
                error.sqlstate,
                error,
            )
            if self.connection.info.transaction_status != pq.TransactionStatus.IDLE:
                raise
            return super().execute(query, params, prepare=False, binary=binary)


def _prepared_statement_stale(error: errors.Error) -> bool:
    """The server no longer has, or no longer matches, the statement psycopg prepared."""
    if isinstance(error, errors.FeatureNotSupported):  # "cached plan must not change result type"
        return error.diag.source_function == "RevalidateCachedQuery"
    return True  # missing (e.g. a pooler switched sessions), or a name taken in a shared session


class DatabaseOperations(base.DatabaseOperations):
    def last_executed_query(self, cursor: Any, sql: str, params: Any) -> str | None:
        if isinstance(cursor, PreparedStatementCursor):
            # psycopg keeps no text of a prepared execution. The query log shows the SQL with
            # its values inlined, as for Django's client-side binding.
            try:
                return self.compose_sql(sql, params)
            except errors.DataError:
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        configured = "prepare_threshold" in self.settings_dict["OPTIONS"]
        if not configured and env_bool("HERALD_DB_PREPARE", default=True):
            params["prepare_threshold"] = ONLY_WHEN_ASKED
        return params

    @async_unsafe
    def prepared_cursor(self) -> Any:
        """A cursor whose statements are prepared on this connection (server-side binding), as
        ``cursor()`` wraps it: execute wrappers and query logging see its queries. A plain
        ``cursor()`` where preparing is off."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        connection = self.connection
        with self.wrap_database_errors:
            if connection.prepare_threshold is None:
                return self._prepare_cursor(self.create_cursor())
            cursor = PreparedStatementCursor(connection)
            # As ``create_cursor`` does: a time zone other than the connection's, on the cursor.
            tzloader = connection.adapters.get_loader(base.TIMESTAMPTZ_OID, base.Format.TEXT)
            if self.timezone != tzloader.timezone:
                base.register_tzloader(self.timezone, cursor)
            return self._prepare_cursor(cursor)

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
