"""`make demo`: run flexzone on this machine with simulated routers, using embedded defaults.

Starts, in order: a private PostgreSQL instance under .demo/pg (unless DATABASE_URL is given; with
no PostgreSQL binaries it falls back to SQLite and in-process operations), the registry (migrated,
demo data loaded, demo PKI issued), one simulated router per demo site on its loopback management
address (the ports they bind are written to the registry), an operations worker, and the service
over mutual TLS on https://127.0.0.1:8443: the console at /, the REST API at /api/, Prometheus metrics
at /metrics and the admin site at /admin/ (a browser presents .demo/pki/alice.p12, bob.p12 or
root.p12; the API worker and the operations worker count into one metrics directory, .demo/metrics).
Everything lives under .demo/ and stops on Ctrl-C. Needs no root.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / ".demo"
PY = sys.executable
API_BIND = os.environ.get("FLEXZONE_DEMO_API_BIND", "127.0.0.1:8443")
PG_PORT = int(os.environ.get("FLEXZONE_DEMO_PG_PORT", "55432"))
FCIP_PLATFORMS = ("brocade_fos", "cisco_mds")


class Supervisor:
    """Start child processes, remember their PIDs, and stop exactly those on exit."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
        log = open(DEMO / "logs" / f"{name}.log", "ab")
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=kwargs.pop("stdout", log), stderr=log, **kwargs)
        self.children.append((name, process))
        (DEMO / "run").mkdir(exist_ok=True)
        (DEMO / "run" / f"{name}.pid").write_text(str(process.pid))
        return process

    def stop(self) -> None:
        for _name, process in reversed(self.children):
            if process.poll() is None:
                process.terminate()
        for name, process in reversed(self.children):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            (DEMO / "run" / f"{name}.pid").unlink(missing_ok=True)

    def watch(self) -> int:
        while True:
            for name, process in self.children:
                if process.poll() is not None:
                    print(f"demo: {name} exited with status {process.returncode}; see .demo/logs/{name}.log")
                    return 1
            time.sleep(1)


def manage(env: dict[str, str], *args: str, capture: bool = False) -> str:
    result = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True, text=True, capture_output=capture)
    return result.stdout if capture else ""


