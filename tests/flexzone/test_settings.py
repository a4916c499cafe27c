"""Start-up checks of the settings (flexzone/settings.py): every variable is read by a helper that stops
the process with the variable's name and the rule it broke; combinations that cannot work stop it too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from flexzone.settings import env_bool, env_choice, env_float, env_int, env_list, env_path, env_str

ROOT = Path(__file__).resolve().parents[2]


def start(**env: str) -> subprocess.CompletedProcess:
    """Django's start-up in a process of its own, with these variables (the rest of the environment kept)."""
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "flexzone.settings", **env}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=environment, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("read", "raw", "rule"), [
    (lambda: env_bool("FZ_TEST", False), "maybe", "must be one of"),
    (lambda: env_int("FZ_TEST", 1), "1.5", "must be an integer, got '1.5'"),
    (lambda: env_int("FZ_TEST", 1, minimum=1), "0", "must be >= 1, got 0"),
    (lambda: env_float("FZ_TEST", 1.0), "fast", "must be a number, got 'fast'"),
    (lambda: env_float("FZ_TEST", 1.0, minimum=0.1), "0.05", "must be >= 0.1, got 0.05"),
    (lambda: env_choice("FZ_TEST", "a", ("a", "b")), "c", "must be one of a, b, got 'c'"),
])
def test_a_bad_value_is_refused_naming_the_variable_and_the_rule(monkeypatch, read, raw, rule):
    monkeypatch.setenv("FZ_TEST", raw)
    with pytest.raises(ImproperlyConfigured) as refused:
        read()
    assert str(refused.value).startswith("FZ_TEST: ") and rule in str(refused.value)


def test_good_values_and_defaults_are_read(monkeypatch, tmp_path):
    monkeypatch.delenv("FZ_TEST", raising=False)
    assert (env_bool("FZ_TEST", True), env_int("FZ_TEST", 3), env_float("FZ_TEST", 2.5)) == (True, 3, 2.5)
    with pytest.raises(ImproperlyConfigured, match="FZ_TEST: required environment variable is not set"):
        env_str("FZ_TEST")
    for raw, value in (("yes", True), ("OFF", False), ("", False)):
        monkeypatch.setenv("FZ_TEST", raw)
        assert env_bool("FZ_TEST", True) is value
    monkeypatch.setenv("FZ_TEST", " a, b ,,c ")
    assert env_list("FZ_TEST", "") == ["a", "b", "c"]
    monkeypatch.setenv("FZ_TEST", "~/x")
    assert env_path("FZ_TEST", tmp_path) == Path.home() / "x"


@pytest.mark.parametrize(("env", "names"), [
    ({"FLEXZONE_API_PAGE_SIZE": "0"}, ["FLEXZONE_API_PAGE_SIZE", ">= 1"]),
    ({"FLEXZONE_DEBUG": "perhaps"}, ["FLEXZONE_DEBUG"]),
    ({"DATABASE_URL": "mysql://u@127.0.0.1/db"}, ["DATABASE_URL", "postgresql:// or sqlite://"]),
    ({"DATABASE_URL": "", "FLEXZONE_OPS_QUEUE": "procrastinate"}, ["FLEXZONE_OPS_QUEUE", "DATABASE_URL=postgres"]),
    ({"FLEXZONE_OPS_QUEUE": "celery"}, ["FLEXZONE_OPS_QUEUE", "procrastinate, thread, manual"]),
])
def test_start_up_stops_at_once_on_a_setting_that_cannot_work(env, names):
    started = start(**env)
    assert started.returncode != 0
    assert "ImproperlyConfigured" in started.stderr and all(name in started.stderr for name in names), started.stderr


@pytest.mark.parametrize("heartbeat", ["15", "20", "8"])
def test_a_heartbeat_not_well_inside_the_stale_limit_stops_start_up(heartbeat):
    started = start(FLEXZONE_OPS_HEARTBEAT=heartbeat, FLEXZONE_OPS_STALE_AFTER="15")
    assert started.returncode != 0
    assert "FLEXZONE_OPS_HEARTBEAT" in started.stderr and "FLEXZONE_OPS_STALE_AFTER" in started.stderr


def test_a_heartbeat_at_most_half_the_stale_limit_starts():
    started = start(FLEXZONE_OPS_HEARTBEAT="7.5", FLEXZONE_OPS_STALE_AFTER="15")
    assert started.returncode == 0, started.stderr


def test_a_metrics_directory_is_made_and_handed_to_prometheus_client(tmp_path):
    metrics = tmp_path / "metrics" / "here"
    started = subprocess.run([sys.executable, "-c", "import django, os; django.setup(); "
                              "print(os.environ['PROMETHEUS_MULTIPROC_DIR'])"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, env={**os.environ, "DJANGO_SETTINGS_MODULE": "flexzone.settings",
                                                         "FLEXZONE_METRICS_DIR": str(metrics)})
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str(metrics) and metrics.is_dir()


def _jit_and_timeout(**env: str | None) -> tuple[str, str]:
    """SHOW jit and SHOW statement_timeout on the connection of a Django started with these variables
    (None: unset)."""
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "flexzone.settings"}
    for name, value in env.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    started = subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.db import connection; "
                              "cursor = connection.cursor(); cursor.execute('SHOW jit'); jit = cursor.fetchone()[0]; "
                              "cursor.execute('SHOW statement_timeout'); print(jit, cursor.fetchone()[0])"],
                             env=environment, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    jit, timeout = started.stdout.split()
    return jit, timeout


@pytest.mark.django_db
def test_postgresql_connections_do_not_jit_compile_unless_allowed():
    given = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL=postgres://...")
    # The test database (DATABASE_URL names the one it was made beside, which need not exist).
    url = (f"postgres://{quote(given['USER'] or '')}:{quote(given['PASSWORD'] or '')}@{given['HOST'] or ''}"
           f":{given['PORT'] or 5432}/{quote(given['NAME'])}")
    # PGOPTIONS turns JIT on whatever the server's setting: off is then this project's doing, and
    # PGOPTIONS's other settings are kept.
    on = "-c jit=on -c statement_timeout=7s"
    assert _jit_and_timeout(DATABASE_URL=url, FLEXZONE_DB_JIT=None, PGOPTIONS="-c statement_timeout=7s") == (
        "off", "7s")
    assert _jit_and_timeout(DATABASE_URL=url, FLEXZONE_DB_JIT="true", PGOPTIONS=on) == ("on", "7s")
    # A jit setting the deployment gives is its own: PGOPTIONS's, or DATABASE_URL's options.
    assert _jit_and_timeout(DATABASE_URL=url, FLEXZONE_DB_JIT=None, PGOPTIONS=on) == ("on", "7s")
    assert _jit_and_timeout(DATABASE_URL=f"{url}?options=-c%20jit%3Don", FLEXZONE_DB_JIT=None,
                            PGOPTIONS=None) == ("on", "0")
