"""`python manage.py worker`: run operations from the procrastinate queue (start one or more, on any host)."""

from __future__ import annotations

import logging

from django.core.management.base import CommandError

from operations.conf import ops_settings
from registry.readiness import DatabaseCommand

log = logging.getLogger(__name__)


class Command(DatabaseCommand):
    help = "Run a flexzone operations worker (procrastinate, PostgreSQL)."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=None, help="operations run at once (default: setting)")
        parser.add_argument("--name", default=None, help="worker name shown in procrastinate's tables")

    def handle(self, *args, **options):
        conf = ops_settings()
        if conf.queue != "procrastinate":
            raise CommandError("the worker needs FLEXZONE_OPS_QUEUE=procrastinate and DATABASE_URL=postgres://...")
        from procrastinate.contrib.django import app

        from operations.affinity import own_queue, serve
        from operations.chores import start_chores_thread, stop_chores_thread
        from operations.pool import pool
        from operations.tasks import QUEUE

        concurrency = options["concurrency"] or conf.worker_concurrency
        pool.serves_queue = True  # its session rows say so: operations are routed here (affinity.py)
        serve(own_queue(pool.holder), concurrency)
        if options["verbosity"] < 2:
            # procrastinate logs every job at INFO, including our periodic sweeps every few seconds.
            logging.getLogger("procrastinate").setLevel(logging.WARNING)
        # procrastinate says when it stops taking jobs (SIGTERM) only in its log: watch for it there.
        worker_log = logging.getLogger("procrastinate.worker")
        worker_log.addFilter(_StopWatch(logging.INFO if options["verbosity"] >= 2 else logging.WARNING))
        worker_log.setLevel(logging.INFO)
        # Worker liveness for procrastinate matches ours, so a SIGKILLed worker's job is found stalled
        # as soon as its operation's heartbeat is.
        start_chores_thread()  # on a thread of their own: never waiting behind operations for a slot
        try:
            with app.replace_connector(app.connector.get_worker_connector()):
                app.run_worker(
                    # The shared queue, and this process's own: operations for routers its pool holds a
                    # session to (operations/affinity.py).
                    queues=[QUEUE, own_queue(pool.holder)],
                    concurrency=concurrency,
                    name=options["name"],
                    update_heartbeat_interval=conf.heartbeat,
                    stalled_worker_timeout=conf.stale_after,
                    delete_jobs="successful",
                )
        finally:
            stop_chores_thread()
            pool.close_all()


class _StopWatch(logging.Filter):
    """Tells operations/affinity.py when procrastinate stops taking jobs, so that what waits in this
    worker's own queue goes to the others while it drains; passes records from `shown` up."""

    def __init__(self, shown: int) -> None:
        super().__init__()
        self.shown = shown

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "action", None) == "stopping_worker":
            from operations.affinity import stop_serving

            stop_serving()
        return record.levelno >= self.shown