def stop_leftovers() -> None:
    """Stop processes a previous demo left behind (by the PIDs it recorded, nothing else) and wait
    for them, so their ports are free again."""
    run = DEMO / "run"
    stopping = []
    for pidfile in run.glob("*.pid") if run.exists() else []:
        try:
            pid = int(pidfile.read_text())
            os.kill(pid, signal.SIGTERM)
            stopping.append(pid)
        except (ValueError, ProcessLookupError, PermissionError):
            pass
        pidfile.unlink(missing_ok=True)
    deadline = time.monotonic() + 20
    while stopping and time.monotonic() < deadline:
        stopping = [pid for pid in stopping if _alive(pid)]
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_private_postgres(supervisor: Supervisor) -> str | None:
    """A PostgreSQL of the demo's own in .demo/pg (trust auth, loopback only); its URL, or None."""
    sys.path.insert(0, str(ROOT))
    from lab.cluster import NoCluster, initdb_as_owner, owner
    from lab.cluster import bindir as postgres_bindir

    bindir = postgres_bindir()
    if bindir is None:
        return None
    try:
        run_as = owner()  # initdb refuses to run as root: the demo's cluster runs as the postgres account
    except NoCluster:
        return None
    data, sockets = DEMO / "pg" / "data", DEMO / "pg" / "run"
    for directory in (DEMO / "pg", sockets):
        directory.mkdir(parents=True, exist_ok=True)
        if run_as:
            os.chown(directory, run_as["user"], run_as["group"])
    if not (data / "PG_VERSION").exists():
        initdb_as_owner(bindir, data, run_as)
    server = [str(bindir / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(PG_PORT)]
    supervisor.start("postgres", [*server, "-c", "listen_addresses=127.0.0.1"], dict(os.environ), **run_as)
    client = ["-h", "127.0.0.1", "-p", str(PG_PORT)]
    for _ in range(60):
        if subprocess.run([str(bindir / "pg_isready"), "-q", *client]).returncode == 0:
            break
        time.sleep(0.5)
    else:
        raise SystemExit("demo: the private PostgreSQL did not start; see .demo/logs/postgres.log")
    query = "select 1 from pg_database where datname = 'flexzone'"
    psql = [str(bindir / "psql"), *client, "-U", "flexzone", "-d", "postgres", "-Atqc", query]
    if not subprocess.run(psql, capture_output=True, text=True, check=True).stdout.strip():
        subprocess.run([str(bindir / "createdb"), *client, "-U", "flexzone", "flexzone"], check=True)
    return f"postgres://flexzone@127.0.0.1:{PG_PORT}/flexzone"


def demo_environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("FLEXZONE_DEBUG", "1")
    env.setdefault("FLEXZONE_PKI_DIR", str(DEMO / "pki"))
    env.setdefault("FLEXZONE_SQLITE_PATH", str(DEMO / "flexzone.sqlite3"))
    env.setdefault("FLEXZONE_SECRETS_DIR", str(DEMO / "secrets"))
    key_file = DEMO / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    env.setdefault("FLEXZONE_SECRET_KEY", key_file.read_text().strip())
    return env


def metrics_environment(env: dict[str, str]) -> dict[str, str]:
    """The API's workers and the operations worker count into one directory (one scrape reports
    both), emptied at each start: prometheus-client would otherwise sum the files of processes gone."""
    metrics = DEMO / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir()
    return {**env, "FLEXZONE_METRICS_DIR": env.get("FLEXZONE_METRICS_DIR", str(metrics))}


def start_routers(supervisor: Supervisor, env: dict[str, str]) -> list[dict]:
    """One simulator per demo router, on the router's loopback address; returns what they bound."""
    routers = json.loads(manage(env, "demo_routers", "--json", capture=True))
    started = []
    for router in routers:
        state = DEMO / "routers" / router["name"]
        state.mkdir(parents=True, exist_ok=True)
        listen = f"{router['host']}:0"
        argv = [
            PY,
            "-m",
            "simulators",
            "--platform",
            router["platform"],
            f"--{router['transport']}",
            listen,
            "--state",
            str(state),
            "--username",
            router["username"],
            "--password-file",  # the router's secret file: the password stays out of `ps`
            str(Path(env["FLEXZONE_SECRETS_DIR"]) / router["name"]),
            "--hostname",
            router["name"],
        ]
        if router["platform"] in FCIP_PLATFORMS:
            # A fabric as flexzone meets it in production: other hosts' zoning already in force.
            argv.append("--production-zoning")
        process = supervisor.start(f"sim-{router['name']}", argv, env, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None  # stdout=PIPE
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"demo: simulator for {router['name']} did not start; see .demo/logs/")
        bound = json.loads(line)
        port = bound[router["transport"]][1]
        manage(env, "demo_routers", "--set-port", router["name"], str(port))
        started.append({**router, "port": port})
    return started


def wait_until_listening(name: str, bind: str, supervisor: Supervisor, timeout: float = 120.0) -> None:
    host, port = bind.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            if any(n == name and p.poll() is not None for n, p in supervisor.children):
                break
            time.sleep(0.5)
    raise SystemExit(f"demo: {name} is not listening on {bind}; see .demo/logs/{name}.log")


def write_client_config() -> Path:
    sys.path.insert(0, str(ROOT))
    from cli.config import write_config

    pki = DEMO / "pki"
    return write_config(
        DEMO / "flexzone.toml",
        server=f"https://{API_BIND}",
        ca=pki / "ca.pem",
        cert=pki / "alice.pem",
        key=pki / "alice.key",
    )


def write_shell_environment(env: dict[str, str], config: Path) -> Path:
    """.demo/env, for `. .demo/env` in another shell: manage.py and the CLI then use this demo's database,
    PKI, router secrets and client configuration (no secret is in it, only where they are)."""
    names = ("DATABASE_URL", "FLEXZONE_SQLITE_PATH", "FLEXZONE_PKI_DIR", "FLEXZONE_SECRETS_DIR")
    lines = ["# . .demo/env: point this shell's manage.py and flexzone CLI at the running demo (written by make demo)"]
    lines += [f"export {name}={shlex.quote(env[name])}" for name in names if env.get(name)]
    lines.append(f"export FLEXZONE_CONFIG={shlex.quote(str(config))}")
    path = DEMO / "env"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> int:
    DEMO.mkdir(exist_ok=True)
    (DEMO / "logs").mkdir(exist_ok=True)
    stop_leftovers()
    env = demo_environment()
    supervisor = Supervisor()
    # SIGTERM (from `timeout`, a service manager...) stops the children like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        if "DATABASE_URL" not in env:
            url = start_private_postgres(supervisor)
            if url:
                env["DATABASE_URL"] = url
            else:
                print("demo: no PostgreSQL binaries; using SQLite and in-process operations")
        manage(env, "migrate", "--no-input", "-v", "0")
        manage(env, "loaddemo")
        manage(env, "demo_pki")
        routers = start_routers(supervisor, env)
        # The demo started these simulators itself (each keeps its host key in its state directory):
        # it trusts the SSH keys they present. On real routers an admin compares the fingerprint first.
        print(manage(env, "routers", "trust", "--all", "--yes", capture=True).rstrip())
        served = metrics_environment(env)
        if env.get("DATABASE_URL", "").startswith("postgres"):
            supervisor.start("worker", [PY, "manage.py", "worker"], served)
        supervisor.start("api", [PY, "manage.py", "serve", "--bind", API_BIND], served)
        config = write_client_config()
        shell_env = write_shell_environment(env, config)
        wait_until_listening("api", API_BIND, supervisor)
        print()
        print("flexzone demo is running (Ctrl-C stops it; logs in .demo/logs/):")
        for router in routers:
            print(
                f"  simulated {router['platform']} '{router['name']}' on {router['transport']} "
                f"{router['host']}:{router['port']} (transcript in .demo/routers/{router['name']}/)"
            )
        print(f"  console: https://{API_BIND}/  (mutual TLS: the browser presents one of these client certificates)")
        for name, role in (("alice", "operator"), ("bob", "viewer"), ("root", "admin")):
            print(f"    {name} ({role}): .demo/pki/{name}.p12, password in .demo/pki/{name}.p12.password")
        print("    import the bundle under the browser's own certificates (Chromium: Settings > Privacy and security > "
              "Security > Manage certificates > Your certificates > Import; Firefox: Settings > Privacy & Security > "
              "View Certificates > Your Certificates > Import) and .demo/pki/ca.pem as an authority for websites, "
              "then open the URL and pick the certificate")
        print(f"  API (mutual TLS): https://{API_BIND}/api/  docs: https://{API_BIND}/api/docs/")
        print(
            "    curl --cacert .demo/pki/ca.pem --cert .demo/pki/alice.pem --key .demo/pki/alice.key "
            f"https://{API_BIND}/api/sites/"
        )
        print(f"  in another shell, `. {shell_env.relative_to(ROOT)}` points manage.py (its database, PKI and router "
              "secrets) and the CLI (as alice) at this demo")
        print(f"  CLI as alice (operator): export FLEXZONE_CONFIG={config.relative_to(ROOT)}")
        print("    .venv/bin/flexzone --add --device-description XRAID1 --site remote-site")
        print("    .venv/bin/flexzone --lsifcp")
        print("    .venv/bin/flexzone --remove --device-description XRAID1 --site remote-site")
        print("    .venv/bin/flexzone --hosts                 # the sites' hosts and their initiator WWNs")
        print("    .venv/bin/flexzone --plan --device-description EAST-ARRAY1 --site west-site   # FCIP, zoning")
        print("    .venv/bin/flexzone --add --device-description EAST-ARRAY1 --site west-site")
        print(f"  admin (same TLS, admin principals only): https://{API_BIND}/admin/  with root.p12 in the browser, "
              "or:")
        print(f"    curl --cacert .demo/pki/ca.pem --cert .demo/pki/root.pem --key .demo/pki/root.key "
              f"https://{API_BIND}/admin/")
        print(f"  Prometheus metrics (monitor role: the prometheus certificate): https://{API_BIND}/metrics")
        print("    curl --cacert .demo/pki/ca.pem --cert .demo/pki/prometheus.pem --key .demo/pki/prometheus.key "
              f"https://{API_BIND}/metrics")
        sys.stdout.flush()
        return supervisor.watch()
    except KeyboardInterrupt:
        return 0
    finally:
        supervisor.stop()


if __name__ == "__main__":
    sys.exit(main())
