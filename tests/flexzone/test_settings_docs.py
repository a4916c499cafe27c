"""The settings tables in the documentation say what the code does: every default written in a table is the
one the code gives when the variable is not set, every variable a table names is read somewhere, and
every setting the engine reads is in a table. Each default is written once, where the variable is read
(flexzone/settings.py for nearly all, serving/gunicorn_conf.py for the server's); the tables are checked
against it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("docs/deployment.md", "docs/operations.md", "api/README.md")
PACKAGES = ("flexzone", "api", "access", "console", "serving", "operations", "registry", "routers", "cli")
BOOLEANS = {"1": True, "true": True, "on": True, "0": False, "false": False, "off": False}
NAME = re.compile(r"`(FLEXZONE_[A-Z0-9_]+|_[A-Z0-9_]+)`")


def defaults() -> dict[str, object]:
    """Each FLEXZONE_* variable the service's code reads, with the default written at the read (None
    when it is not a literal): `env_*("NAME", default, ...)` and `os.environ.get("NAME", default)`."""
    found: dict[str, object] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                        and str(node.args[0].value).startswith("FLEXZONE_")):
                    continue
                function = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if not (function.startswith("env_") or function in ("get", "getenv")):
                    continue
                found[node.args[0].value] = _value(node.args[1]) if len(node.args) > 1 else None
    return found


def _value(node: ast.expr) -> object:
    """A literal, or arithmetic on literals (30 * 86400.0); None for anything else."""
    if all(isinstance(part, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
           for part in ast.walk(node)):
        return eval(compile(ast.Expression(node), "<default>", "eval"), {"__builtins__": {}})  # noqa: S307
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def documented() -> list[tuple[str, str, str]]:
    """(document, variable, default as written) for each variable named in a settings table's first cell;
    `A` / `_B` abbreviates A's prefix (FLEXZONE_OPS_BACKOFF / _BACKOFF_MAX)."""
    rows = []
    for document in DOCUMENTS:
        column = None
        for line in (ROOT / document).read_text().splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
            if not cells:
                column = None
            elif column is None and "default" in cells:
                column = cells.index("default")
            elif column is not None and (names := NAME.findall(cells[0])):
                prefix = "_".join(names[0].split("_")[:2])
                names = [name if not name.startswith("_") else prefix + name for name in names]
                values = re.split(r" / |, ", cells[column]) if len(names) > 1 else [cells[column]]
                rows += [(document, name, value) for name, value in zip(names, values, strict=False)]
    return rows


def same(written: str, actual: object) -> bool | None:
    """Whether a written default is the value (None: written in words, not comparable)."""
    text = written.strip().strip("`")
    if actual is None:
        return None
    if isinstance(actual, bool):
        return BOOLEANS.get(text.lower()) == actual if text else None
    try:
        return float(text) == float(actual)
    except (TypeError, ValueError):
        pass
    if re.fullmatch(r"[a-z]+", text):
        return text == str(actual)
    return None


def test_every_default_in_the_documents_is_the_one_the_settings_give():
    actual = defaults()
    rows = documented()
    unknown = [(document, name) for document, name, _ in rows if name not in actual and "<" not in name]
    assert not unknown, f"documented, but no such setting: {unknown}"
    wrong = [(document, name, written, actual[name]) for document, name, written in rows
             if name in actual and same(written, actual[name]) is False]
    assert not wrong, f"a table says one default, the code where the variable is read gives another: {wrong}"
    checked = [name for _, name, written in rows if name in actual and same(written, actual[name])]
    assert len(checked) >= 25, checked  # the tables were found and read


def test_every_setting_the_engine_reads_is_documented():
    names = {name for _, name, _ in documented()}
    read = set(re.findall(r"settings\.(FLEXZONE_[A-Z0-9_]+)", (ROOT / "operations/conf.py").read_text()))
    assert read and read <= names, f"not in a settings table: {sorted(read - names)}"
