"""The pages the lists' one-statement path (api/fast_lists.py) served, kept per process and served
again only when the database says, in that request's own statement, that nothing they show has changed.

A page shows links or operations, and names of sites, devices, routers, zones and principals, and for
a site-scoped principal what its scope hides. Each list's generation (operations/generation.py) grows
with every committed change of a link (the links') or an operation (the journal's), the registry's
(registry 0001, access 0001) with every change of the inventory or of a principal or its scope. A page
is kept under its list's and the registry's, as read by the statement that built it, in the same
snapshot: it is served again only to the same certificate's principal (same id, role and scope flag)
when a later request's statement reads the same generations, so any change committed since to what it
shows, however it was written, makes it unreachable. Every request still makes its one statement: the
principal (a revoked one is refused by Django), the generations and, only when they differ from the
kept page's, the page itself. A generation lower than
one seen (a database restored to an earlier point) forgets every page. Changes made with the triggers
off (session_replication_role=replica, ALTER TABLE ... DISABLE TRIGGER) are not seen, as for the
registry's read cache: restart the API after such work.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass

ENTRIES = 512
LARGEST = 512 * 1024  # bytes: a larger page (its body and its items) is not kept
BUDGET = 32 * 1024 * 1024  # bytes kept per process at most


@dataclass
class Page:
    """A body served, the generations it was built at (`token`), the principal it was built for, and each
    of its items' bytes by the mark of the row it shows (api/fast_sql.page_statement): while the registry's
    generation is unchanged, a row with the same mark is written as the same bytes in a page built later.
    `stale`: the last check found the generations moved on (the next request goes straight to the page's
    statement, which tells the same)."""

    token: str
    reader: tuple
    body: bytes
    items: dict[str, bytes]
    stale: bool = False

    @functools.cached_property
    def size(self) -> int:
        """Its bytes, counted once (nothing of it but `stale` changes after it is made)."""
        return len(self.body) + sum(len(mark) + len(item) for mark, item in self.items.items())


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
        size = page.size
        with self._guard:
            replaced = self._entries.pop(key, None)
            self._bytes -= replaced.size if replaced else 0
            if size > LARGEST:
                return
            self._bytes += size
            self._entries[key] = page
            while len(self._entries) > ENTRIES or self._bytes > BUDGET:
                _key, gone = self._entries.popitem(last=False)
                self._bytes -= gone.size

    def saw(self, *generations: tuple[str, int]) -> None:
        """(epoch, generation) pairs read: one lower than seen before in its epoch forgets every page."""
        with self._guard:
            for epoch, generation in generations:
                if generation < self._highest.get(epoch, generation):
                    self._entries.clear()
                    self._bytes = 0
                self._highest[epoch] = max(generation, self._highest.get(epoch, generation))
