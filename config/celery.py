import os

from celery import Celery
from celery.signals import beat_init, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("herald")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def check_database_connections(**_: object) -> None:
    """Around every task, as Django does around every request: close the connections that are
    broken or older than CONN_MAX_AGE; the next query reconnects (after a health check, with
    CONN_HEALTH_CHECKS). Celery itself then keeps them open (CELERY_DB_REUSE_MAX in settings)."""
    from django.db import close_old_connections

    close_old_connections()


@beat_init.connect
def quiet_broker_outages(**_: object) -> None:
    """Beat logs a traceback for every tick it cannot send while the broker is down (one a
    second with the dispatcher's interval): report the outage once per interval instead. The
    ticks resume by themselves when the broker is back."""
    import logging

    from config.outages import OutageLogFilter

    logging.getLogger("celery.beat").addFilter(OutageLogFilter())
