"""The lab drives flexzone from outside (REST through the cli package, manage.py commands, the processes it
starts): it imports nothing of the service, and the service neither imports it nor installs it as an app."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ("registry", "operations", "api", "flexzone", "django", "bench")


def imports(path: Path) -> set[str]:
    """The top-level packages a module imports (absolute imports; the lab has no relative ones)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_lab_module_imports_the_registry_the_engine_the_api_or_django():
    reaching_in = {str(path.relative_to(ROOT)): sorted(imports(path) & set(SERVICE))
                   for path in sorted((ROOT / "lab").rglob("*.py"))}
    assert {path: names for path, names in reaching_in.items() if names} == {}


def test_the_service_does_not_import_the_lab_nor_install_it():
    for package in ("registry", "operations", "api", "cli", "routers", "flexzone"):
        for path in (ROOT / package).rglob("*.py"):
            assert "lab" not in imports(path), path
    assert not [app for app in settings.INSTALLED_APPS if app.split(".")[0] in ("lab", "netem")]
