"""An asyncio event loop on a thread of its own, for asyncio servers that tests and the lab run in-process.

A simulator or a data-path relay is written for asyncio; a test, a benchmark or a lab experiment is
plain threaded code. ``BackgroundLoop`` runs the loop on a daemon thread, opens the server on it, lets
any thread call into it, and shuts it down cleanly::

    background = BackgroundLoop("sim-brocade_fos")
    addresses = background.start(server.serve, server.aclose)   # `await server.serve()` on the loop thread
    links = background.call(server.links)                       # `server.links()` on the loop thread
    background.stop(server.aclose)                              # `await server.aclose()`, then the loop ends

It imports nothing but the standard library, so a process that only needs a relay starts quickly.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class BackgroundLoop:
    """One asyncio event loop served by a daemon thread named `name`, from `start()` to `stop()`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the loop has been started and not stopped yet."""
        return self.loop is not None and self.loop.is_running()

    def start(self, opening: Callable[[], Awaitable[T]], closing: Callable[[], Awaitable[object]] | None = None,
              timeout: float = 30.0) -> T:
        """Start the loop's thread and return what ``await opening()`` returns on it (bound addresses, say).

        If `opening` fails or takes longer than `timeout` seconds, ``await closing()`` undoes what it had
        opened (as in ``stop()``), the loop stops and the error is raised. Starting a started loop is
        refused (RuntimeError).
        """
        if self.loop is not None:
            raise RuntimeError(f"{self.name}: the background loop is already started")
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=self.name, daemon=True)
        self._thread.start()
        try:
            return self.run(_awaited(opening), timeout)
        except BaseException:
            self.stop(closing)
            raise

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        """Run `coroutine` on the loop from another thread and return its result (or raise its error;
        TimeoutError after `timeout` seconds). Never call it from the loop's own thread: it would wait
        for itself."""
        if self.loop is None:
            coroutine.close()
            raise RuntimeError(f"{self.name}: the background loop is not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def call(self, func: Callable[[], T], timeout: float = 10.0) -> T:
        """Return ``func()`` as called on the loop's thread, so it sees the loop's objects in a consistent
        state; called at once when already on that thread or when the loop is not running."""
        if not self.running or self.in_loop_thread():
            return func()

        async def call_it() -> T:
            return func()

        return self.run(call_it(), timeout)

    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the loop's thread (inside a callback or task of this loop)."""
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def stop(self, closing: Callable[[], Awaitable[object]] | None = None, timeout: float = 10.0) -> None:
        """Run ``await closing()`` on the loop (an error in it is logged, not raised: stopping must not fail
        on a half-dead connection), then stop the loop, join the thread and close the loop. Stopping a loop
        that is not started does nothing; the object may be started again afterwards."""
        loop, thread = self.loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            if closing is not None:
                try:
                    self.run(_awaited(closing), timeout)
                except Exception:  # noqa: BLE001 - see the docstring
                    log.exception("%s: error while stopping", self.name)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=timeout)
        loop.close()
        self.loop = self._thread = None


async def _awaited(func: Callable[[], Awaitable[T]]) -> T:
    return await func()
