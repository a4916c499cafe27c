"""The pages the lists' one-statement path (api/fast_lists.py) served, kept per process and served
again only when the database says, in that request's own statement, that nothing they show has changed.

A page shows links or operations, and names of sites, devices, routers, zones and principals, and for
a site-scoped principal what its scope hides. The lists' generation (operations/generation.py) grows
with every committed change of a link or an operation, the registry's (registry 0001, access 0001)
with every change of the inventory or of a principal or its scope. A page is kept under both, as read
by the statement that built it, in the same snapshot: it is served again only to the same
certificate's principal (same id, role and scope flag) when a later request's statement reads the
same generations, so any change committed since, however it was written, makes it unreachable. Every
request still makes its one statement: the principal (a revoked one is refused by Django), the
generations and, only when they differ from the kept page's, the page itself. A generation lower than
one seen (a database restored to an earlier point) forgets every page. Changes made with the triggers
off (session_replication_role=replica, ALTER TABLE ... DISABLE TRIGGER) are not seen, as for the
registry's read cache: restart the API after such work.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

ENTRIES = 512
LARGEST = 256 * 1024  # bytes: a larger page is not kept
BUDGET = 32 * 1024 * 1024  # bytes kept per process at most


@dataclass(frozen=True)
class Page:
    """A body served, the generations it was built at (`token`) and the principal it was built for."""

    token: str
    reader: tuple
    body: bytes


class Pages:
    """The pages this process served, least recently used first out (at most ENTRIES, BUDGET bytes), and
    the highest generations it has read, per epoch."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple, Page] = OrderedDict()
        self._bytes = 0
        self._highest: dict[str, int] = {}
        self._guard = threading.Lock()

    def get(self, key: tuple) -> Page | None:
        with self._guard:
            page = self._entries.get(key)
            if page is not None:
                self._entries.move_to_end(key)
            return page

    def put(self, key: tuple, page: Page) -> None:
        if len(page.body) > LARGEST:
            return
        with self._guard:
            replaced = self._entries.pop(key, None)
            self._bytes += len(page.body) - (len(replaced.body) if replaced else 0)
            self._entries[key] = page
            while len(self._entries) > ENTRIES or self._bytes > BUDGET:
                _key, gone = self._entries.popitem(last=False)
                self._bytes -= len(gone.body)

    def saw(self, *generations: tuple[str, int]) -> None:
        """(epoch, generation) pairs read: one lower than seen before in its epoch forgets every page."""
        with self._guard:
            for epoch, generation in generations:
                if generation < self._highest.get(epoch, generation):
                    self._entries.clear()
                    self._bytes = 0
                self._highest[epoch] = max(generation, self._highest.get(epoch, generation))
