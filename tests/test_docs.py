"""The README and the pages under docs/ show commands that exist and links that lead somewhere.

Nothing is run and no server is started: each command a shell block shows is checked against what would
answer it. `make T`: a target of the Makefile. `python -m M`: a module of this repository with something
to run (or an installed one, such as venv), and for `bench` and `lab` the benchmark or action named.
`manage.py C ...`: a management command of Django or of one of the apps, and the arguments its own parser
takes. `flexzone`, `flexzone-rtr`: the arguments their parsers take (`flexzone-lab` is gone: `python -m
lab`). `pytest PATH`: the test file. The python commands are also run, in quick forms, by tests/test_readme_commands.py.

The metrics page is checked against the metrics the code defines and the rules in deploy/prometheus,
the architecture page against the ALLOWED table of tests/test_layout.py.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.support.docs import ROOT, guide_documents, shell_lines

SEPARATORS = set(";&|()")
REDIRECTS = set("<>")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUDO_VALUE_OPTIONS = {"-u", "-g", "-C", "-D", "-h", "-p", "-U"}
PYTHON = re.compile(r"^python(3(\.\d+)*)?$")
SKIPPED_DIRECTORIES = {"__pycache__", "build", "lab-results", "schemathesis-report"}


# --- commands ------------------------------------------------------------------------------------------

def simple_commands(line: str) -> list[list[str]]:
    """The words of each simple command of a shell line (split at ; && || | and parentheses), without
    redirections, leading VAR=value assignments and `sudo` with its options."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
        elif set(token) <= SEPARATORS:
            commands.append([])
        elif set(token) <= REDIRECTS:
            skip_next = True  # the redirection's file
        else:
            commands[-1].append(token)
    return [words for words in map(_without_prefixes, commands) if words]


def _without_prefixes(words: list[str]) -> list[str]:
    words = list(words)
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    if words[:1] == ["sudo"]:
        words.pop(0)
        while words and words[0].startswith("-"):
            if words.pop(0) in SUDO_VALUE_OPTIONS and words:
                words.pop(0)
    return words


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))


def _parsed(parse: Callable[[], object]) -> str | None:
    """None when `parse` accepts its arguments, else the parser's complaint (argparse, Django's
    CommandError, the CLI's CliError, or an exit)."""
    complaint = io.StringIO()
    try:
        with contextlib.redirect_stderr(complaint), contextlib.redirect_stdout(io.StringIO()):
            parse()
    except SystemExit as exc:
        return complaint.getvalue().strip().splitlines()[-1] if complaint.getvalue().strip() else f"exit {exc.code}"
    except Exception as exc:  # noqa: BLE001 - every parser's own error type is a refusal here
        return str(exc)
    return None


