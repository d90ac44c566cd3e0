"""Delivery (docs/decisions/0007-delivery-guarantees.md): claim a destination, re-check readiness, record the write before the
provider call, send with the destination's idempotency key, record the outcome atomically.

The database is the source of truth; broker messages are nudges. The dispatcher (beat) moves
due work into the queue and re-enqueues what a lost message or a dead worker left behind, so a
broker restart or a SIGKILL loses nothing, and a write that may have reached the provider is
reconciled, never blindly re-sent.

One module per sub-domain: ``send`` (claim and send one destination), ``politeness`` (in-flight
caps per account and host, host pauses), ``outcomes`` (record an outcome, retry with backoff,
settle the publication), ``reconcile`` (ambiguous writes) and ``dispatch`` (the beat tick).
"""

from publishing.services.delivery.dispatch import delivery_dispatch
from publishing.services.delivery.outcomes import backoff_seconds
from publishing.services.delivery.politeness import host_paused_until, provider_host
from publishing.services.delivery.reconcile import delivery_reconcile
from publishing.services.delivery.send import delivery_send, request_for

__all__ = [
    "backoff_seconds",
    "delivery_dispatch",
    "delivery_reconcile",
    "delivery_send",
    "host_paused_until",
    "provider_host",
    "request_for",
]
