"""The engine's shape: no module takes another's private names, one thread pool (tests/test_layout.py checks for
import cycles across the whole tree, the engine's included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "operations"


def _modules() -> dict[str, ast.Module]:
    trees = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        trees[name] = ast.parse(path.read_text(), str(path))
    return trees


def _imports(tree: ast.Module, known: set[str]) -> list[tuple[str, list[str]]]:
    """(module, names) for every import of an operations module anywhere in the file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "operations":
            names = [alias.name for alias in node.names]
            for name in names:  # `from operations import queue` imports a module
                if f"{node.module}.{name}" in known:
                    found.append((f"{node.module}.{name}", []))
            found.append((node.module, [n for n in names if f"{node.module}.{n}" not in known]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "operations"]
    return found


def test_no_module_imports_another_modules_private_names():
    trees = _modules()
    private = [(name, target, imported) for name, tree in trees.items()
               for target, names in _imports(tree, set(trees)) for imported in names
               if imported.startswith("_") and target != name]
    assert private == []


def test_the_engine_s_thread_pools_live_in_one_module():
    pools = [name for name, tree in _modules().items() for node in ast.walk(tree)
             if isinstance(node, ast.Name) and node.id == "ThreadPoolExecutor" and isinstance(node.ctx, ast.Load)
             and not isinstance(getattr(node, "parent", None), ast.ImportFrom)]
    assert set(pools) == {"operations.threads"}


def _platform_branches(tree: ast.Module, platforms: set[str]) -> list[str]:
    """Names of particular platforms in the code: `Platform.CISCO_MDS` or the string "cisco_mds"."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {p.upper() for p in platforms} and (
                isinstance(node.value, ast.Name | ast.Attribute)
                and getattr(node.value, "id", getattr(node.value, "attr", None)) == "Platform"):
            found.append(f"Platform.{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in platforms:
            found.append(repr(node.value))
    return found


def test_the_engine_names_no_platform_drivers_declare_what_they_need():
    # What a platform needs of a plan (initiators zoned, a VSAN) is an attribute of its driver
    # (`zones_initiators`, `zones_in_vsan`), so a new platform is a driver, not a branch here.
    from routers.platforms import Platform

    platforms = {platform.value for platform in Platform}
    found = {name: names for name, tree in _modules().items() if (names := _platform_branches(tree, platforms))}
    assert found == {}
    probe = ast.parse('if router.platform == Router.Platform.CISCO_MDS or p == "brocade_fos": pass')
    assert _platform_branches(probe, platforms) == ["Platform.CISCO_MDS", "'brocade_fos'"]


# A driver's methods that change a router: a link's change, and the save of its running configuration.
LINK_CHANGES = {"add_link", "remove_link"}


def _calls(tree: ast.Module, methods: set[str]) -> list[str]:
    """`function: method` for every call of one of `methods` on any object, by the enclosing function."""
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [f"{function.name}: {node.func.attr}" for node in ast.walk(function)
                      if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in methods]
    return found


def test_one_function_of_the_engine_sends_a_link_s_change_to_a_router():
    """Issue 45, item 9: connect, disconnect, expiry, rollback, V1, the settle and reconcile's repair all
    change a router through `steps.change` (nested functions count for their enclosing ones too)."""
    calls = {name: sorted(set(_calls(tree, LINK_CHANGES))) for name, tree in _modules().items()}
    assert {name: found for name, found in calls.items() if found} == {
        "operations.steps": ["change: add_link", "change: remove_link"]}


def test_only_the_session_pool_saves_a_router_s_configuration():
    calls = {name: sorted(set(_calls(tree, {"save_config"}))) for name, tree in _modules().items()}
    assert [name for name, found in calls.items() if found] == ["operations.pool"]