class _StrictParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting (its subparsers are of the same class)."""

    def error(self, message: str):  # type: ignore[override]
        raise ValueError(message)


def lab_parser() -> argparse.ArgumentParser:
    from lab.command import add_arguments

    parser = _StrictParser(prog="python -m lab")
    add_arguments(parser)
    return parser


def check_manage(args: list[str]) -> str | None:
    from django.core.management import get_commands, load_command_class

    if not args:
        return "manage.py without a command"
    commands = get_commands()
    if args[0] not in commands:
        return f"no management command {args[0]!r}"
    parser = load_command_class(commands[args[0]], args[0]).create_parser("manage.py", args[0])
    return _parsed(lambda: parser.parse_args(args[1:]))


def check_module(module: str, rest: list[str]) -> str | None:
    top = ROOT / module.split(".")[0]
    if (top / "__init__.py").is_file():  # one of this repository's packages
        path = ROOT.joinpath(*module.split("."))
        if not (path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()):
            return f"no module {module} to run in this repository"
    elif importlib.util.find_spec(module) is None:
        return f"no module {module}"
    if module == "bench":
        from bench.__main__ import BENCHMARKS

        if not rest or rest[0] not in BENCHMARKS:
            return f"no benchmark {rest[0] if rest else '(none)'!r}; one of {', '.join(BENCHMARKS)}"
    if module == "lab":
        return _parsed(lambda: lab_parser().parse_args(rest))
    return None


def check_cli(program: str, args: list[str]) -> str | None:
    if program == "flexzone":
        from cli.flexzone import build_parser, translate_words

        return _parsed(lambda: build_parser().parse_args(translate_words(args)))
    from cli.rtr import build_parser as rtr_parser

    return _parsed(lambda: rtr_parser().parse_args(args))


def check_command(words: list[str]) -> str | None | bool:
    """A problem with the command, None when it exists, False when it is not one this test knows."""
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    if program == "make":
        missing = [target for target in args if not target.startswith("-") and "=" not in target
                   and target not in make_targets()]
        return f"no make target {', '.join(missing)}" if missing else None
    if program == "manage.py":
        return check_manage(args)
    if program == "pytest":
        missing = [path for path in args if not path.startswith("-") and ("/" in path or path.endswith(".py"))
                   and not (ROOT / path.split("::")[0]).exists()]
        return f"no test file {', '.join(missing)}" if missing else None
    if program in ("flexzone", "flexzone-rtr"):
        return check_cli(program, args)
    if program == "flexzone-lab":
        return "flexzone-lab is no longer installed: python -m lab"
    if PYTHON.match(program) and args:
        if args[0] == "-m":
            return check_module(args[1], args[2:]) if len(args) > 1 else "python -m without a module"
        if args[0].endswith(".py"):
            if args[0].rsplit("/", 1)[-1] == "manage.py":
                return check_manage(args[1:])
            if not os.path.isabs(args[0]) and not (ROOT / args[0]).is_file():
                return f"no script {args[0]}"
            return None
    return False


def command_problems(text: str) -> tuple[list[str], list[str]]:
    """(the commands checked, the problems found) in a document's shell blocks."""
    checked, problems = [], []
    for line in shell_lines(text):
        try:
            commands = simple_commands(line)
        except ValueError as exc:
            problems.append(f"`{line}`: not a shell line ({exc})")
            continue
        for words in commands:
            found = check_command(words)
            if found is False:
                continue
            checked.append(" ".join(words))
            if found:
                problems.append(f"`{line}`: {found}")
    return checked, problems


