"""Who is writing: the name the database's write trail gives every row a write changes.

The trail itself is a row trigger on the tables of who may reach what (operations migration 0008): it
records each insert, update and delete with the row before and after, on every path, and reads who
wrote it from two settings of the writer's database connection, `flexzone.actor` (a short name) and
`flexzone.via` (how: the request, the command line). This module sets them:

- every connection starts with this process's (`process_actor`): the OS user and the command line, so a
  management command (`ca issue-client`, `routers trust`, `loaddemo`...), the shell or a worker is named;
- an API or admin request that writes names its principal for its duration (`acting`), then gives the
  connection back as it found it.

A connection that sets nothing (a `psql` session) is recorded under its database user.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

ACTOR, VIA = "flexzone.actor", "flexzone.via"


def process_actor() -> tuple[str, str]:
    """(actor, via) of this process: `os:<user>` and its command line."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        user = str(os.getuid())
    command = " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]) if sys.argv else "python"
    return f"os:{user}"[:63], f"command: {command}"[:500]


def _set(target: BaseDatabaseWrapper, actor: str, via: str) -> None:
    with target.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, false), set_config(%s, %s, false)", [ACTOR, actor, VIA, via])


def name_process(sender, connection: BaseDatabaseWrapper, **kwargs) -> None:
    """connection_created: a new connection speaks for this process until a request says otherwise."""
    if connection.vendor == "postgresql":
        _set(connection, *process_actor())


@contextmanager
def acting(actor: str, via: str) -> Iterator[None]:
    """Writes on this thread's connection are `actor`'s, made through `via`, until the block ends."""
    if connection.vendor != "postgresql":
        yield
        return
    _set(connection, actor[:63], via[:500])
    try:
        yield
    finally:
        if connection.connection is not None:  # still open (a failed one is replaced, and named anew)
            try:
                _set(connection, *process_actor())
            except Exception:  # noqa: BLE001 - a broken connection is closed and replaced, named anew
                connection.close()
