"""The house's shape: imports between the top-level packages point one way, the simulators, benchmarks
and lab stay outside the service, and no module outgrows a reader.

Each rule reads the source with `ast` (imports inside functions count too), so a test fails the day
someone adds the import, not the day it matters.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flexzone", "registry", "access", "operations", "routers", "api", "console", "serving", "cli", "bench",
            "lab")
# What each package may import of the others (docs/architecture.md, "Layers", repeats this table).
ALLOWED = {
    "routers": set(),
    "registry": {"routers"},
    "access": {"registry"},  # principals are scoped to sites and zones
    "operations": {"registry", "access", "routers"},
    "api": {"registry", "access", "operations", "routers"},  # the REST API
    "console": {"registry", "access", "operations", "routers"},  # the browser pages and the admin's actions
    "serving": {"registry", "access", "operations"},  # gunicorn, the read cache in front of Django
    "flexzone": {"api", "console", "serving", "registry", "access", "operations", "routers"},
    "cli": set(),
    "lab": {"cli", "routers"},  # REST through the client library; drivers and simulators it measures directly
    # `bench scale` deploys the service as the lab does and speaks REST to it.
    "bench": {"registry", "access", "operations", "routers", "api", "serving", "flexzone", "lab", "cli"},
}
SERVICE = ("flexzone", "registry", "access", "operations", "routers", "api", "console", "serving")
LINE_LIMIT = 520
# Modules allowed past the limit, and why (none since links and locks moved to operations).
LONG_MODULES: dict[str, str] = {}


def _sources(package: str) -> list[Path]:
    return [path for path in sorted((ROOT / package).rglob("*.py")) if "migrations" not in path.parts]


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module name an import statement in the file names, at any depth; relative imports are
    resolved against the file's package."""
    found = set()
    parts = path.relative_to(root).with_suffix("").parts
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*parts[: len(parts) - node.level], *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _allowed(name: str, allowed: set[str]) -> bool:
    return any(name == entry or name.startswith(entry + ".") for entry in allowed)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_packages_below_it(package):
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources(package) for name in imported_modules(path)
        if name.split(".")[0] in PACKAGES and name.split(".")[0] != package
        and not _allowed(name, ALLOWED[package])
    )
    assert wrong == []


def test_the_service_never_imports_the_simulators_the_benchmarks_or_the_lab():
    # routers.sim is inside routers, so the rule above does not see it.
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for package in SERVICE for path in _sources(package) if "sim" not in path.relative_to(ROOT).parts
        for name in imported_modules(path)
        if _allowed(name, {"routers.sim", "bench", "lab"})
    )
    assert wrong == []


def test_routers_and_the_lab_need_no_django():
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for package in ("routers", "lab", "cli") for path in _sources(package)
        for name in imported_modules(path) if _allowed(name, {"django", "rest_framework"})
    )
    assert wrong == []


def test_no_module_outside_the_tests_is_longer_than_a_reader_can_hold():
    long = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in (*PACKAGES, "scripts") for path in _sources(package)
    }
    over = {name: lines for name, lines in long.items() if lines > LINE_LIMIT and name not in LONG_MODULES}
    assert over == {}
    stale = [name for name in LONG_MODULES if long.get(name, 0) <= LINE_LIMIT]
    assert stale == [], "no longer long: take them off LONG_MODULES"


def test_the_rules_see_an_import_inside_a_function_and_a_relative_one(tmp_path):
    # The checker itself: a rule that cannot see the import it forbids cannot fail.
    probe = tmp_path / "lab" / "experiments" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from registry.models import Site\n    from . import base\n    import api.views\n")
    names = imported_modules(probe, root=tmp_path)
    assert {"registry.models", "lab.experiments.base", "api.views"} <= names
    assert not _allowed("registry.models", ALLOWED["lab"]) and _allowed("routers.sim.loop", ALLOWED["lab"])
    assert not _allowed("routersx", {"routers"})


def imported_test_modules(path: Path, root: Path = ROOT) -> set[str]:
    """The test modules (tests.….test_*) and the top-level conftest a file imports."""
    return {name for name in imported_modules(path, root)
            if name == "tests.conftest" or name.startswith("tests.conftest.") or (name.startswith("tests.") and any(
                part.startswith("test_") for part in name.split(".")[1:]))}


def test_no_test_imports_another_test_module():
    # What tests share lives in tests/support (helpers) and in conftests (fixtures).
    found = {str(path.relative_to(ROOT)): names for path in sorted((ROOT / "tests").rglob("*.py"))
             if (names := imported_test_modules(path))}
    assert not found, f"import the shared helper from tests.support instead: {found}"


def test_the_test_import_rule_sees_a_test_module_and_the_root_conftest(tmp_path):
    probe = tmp_path / "tests" / "api" / "test_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from tests.operations.test_basics import x\nfrom tests.conftest import y\n"
                     "from tests.support.sims import wire\n")
    assert imported_test_modules(probe, root=tmp_path) == {"tests.operations.test_basics",
                                                           "tests.operations.test_basics.x", "tests.conftest",
                                                           "tests.conftest.y"}
