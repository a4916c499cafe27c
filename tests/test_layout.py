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
PACKAGES = ("flexzone", "registry", "operations", "routers", "api", "cli", "bench", "lab")
# What each package may import of the others (the README's diagram, "How it is built").
ALLOWED = {
    "routers": set(),
    "registry": {"routers"},
    "operations": {"registry", "routers"},
    "api": {"registry", "operations", "routers"},
    "flexzone": {"api", "registry", "operations", "routers"},
    "cli": set(),
    "lab": {"cli", "routers"},  # REST through the client library; drivers and simulators it measures directly
    # `bench scale` deploys the service as the lab does and speaks REST to it.
    "bench": {"registry", "operations", "routers", "api", "flexzone", "lab", "cli"},
}
SERVICE = ("flexzone", "registry", "operations", "routers", "api")
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


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") or part == "conftest" for part in parts[1:])


def imported_test_modules(path: Path, root: Path = ROOT) -> set[str]:
    """The test modules (tests.….test_*), conftests (tests.….conftest) and fixture plugins
    (tests.support.fixtures.…) a file imports: fixtures come by name through pytest, never by import."""
    return {name for name in imported_modules(path, root)
            if _is_test_module(name) or _allowed(name, {"tests.support.fixtures"})}


def test_no_test_imports_another_test_module():
    # What tests share lives in tests/support (helpers) and its fixture plugins, declared in tests/conftest.py.
    found = {str(path.relative_to(ROOT)): names for path in sorted((ROOT / "tests").rglob("*.py"))
             if (names := imported_test_modules(path))}
    assert not found, f"import the shared helper from tests.support instead: {found}"


def test_the_test_import_rule_sees_test_modules_conftests_and_fixture_plugins(tmp_path):
    probe = tmp_path / "tests" / "api" / "test_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from tests.operations.test_basics import x\nfrom tests.conftest import y\n"
                     "from tests.cli.conftest import run_cli\nfrom .conftest import z\n"
                     "from tests.support.fixtures.api import cast\nfrom tests.support.sims import wire\n")
    assert imported_test_modules(probe, root=tmp_path) == {
        "tests.operations.test_basics", "tests.operations.test_basics.x", "tests.conftest", "tests.conftest.y",
        "tests.cli.conftest", "tests.cli.conftest.run_cli", "tests.api.conftest", "tests.api.conftest.z",
        "tests.support.fixtures.api", "tests.support.fixtures.api.cast"}


FIXTURE_PLUGINS = "tests/support/fixtures"


def fixtures_defined(path: Path) -> set[str]:
    """The fixtures a module defines: functions decorated with pytest.fixture, by their `name=` if given."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                if ast.unparse(call.func if call else decorator) in ("pytest.fixture", "fixture"):
                    given = [k.value.value for k in (call.keywords if call else []) if k.arg == "name"]
                    names.add(given[0] if given else node.name)
    return names


def fixture_modules(root: Path = ROOT) -> list[Path]:
    """Every conftest under tests/ and every fixture plugin."""
    return sorted({*(root / "tests").rglob("conftest.py"), *(root / FIXTURE_PLUGINS).glob("*.py")})


def fixtures_defined_twice(root: Path = ROOT) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in fixture_modules(root):
        for name in fixtures_defined(path):
            where.setdefault(name, []).append(str(path.relative_to(root)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_each_fixture_name_means_one_thing():
    # A conftest's fixture silently replaces a plugin's (or a parent conftest's) of the same name below it.
    assert fixtures_defined_twice() == {}, "give the fixture a name of its own"


def test_the_fixture_rule_sees_a_conftest_redefining_a_plugins_fixture(tmp_path):
    plugin = tmp_path / FIXTURE_PLUGINS / "cli.py"
    conftest = tmp_path / "tests" / "cli" / "conftest.py"
    for path in (plugin, conftest):
        path.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text("import pytest\n\n@pytest.fixture(scope='session')\ndef lab(): ...\n\n"
                      "@pytest.fixture\ndef cli_secrets(): ...\n")
    conftest.write_text("from pytest import fixture\n\n@fixture(name='lab')\ndef cli_lab(): ...\n\n"
                        "def cli_secrets(): ...\n")
    assert fixtures_defined_twice(tmp_path) == {"lab": ["tests/cli/conftest.py", f"{FIXTURE_PLUGINS}/cli.py"]}


def test_the_top_level_conftest_declares_every_fixture_plugin():
    declared = set()
    for node in ast.parse((ROOT / "tests" / "conftest.py").read_text()).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["pytest_plugins"]:
            declared = set(ast.literal_eval(node.value))
    present = {f"{FIXTURE_PLUGINS.replace('/', '.')}.{path.stem}" for path in (ROOT / FIXTURE_PLUGINS).glob("*.py")
               if path.name != "__init__.py"}
    assert declared == present
