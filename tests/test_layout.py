"""The house's shape: imports between the top-level packages point one way, the simulators, benchmarks
and lab stay outside the service, no module imports itself back through others, and no module
outgrows a reader.

Each rule reads the source with `ast` (imports inside functions count too), so a test fails the day
someone adds the import, not the day it matters.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flexzone", "registry", "access", "operations", "routers", "api", "console", "serving", "cli",
            "simulators", "bench", "lab")
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
    "simulators": {"routers"},  # the platforms they imitate and the drivers' link contract
    # REST through the client library; the drivers and the simulators it measures directly.
    "lab": {"cli", "routers", "simulators"},
    # `bench scale` deploys the service as the lab does and speaks REST to it.
    "bench": {"registry", "access", "operations", "routers", "api", "serving", "flexzone", "simulators", "lab", "cli"},
}
# What the wheel ships and the service runs; the rest runs from a checkout (`python -m simulators`, ...).
SERVICE = ("flexzone", "registry", "access", "operations", "routers", "api", "console", "serving", "cli")
OUTSIDE = ("simulators", "bench", "lab")
LINE_LIMIT = 520
# Modules allowed past the limit, and why (none since links and locks moved to operations).
LONG_MODULES: dict[str, str] = {}


def _sources(package: str, root: Path = ROOT) -> list[Path]:
    return [path for path in sorted((root / package).rglob("*.py")) if "migrations" not in path.parts]


def _import_statements(path: Path, root: Path) -> list[tuple[str, list[str]]]:
    """(module, names) per import statement, at any depth: `import a.b` is ("a.b", []), `from a import b`
    ("a", ["a.b"]); relative imports resolved against the file's package."""
    statements: list[tuple[str, list[str]]] = []
    parts = path.relative_to(root).with_suffix("").parts
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            statements += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*parts[: len(parts) - node.level], *([base] if base else [])])
            statements.append((base, [f"{base}.{alias.name}" for alias in node.names]))
    return statements


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module name an import statement in the file names, at any depth; relative imports are
    resolved against the file's package."""
    return {name for base, names in _import_statements(path, root) for name in (base, *names)}


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
    # The wheel holds the service alone: such an import would fail where flexzone is installed.
    assert [package for package in SERVICE if ALLOWED[package] & set(OUTSIDE)] == []
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for package in SERVICE for path in _sources(package) for name in imported_modules(path)
        if _allowed(name, set(OUTSIDE))
    )
    assert wrong == []


def test_the_routers_the_simulators_the_lab_and_the_cli_need_no_django():
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for package in ("routers", "simulators", "lab", "cli") for path in _sources(package)
        for name in imported_modules(path) if _allowed(name, {"django", "rest_framework"})
    )
    assert wrong == []


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _distribution(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503): "psycopg[binary]==3.3.9" -> "psycopg"."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name[0]).lower()


def requirements(*extras: str) -> set[str]:
    """The distributions pyproject.toml installs with these extras (none: the service's own), following
    an extra's `flexzone[...]`."""
    project = _pyproject()["project"]
    found = {_distribution(entry) for entry in project["dependencies"]}
    for extra in extras:
        for entry in project["optional-dependencies"][extra]:
            if entry.startswith("flexzone["):
                found |= requirements(*entry.removeprefix("flexzone[").removesuffix("]").split(","))
            else:
                found.add(_distribution(entry))
    return found


def _required_by(distributions: set[str]) -> set[str]:
    """What these installed distributions require in turn (their extras aside)."""
    return {_distribution(entry) for distribution in distributions
            for entry in importlib.metadata.requires(distribution) or [] if "extra ==" not in entry}


