"""gunicorn's threaded worker, with refused TLS handshakes recorded in the audit log.

A client refused in the handshake (no certificate, an unknown CA, expired...) never reaches Django,
so without this the refusal is only a debug line in the server's log. Each one becomes an
AuditEvent (action "tls.handshake", outcome denied, the peer address and OpenSSL's reason), at most
`LIMIT` a minute per worker process so that a flood of handshakes cannot flood the database; the
events say how many were left out.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time

from gunicorn.workers.gthread import ThreadWorker

log = logging.getLogger("flexzone.tls")
LIMIT = 60  # recorded refusals per minute per worker process


class _Budget:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._window = 0.0
        self._used = 0
        self.skipped = 0

    def take(self) -> tuple[bool, int]:
        """(may record, refusals left out since the last recorded one)."""
        with self._guard:
            now = time.monotonic()
            if now - self._window >= 60.0:
                self._window, self._used = now, 0
            if self._used >= LIMIT:
                self.skipped += 1
                return False, 0
            self._used += 1
            skipped, self.skipped = self.skipped, 0
            return True, skipped


_budget = _Budget()


def record_handshake_refusal(addr, exc: ssl.SSLError) -> None:
    from django.db import close_old_connections, connection, transaction

    from access.audit import refusals_total
    from access.models import AuditEvent, AuditOutcome

    refusals_total.labels("tls").inc()  # every one, even those the audit leaves out
    allowed, skipped = _budget.take()
    if not allowed:
        return
    peer = addr[0] if isinstance(addr, (tuple, list)) and addr else str(addr or "")
    reason = getattr(exc, "reason", None) or str(exc)
    detail = f"TLS handshake refused: {reason} ({exc.__class__.__name__}: {str(exc)[:300]})"
    if skipped:
        detail += f"; {skipped} more refusal(s) before this one were not recorded (limit {LIMIT}/minute)"
    try:
        close_old_connections()
        with transaction.atomic():
            if connection.vendor == "postgresql":
                # Never wait long for a table lock (an administrator's maintenance, say): a refusal
                # that cannot be written at once is logged instead of holding a server thread.
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '200ms'")
            AuditEvent.objects.create(action="tls.handshake", method="TLS", path="", outcome=AuditOutcome.DENIED,
                                      status_code=0, detail=detail[:2000], remote_addr=peer[:64])
    except Exception:  # noqa: BLE001 - the audit must never take the server down
        log.warning("could not record a refused TLS handshake from %s", peer, exc_info=True)


class AuditingThreadWorker(ThreadWorker):
    def run(self) -> None:
        # Called once the application is loaded, just before the accept loop: the line those who start a
        # server wait for (lab.deployment.wait_until_serving). gunicorn says "Listening at" before any
        # worker has loaded the application, and a worker still booting leaves a TLS handshake hanging.
        self.log.info("Serving requests (pid: %s)", self.pid)
        super().run()

    def handle_error(self, req, client, addr, exc):
        if req is None and isinstance(exc, ssl.SSLError) and exc.args and exc.args[0] != ssl.SSL_ERROR_EOF:
            record_handshake_refusal(addr, exc)
        return super().handle_error(req, client, addr, exc)
