"""gunicorn configuration for the API: mutual TLS with the CRL checked in every handshake.

Used by `manage.py serve` (`-c python:serving.gunicorn_conf`). Paths come from the Django settings
(FLEXZONE_TLS_CERT, FLEXZONE_TLS_KEY, FLEXZONE_TLS_CA, FLEXZONE_TLS_CRL or FLEXZONE_PKI_DIR).

gunicorn's sync and gthread workers call `ssl_context` for every accepted connection. Building a
context costs a few milliseconds, so one is kept and rebuilt only when the CRL file's
(mtime_ns, size, inode) changes: a new CRL takes effect on the next handshake without a restart.
It must be a new context, not `load_verify_locations` on the live one: a session resumed from the
old context would skip verification, whereas ticket keys are per context. An unreadable or expired
CRL fails closed: OpenSSL then refuses every client.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flexzone.settings")

from django.conf import settings  # noqa: E402  (needs DJANGO_SETTINGS_MODULE first)

log = logging.getLogger("flexzone.tls")

wsgi_app = "flexzone.wsgi:application"
worker_class = "serving.gunicorn_worker.AuditingThreadWorker"  # gthread, with refused handshakes audited
threads = int(os.environ.get("FLEXZONE_API_THREADS", "8"))
workers = int(os.environ.get("FLEXZONE_API_WORKERS", "2"))
# A short keep-alive bounds how long an idle connection lives; the app re-checks the CRL anyway.
keepalive = int(os.environ.get("FLEXZONE_API_KEEPALIVE", "5"))
# Connections wait on operations (?wait=SECONDS), so the worker timeout must exceed the longest wait.
timeout = 120
# The longest request line gunicorn reads (its default is 4094): a plan naming the most hosts a request
# may (HOSTS_MAX of 63 characters each) fits. A longer line is a 414 from gunicorn, documented as such.
limit_request_line = 8190
if settings.FLEXZONE_TRUST_PROXY_HEADERS:
    # Behind nginx: plain HTTP on a unix socket that only the proxy's group may open (0770).
    umask = 0o007
else:
    certfile = str(settings.FLEXZONE_TLS_CERT)
    keyfile = str(settings.FLEXZONE_TLS_KEY)
    ca_certs = str(settings.FLEXZONE_TLS_CA)
    cert_reqs = ssl.CERT_REQUIRED
accesslog = "-"

_cache: dict = {"key": None, "context": None}
_lock = threading.Lock()


def _crl_key() -> tuple[int, int, int] | None:
    try:
        st = os.stat(settings.FLEXZONE_TLS_CRL)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def ssl_context(conf, default_ssl_context_factory) -> ssl.SSLContext:
    """The server context: CA-verified client certificate required, leaf checked against the CRL.

    Without a loadable CRL the context still demands one (VERIFY_CRL_CHECK_LEAF with no CRL), so every
    client is refused ("unable to get certificate CRL") until a good CRL appears: fail closed.
    """
    key = _crl_key()
    with _lock:
        if key is None or _cache["key"] != key:
            context = default_ssl_context_factory()
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.verify_mode = ssl.CERT_REQUIRED
            context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
            try:
                context.load_verify_locations(cafile=str(settings.FLEXZONE_TLS_CRL))
                log.info("TLS context (re)built with CRL %s", settings.FLEXZONE_TLS_CRL)
            except (OSError, ssl.SSLError) as exc:
                key = None
                log.error("CRL %s unusable (%s): refusing every client until it is replaced",
                          settings.FLEXZONE_TLS_CRL, exc)
            _cache.update(key=key, context=context)
        return _cache["context"]


def post_worker_init(worker) -> None:
    """Each API worker process that runs operations itself (FLEXZONE_OPS_QUEUE=thread, the SQLite demo)
    starts the chores and picks up operations still queued from before a restart; with procrastinate
    this does nothing (the `manage.py worker` processes do both). Nor in a process without Django: the
    bare app `python -m bench api` serves with this same configuration as its ceiling (bench/api_ceiling.py)."""
    from django.apps import apps

    if not apps.ready:
        return
    from operations import queue

    queue.current().start()


# Prometheus: the workers of one server count into one directory, so a scrape of any worker reports
# all of them. Without FLEXZONE_METRICS_DIR (settings.py exports it as PROMETHEUS_MULTIPROC_DIR) the
# master makes a private one before it forks its workers, and removes it when it stops (a master
# that is killed leaves it in the temporary directory).
_private_metrics_dir: str | None = None


def on_starting(server) -> None:
    global _private_metrics_dir
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        import tempfile

        _private_metrics_dir = tempfile.mkdtemp(prefix="flexzone-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = _private_metrics_dir


def child_exit(server, worker) -> None:
    """A worker that exited no longer has sessions open: drop its live gauges from the sums."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _private_metrics_dir:
        import shutil

        shutil.rmtree(_private_metrics_dir, ignore_errors=True)