@pytest.mark.parametrize("document", guide_documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_command_a_shell_block_shows_exists(document):
    checked, problems = command_problems(document.read_text())
    assert not problems
    assert checked, f"{document.name} shows no command this test can check"


def test_each_page_of_the_guide_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert {"operations.md", "metrics.md", "deployment.md", "architecture.md"} <= pages
    assert {name for name in pages if f"(docs/{name})" not in readme} == set()


def test_a_made_up_command_is_reported_and_a_real_one_is_not():
    good = [
        "make demo", "make clean-demo",
        ".venv/bin/python -m bench planner", "sudo --preserve-env=DATABASE_URL .venv/bin/python -m lab all --quick",
        "cd /opt/flexzone && python3 -m venv .venv && .venv/bin/pip install .",
        "sudo -E -u flexzone .venv/bin/python manage.py migrate",
        ".venv/bin/python manage.py plan --zone 2 --site primary-site   # a comment",
        "manage.py ca init && manage.py ca issue-client carol --role operator --site primary-site --zone 1",
        ".venv/bin/flexzone --plan --device-description XRAID2 --site primary-site",
        "flexzone status 12", ".venv/bin/flexzone-rtr --addifcp --port 8 --zone 3 --ifcpip 127.0.0.22",
        "sudo .venv/bin/python -m lab selfcheck --quick",
        ".venv/bin/pytest tests/test_docs.py::test_a_broken_link_is_reported -q",
    ]
    bad = [
        "make no-such-target", ".venv/bin/python -m bench no-such-bench", ".venv/bin/python -m no_such_module",
        ".venv/bin/python -m operations", ".venv/bin/python -m lab no-such-action",
        "DATABASE_URL=x .venv/bin/python manage.py no_such_command", "manage.py audit no-such-action",
        ".venv/bin/python manage.py plan --site primary-site --no-such-option --zone 2",
        ".venv/bin/flexzone --no-such-flag", "flexzone no-such-word", "flexzone --add --remove",
        ".venv/bin/flexzone-rtr --addifcp --ifcpip not-an-address", "flexzone-lab no-such-action",
        "python3 scripts/no-such-script.py", "FLEXZONE_MODEL_SEED=7 .venv/bin/pytest tests/no_such_test.py -s",
        "echo 'unbalanced",
    ]
    text = "```sh\n" + "\n".join(good) + "\n```\n\n```bash\n" + "\n".join(bad) + "\n```\n"
    checked, problems = command_problems(text)
    assert len(checked) >= len(good) + len(bad) - 1  # the unbalanced line cannot be split into commands
    reported = [problem.split("`: ")[0].strip("`") for problem in problems]
    assert reported == bad, problems


def test_a_command_outside_a_shell_block_or_not_ours_is_left_alone():
    text = "`make no-such-target` in prose\n\n```\nmake no-such-target\n```\n\n```sh\ncurl -s https://x/ | jq .\n```\n"
    assert command_problems(text) == ([], [])


# --- links ---------------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`]*`")


def markdown_files() -> list[Path]:
    found = []
    for folder, directories, files in os.walk(ROOT):
        directories[:] = sorted(name for name in directories if not name.startswith(".")
                                and name not in SKIPPED_DIRECTORIES and not name.endswith(".egg-info"))
        found += [Path(folder) / name for name in sorted(files) if name.endswith(".md")]
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a markdown file's headings; a repeated heading gets -1, -2... as on GitHub."""
    found, seen = set(), dict[str, int]()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", FENCE.sub("", path.read_text()), re.M):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return found


def link_problems(path: Path) -> list[str]:
    problems = []
    for target in LINK.findall(INLINE_CODE.sub("", FENCE.sub("", path.read_text()))):
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
            continue  # https:, mailto:: not this test's to fetch
        name, _, anchor = target.partition("#")
        destination = (path.parent / name) if name else path
        if not destination.exists():
            problems.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{target}: no heading #{anchor} in {name or path.name}")
    return problems


def test_every_relative_link_in_the_markdown_files_leads_somewhere():
    files = markdown_files()
    assert {ROOT / "README.md", ROOT / "docs" / "operations.md", ROOT / "api" / "README.md"} <= set(files)
    problems = {str(path.relative_to(ROOT)): found for path in files if (found := link_problems(path))}
    assert problems == {}


def test_a_broken_link_is_reported(tmp_path):
    (tmp_path / "target.md").write_text("# Target\n\n## Some heading (here.py)\n\n```sh\n# not a heading\n```\n")
    probe = tmp_path / "probe.md"
    probe.write_text(
        "[fine](target.md) [fine too](target.md#some-heading-herepy) [self](#probe) [web](https://example.org/x)\n"
        "[gone](docs/no-such-page.md) [no anchor](target.md#no-such-heading) [fenced one](target.md#not-a-heading)\n"
        "`[in code](missing.md)`\n\n# Probe\n")
    assert link_problems(probe) == ["docs/no-such-page.md: no such file",
                                    "target.md#no-such-heading: no heading #no-such-heading in target.md",
                                    "target.md#not-a-heading: no heading #not-a-heading in target.md"]


# --- the metrics page ----------------------------------------------------------------------------------

METRIC_TYPES = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary",
                "CounterMetricFamily": "counter", "GaugeMetricFamily": "gauge",
                "HistogramMetricFamily": "histogram"}
SERVICE = ("flexzone", "registry", "access", "operations", "routers", "api", "console", "serving")


