"""Operations racing for one device or one router; routers held by one session at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection
from psycopg.conninfo import make_conninfo

from operations import DeviceBusy, execute, submit
from operations.locking import ADVISORY_NAMESPACE, router_lock
from operations.models import Grant, Link
from tests.support.agreement import add_third_site, assert_agreement, router_keys
from tests.support.sims import wire


def in_threads(*calls):
    """Run the calls at the same moment, each in its own thread with its own database connection."""
    results: list = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def run(index, call):
        try:
            barrier.wait()
            results[index] = call()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each racer got
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
def test_two_sites_racing_for_one_device_get_one_lock_and_one_link(lab_factory, sim_factory, secrets_dir):
    lab = lab_factory()
    third = add_third_site()
    third_sim = sim_factory("nishan_ips3000", telnet=("127.0.0.1", 0))
    wire(third.routers.get(), third_sim, secrets_dir)

    def connect(site):
        return lambda: execute(submit("add", {"site": site, "device_description": "XRAID1"}).pk)

    results = in_threads(connect("remote-site"), connect("third-site"))
    winners = [r for r in results if not isinstance(r, Exception)]
    losers = [r for r in results if isinstance(r, DeviceBusy)]
    assert len(winners) == 1 and len(losers) == 1, results
    assert winners[0].state == "succeeded", winners[0].error
    assert Grant.objects.filter(device__description="XRAID1").count() == 1
    assert_agreement(lab)
    holder = Grant.objects.get().site.name
    assert router_keys(third_sim if holder == "third-site" else lab.remote_sim) != set()
    assert router_keys(lab.remote_sim if holder == "third-site" else third_sim) == set()


@pytest.mark.django_db(transaction=True)
def test_operations_on_the_same_routers_are_serialized_and_all_land(lab_factory):
    # One management session allowed per router: a second concurrent session would be refused.
    lab = lab_factory(scale=0.02, max_sessions=1)
    results = in_threads(
        lambda: execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk),
        lambda: execute(submit("add", {"site": "primary-site", "device_description": "XRAID2"}).pk),
        lambda: execute(submit("add", {"site": "primary-site", "device_description": "XRAID3"}).pk),
    )
    assert [getattr(r, "state", r) for r in results] == ["succeeded"] * 3, [getattr(r, "error", r) for r in results]
    assert router_keys(lab.primary_sim) == {(8, 1, "127.0.0.22"), (8, 2, "127.0.0.22"), (8, 3, "127.0.0.22")}
    assert_agreement(lab)
    assert Link.objects.filter(state="up").count() == 6


@pytest.mark.django_db(transaction=True)
def test_a_router_held_by_another_process_is_waited_for(ops_lab):
    router_id = ops_lab.primary_rtr.pk
    env = {**os.environ}
    settings_dict = connection.settings_dict
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, psycopg\n"
            "conn = psycopg.connect(sys.argv[1], autocommit=True)\n"
            f"conn.execute('SELECT pg_advisory_lock({ADVISORY_NAMESPACE}, {router_id})')\n"
            "print('held', flush=True)\n"
            "time.sleep(1.5)\n",
            make_conninfo(
                **{
                    key: value
                    for key, value in {
                        "host": settings_dict["HOST"],
                        "port": str(settings_dict["PORT"] or ""),
                        "user": settings_dict["USER"],
                        "password": settings_dict["PASSWORD"],
                        "dbname": settings_dict["NAME"],
                    }.items()
                    if value
                }
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with router_lock(router_id, timeout=10):
            waited = time.monotonic() - started
        assert waited > 0.8
    finally:
        holder.kill()
        holder.wait()