def third_party_imports(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each installed distribution the packages import from -> the top-level modules imported of it."""
    # `_typeshed` exists only for the type checker (imported under TYPE_CHECKING): nothing to install.
    local = {*PACKAGES, "tests", "__future__", "_typeshed"}
    providers = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for package in packages:
        for path in _sources(package):
            for base, _ in _import_statements(path, ROOT):
                top = base.split(".")[0]
                if top and top not in local and top not in sys.stdlib_module_names:
                    for distribution in providers.get(top, [f"{top} (not installed)"]):
                        found.setdefault(_distribution(distribution), set()).add(top)
    return found


def test_the_wheel_ships_the_service_alone():
    assert sorted(_pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]) == sorted(
        f"{package}*" for package in SERVICE)


def test_the_service_depends_on_what_it_imports_and_nothing_more():
    imported = third_party_imports(SERVICE)
    dependencies = requirements()
    # What a dependency brings (paramiko comes with netmiko) is installed with the service too.
    assert {name: modules for name, modules in imported.items()
            if name not in dependencies | _required_by(dependencies)} == {}
    # A dependency is imported, or the settings load it (an app, a middleware).
    loaded = {entry.split(".")[0] for entry in [*settings.INSTALLED_APPS, *settings.MIDDLEWARE]}
    providers = importlib.metadata.packages_distributions()
    used = set(imported) | {_distribution(name) for module in loaded for name in providers.get(module, [])}
    assert sorted(dependencies - used) == []


@pytest.mark.parametrize(("package", "extras"), [("simulators", ("sim",)), ("lab", ("lab",)), ("bench", ("lab",))])
def test_what_runs_from_the_checkout_finds_its_imports_in_an_extra(package, extras):
    installed = requirements(*extras)
    assert {name: modules for name, modules in third_party_imports((package,)).items()
            if name not in installed | _required_by(installed)} == {}


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of the top-level packages (tests and migrations aside) -> the modules of the tree it
    imports: the graph as a reader sees it. An import inside a function counts, and so does one under
    `if TYPE_CHECKING:`: deferring an import, or making it for the annotations only, hides a cycle from
    the interpreter but leaves the two modules knowing each other. `from a import b` names the module
    a.b when there is one, else a's `__init__`; that importing a.b runs a's `__init__` first is left out
    (a package's `__init__` may import its own modules). scripts/ holds programs nothing imports, which
    close no cycle."""
    paths = {".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
             for init in sorted(root.glob("*/__init__.py")) if init.parent.name != "tests"
             for path in _sources(init.parent.name, root)}

    def module_of(name: str) -> str | None:
        parts = name.split(".")
        return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in paths), None)

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets: set[str | None] = set()
        for base, names in _import_statements(path, root):
            submodules = {name for name in names if name in paths}
            targets |= submodules
            if len(submodules) < len(names) or not names:  # names defined in `base`, or `import base`
                targets.add(module_of(base))
        graph[module] = {target for target in targets if target is not None and target != module}
    return graph


def _reached_from(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module `start` reaches in one step or more -> the module it is first reached through."""
    through: dict[str, str] = {}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        for target in sorted(graph[name]):
            if target not in through:
                through[target] = name
                queue.append(target)
    return through


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """One shortest cycle per group of modules that import each other, as "a -> b -> a"."""
    cycles, seen = [], set()
    for start in sorted(graph):
        through = _reached_from(graph, start)
        if start in seen or start not in through:
            continue
        path, name = [start], through[start]
        while name != start:
            path.insert(0, name)
            name = through[name]
        cycles.append(" -> ".join([start, *path]))
        seen |= {name for name in through if start in _reached_from(graph, name)}
    return cycles


def test_no_module_imports_itself_back_through_others():
    # Modules in a cycle are one room in two files: move the shared piece down, or let the lower module
    # say what it needs of the higher one's class as a small Protocol (simulators/server/terminal.py).
    assert import_cycles(module_graph()) == []


def test_the_cycle_rule_sees_through_functions_and_type_checking_but_not_into_packages(tmp_path):
    files = {
        "shop/__init__.py": "from shop.till import Till\n",
        "shop/till.py": "from shop import stock\n",  # the module shop.stock, not the package
        "shop/stock.py": "def count():\n    from .ledger import book\n",
        "shop/ledger.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from shop.till import Till\n",
        "tests/__init__.py": "import shop\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = module_graph(tmp_path)
    assert graph == {"shop": {"shop.till"}, "shop.till": {"shop.stock"}, "shop.stock": {"shop.ledger"},
                     "shop.ledger": {"shop.till"}}
    assert import_cycles(graph) == ["shop.ledger -> shop.till -> shop.stock -> shop.ledger"]
    (tmp_path / "shop/ledger.py").write_text("import json\n")
    assert import_cycles(module_graph(tmp_path)) == []


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
    assert not _allowed("registry.models", ALLOWED["lab"]) and _allowed("simulators.loop", ALLOWED["lab"])
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