def defined_metrics(root: Path = ROOT) -> dict[str, tuple[str, tuple[str, ...]]]:
    """{exported name: (type, labels)} for every metric the service's code constructs."""
    found = {}
    for package in SERVICE:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                    continue
                kind = METRIC_TYPES.get(node.func.id if isinstance(node.func, ast.Name) else
                                        getattr(node.func, "attr", ""))
                name = node.args[0].value
                if kind is None or not str(name).startswith("flexzone_"):
                    continue
                labels = next((keyword.value for keyword in node.keywords if keyword.arg in ("labels", "labelnames")),
                              node.args[2] if len(node.args) > 2 else None)
                found[name + ("_total" if kind == "counter" else "")] = (
                    kind, tuple(ast.literal_eval(labels)) if labels is not None else ())
    return found


def table_rows(text: str) -> list[list[str]]:
    """Each table row's cells (a pipe escaped as \\| stays inside its cell, as `|`)."""
    return [[cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            for line in text.splitlines() if line.lstrip().startswith("|")]


def documented_metrics(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    found = {}
    for cells in table_rows(text):
        if len(cells) > 1 and (metric := re.fullmatch(r"`(flexzone_\w+)(?:\{([\w,]*)\})?`", cells[0])):
            found[metric.group(1)] = (cells[1], tuple(filter(None, (metric.group(2) or "").split(","))))
    return found


def test_the_metrics_page_names_every_metric_the_code_defines_with_its_type_and_labels():
    defined = defined_metrics()
    assert {"flexzone_operations_total", "flexzone_queue_depth", "flexzone_refusals_total"} <= set(defined)
    assert documented_metrics((ROOT / "docs" / "metrics.md").read_text()) == defined


def test_a_metric_missing_from_the_page_or_with_other_labels_is_seen(tmp_path):
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "probe.py").write_text(
        'from prometheus_client import Counter, Gauge\nfrom prometheus_client.core import GaugeMetricFamily\n'
        'a = Counter("flexzone_probe", "Probes.", ["site"])\nb = Gauge("flexzone_probe_open", "Open.")\n'
        'c = GaugeMetricFamily("flexzone_probe_depth", "Depth.", labels=["router", "kind"])\n')
    assert defined_metrics(tmp_path) == {"flexzone_probe_total": ("counter", ("site",)),
                                         "flexzone_probe_open": ("gauge", ()),
                                         "flexzone_probe_depth": ("gauge", ("router", "kind"))}
    page = "| metric | type | what |\n|---|---|---|\n| `flexzone_probe_total{zone}` | counter | probes |\n"
    assert documented_metrics(page) != defined_metrics(tmp_path)


def test_the_metrics_page_lists_every_alert_rule_as_written():
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())["groups"][0]["rules"]
    written = {rule["alert"]: (rule["expr"], rule["for"]) for rule in rules}
    shown = {match.group(1): (cells[1].strip("`"), cells[2])
             for cells in table_rows((ROOT / "docs" / "metrics.md").read_text())
             if (match := re.fullmatch(r"`(Flexzone\w+)`", cells[0]))}
    assert written and shown == written


# --- the architecture page -----------------------------------------------------------------------------

def layout_rule() -> dict[str, set[str]]:
    """tests/test_layout.py's ALLOWED table, read from its source (tests never import each other)."""
    tree = ast.parse((ROOT / "tests" / "test_layout.py").read_text())
    value = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(isinstance(target, ast.Name) and target.id == "ALLOWED" for target in node.targets))
    return {key.value: (set() if isinstance(item, ast.Call) else set(ast.literal_eval(item)))
            for key, item in zip(value.keys, value.values, strict=True)}


def test_the_architecture_page_gives_each_package_the_imports_the_layout_test_allows():
    shown = {match.group(1): set(re.findall(r"`(\w+)`", cells[1]))
             for cells in table_rows((ROOT / "docs" / "architecture.md").read_text())
             if len(cells) > 1 and (match := re.fullmatch(r"`(\w+)/`", cells[0]))}
    rule = layout_rule()
    assert rule["lab"] == {"cli", "routers", "simulators"}
    assert {package: shown.get(package) for package in rule} == rule
