"""`make demo`: run flexzone on this machine with simulated routers, using embedded defaults.

Starts, in order: the registry database (migrated, demo data loaded), one simulated router per
demo site on its loopback management address (the ports they bind are written to the registry),
and the admin site on http://127.0.0.1:8000/admin/. Everything lives under .demo/ and stops on
Ctrl-C. Needs no root.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / ".demo"
PY = sys.executable
ADMIN_BIND = os.environ.get("FLEXZONE_DEMO_ADMIN_BIND", "127.0.0.1:8000")


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
    """Stop processes a previous demo left behind (by the PIDs it recorded, nothing else)."""
    run = DEMO / "run"
    for pidfile in run.glob("*.pid") if run.exists() else []:
        try:
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        except (ValueError, ProcessLookupError, PermissionError):
            pass
        pidfile.unlink(missing_ok=True)


def demo_environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("FLEXZONE_DEBUG", "1")
    env.setdefault("FLEXZONE_SQLITE_PATH", str(DEMO / "flexzone.sqlite3"))
    env.setdefault("FLEXZONE_SECRETS_DIR", str(DEMO / "secrets"))
    key_file = DEMO / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    env.setdefault("FLEXZONE_SECRET_KEY", key_file.read_text().strip())
    return env


def ensure_admin_user(env: dict[str, str]) -> str:
    password_file = DEMO / "admin-password"
    if not password_file.exists():
        password_file.write_text(secrets.token_urlsafe(12))
        password_file.chmod(0o600)
    password = password_file.read_text().strip()
    script = (
        "from django.contrib.auth import get_user_model as g; U = g(); "
        "u = U.objects.filter(username='admin').first() or U(username='admin', is_staff=True, is_superuser=True); "
        f"u.set_password({password!r}); u.save()"
    )
    manage(env, "shell", "-c", script)
    return password


def start_routers(supervisor: Supervisor, env: dict[str, str]) -> list[dict]:
    """One simulator per demo router, on the router's loopback address; returns what they bound."""
    routers = json.loads(manage(env, "demo_routers", "--json", capture=True))
    started = []
    for router in routers:
        state = DEMO / "routers" / router["name"]
        state.mkdir(parents=True, exist_ok=True)
        password = (Path(env["FLEXZONE_SECRETS_DIR"]) / router["name"]).read_text().strip()
        listen = f"{router['host']}:0"
        argv = [
            PY,
            "-m",
            "routers.sim",
            "--platform",
            router["platform"],
            f"--{router['transport']}",
            listen,
            "--state",
            str(state),
            "--username",
            router["username"],
            "--password",
            password,
            "--hostname",
            router["name"],
        ]
        process = supervisor.start(f"sim-{router['name']}", argv, env, stdout=subprocess.PIPE, text=True)
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"demo: simulator for {router['name']} did not start; see .demo/logs/")
        bound = json.loads(line)
        port = bound[router["transport"]][1]
        manage(env, "demo_routers", "--set-port", router["name"], str(port))
        started.append({**router, "port": port})
    return started


def main() -> int:
    DEMO.mkdir(exist_ok=True)
    (DEMO / "logs").mkdir(exist_ok=True)
    stop_leftovers()
    env = demo_environment()
    manage(env, "migrate", "--no-input", "-v", "0")
    manage(env, "loaddemo")
    password = ensure_admin_user(env)
    supervisor = Supervisor()
    try:
        routers = start_routers(supervisor, env)
        supervisor.start("admin", [PY, "manage.py", "runserver", "--noreload", ADMIN_BIND], env)
        print()
        print("flexzone demo is running (Ctrl-C stops it):")
        for router in routers:
            print(
                f"  simulated {router['platform']} '{router['name']}' on {router['transport']} "
                f"{router['host']}:{router['port']} (transcript in .demo/routers/{router['name']}/)"
            )
        print(f"  admin: http://{ADMIN_BIND}/admin/  user admin, password in .demo/admin-password ({password})")
        print("  plan:  .venv/bin/python manage.py plan --device-description XRAID2 --site primary-site")
        sys.stdout.flush()
        return supervisor.watch()
    except KeyboardInterrupt:
        return 0
    finally:
        supervisor.stop()


if __name__ == "__main__":
    sys.exit(main())
