"""The clients without a service: configuration precedence, usage errors and an unreachable server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from cli.client import http_error
from cli.config import load_config, write_config
from cli.errors import OPERATION_FAILED, REFUSED, UNREACHABLE, USAGE, CliError
from cli.flexzone import translate_words
from cli.output import lease_text, parse_duration


def pem_files(directory: Path, names=("ca.pem", "alice.pem", "alice.key")) -> dict[str, Path]:
    """Placeholder files: load_config checks that they exist, not what they hold."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names:
        (directory / name).write_text("placeholder\n")
        paths[name] = directory / name
    return paths


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_without_any_configuration_flexzone_exits_2_naming_the_file_to_create(run_cli, home):
    result = run_cli("flexzone", "--sites")
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("flexzone: no configuration:")
    assert str(home / ".flexzone" / "config.toml") in line and "hint:" in line


def test_a_flexzone_config_naming_a_missing_file_exits_2_naming_it(run_cli, tmp_path):
    result = run_cli("flexzone-rtr", "--lsifcp", env={"FLEXZONE_CONFIG": str(tmp_path / "nowhere.toml")})
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"configuration file {tmp_path / 'nowhere.toml'} does not exist" in line


def test_paths_in_the_config_file_are_taken_from_its_directory(tmp_path):
    pem_files(tmp_path / "demo" / "pki")
    path = tmp_path / "demo" / "flexzone.toml"
    path.write_text('server = "https://127.0.0.1:8443/"\nca = "pki/ca.pem"\ncert = "pki/alice.pem"\n'
                    'key = "pki/alice.key"\n')
    config = load_config({}, {"FLEXZONE_CONFIG": str(path)})
    assert config.server == "https://127.0.0.1:8443"
    assert config.cert == tmp_path / "demo" / "pki" / "alice.pem"
    assert config.source == str(path)


def test_flags_override_single_values_of_the_config_file(tmp_path):
    files = pem_files(tmp_path)
    other = pem_files(tmp_path / "bob", names=("bob.pem",))["bob.pem"]
    path = write_config(tmp_path / "c.toml", server="https://127.0.0.1:8443", ca=files["ca.pem"],
                        cert=files["alice.pem"], key=files["alice.key"])
    config = load_config({"server": "https://localhost:9443", "cert": str(other)}, {"FLEXZONE_CONFIG": str(path)})
    assert config.server == "https://localhost:9443"
    assert config.cert == other
    assert config.key == files["alice.key"]


def test_flexzone_config_wins_over_the_home_configuration(run_cli, home, tmp_path):
    files = pem_files(tmp_path / "pki")
    write_config(home / ".flexzone" / "config.toml", server="https://home.example:1", ca=files["ca.pem"],
                 cert=files["alice.pem"], key=files["alice.key"])
    chosen = write_config(tmp_path / "chosen.toml", server="https://chosen.example:2", ca=files["ca.pem"],
                          cert=files["alice.pem"], key=files["alice.key"])
    from_home = json.loads(run_cli("flexzone", "--show-config", "--json").stdout)
    from_env = json.loads(run_cli("flexzone", "--show-config", "--json", config=chosen).stdout)
    assert from_home["server"] == "https://home.example:1"
    assert from_env["server"] == "https://chosen.example:2" and from_env["source"] == str(chosen)


def test_write_config_stores_paths_inside_its_directory_relative_to_it(tmp_path):
    files = pem_files(tmp_path / ".demo" / "pki")
    path = write_config(tmp_path / ".demo" / "flexzone.toml", server="https://127.0.0.1:8443",
                        ca=files["ca.pem"], cert=files["alice.pem"], key=files["alice.key"])
    assert 'cert = "pki/alice.pem"' in path.read_text()
    moved = tmp_path / "moved"
    (tmp_path / ".demo").rename(moved)
    assert load_config({}, {"FLEXZONE_CONFIG": str(moved / "flexzone.toml")}).key == moved / "pki" / "alice.key"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('server = "https://x:1"\nca = "a"\ncert = "b"\nkey = "c"\ncertificate = "d"\n', "unknown key(s): certificate"),
        ('server = "http://x:1"\nca = "ca.pem"\ncert = "alice.pem"\nkey = "alice.key"\n', "must be an https:// URL"),
        ('server = "https://x:1"\nca = "ca.pem"\n', "cert, key missing from"),
        ('server = "https://x:1\n', "is not valid TOML"),
        ('server = "https://x:1"\nca = "ca.pem"\ncert = "gone.pem"\nkey = "alice.key"\n', "cert file"),
    ],
)
def test_a_broken_config_file_is_a_usage_error_naming_what_is_wrong(tmp_path, content, expected):
    pem_files(tmp_path)
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(CliError) as caught:
        load_config({}, {"FLEXZONE_CONFIG": str(path)})
    assert caught.value.exit_code == 2
    assert expected in caught.value.message


@pytest.mark.parametrize(
    ("program", "args", "expected"),
    [
        ("flexzone", [], "choose an action"),
        ("flexzone", ["--add", "--remove", "--site", "x"], "not allowed with argument"),
        ("flexzone", ["--add", "--zone", "two", "--site", "x"], "invalid int value"),
        ("flexzone", ["--add", "--device-description", "XRAID1", "--wwn", "20:00:00:04:53:00:01:a0"],
         "not allowed with argument"),
        ("flexzone", ["--remove", "--site", "x", "--zone", "1", "--for", "2h"], "--for (a lease) goes with --add"),
        ("flexzone", ["--add", "--site", "x", "--zone", "1", "--for", "soon"], "is not a duration"),
        ("flexzone", ["--sites", "--plan"], "--plan goes with --add"),
        ("flexzone", ["--frobnicate"], "unrecognized arguments"),
        ("flexzone-rtr", ["--addifcp", "--port", "8", "--zone", "3"], "--addifcp needs --ifcpip"),
        ("flexzone-rtr", ["--rmifcp", "--port", "8", "--zone", "3", "--ifcpip", "10.0.8.500"], "not an IP address"),
        ("flexzone-rtr", ["--lsifcp", "--addifcp"], "not allowed with argument"),
        ("flexzone-rtr", [], "choose a command"),
    ],
)
def test_usage_errors_exit_2_with_one_line_and_a_hint(run_cli, program, args, expected):
    result = run_cli(program, *args)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"{program}: ") and expected in line and "(hint: " in line


def test_a_selector_and_a_site_are_required_before_anything_is_sent(run_cli, tmp_path):
    files = pem_files(tmp_path)
    config = write_config(tmp_path / "c.toml", server=f"https://127.0.0.1:{closed_port()}", ca=files["ca.pem"],
                          cert=files["alice.pem"], key=files["alice.key"])
    no_site = run_cli("flexzone", "--add", "--device-description", "XRAID1", config=config)
    no_device = run_cli("flexzone", "add", "--site", "remote-site", config=config)
    assert (no_site.returncode, no_device.returncode) == (2, 2)
    assert "--site is required" in no_site.stderr
    assert "name the device: --device-description, --wwn or --zone" in no_device.stderr


@pytest.mark.parametrize("program, args", [("flexzone", ["--lsifcp"]), ("flexzone-rtr", ["--lsifcp"]),
                                           ("flexzone", ["add", "--device-description", "XRAID1",
                                                         "--site", "remote-site"])])
def test_an_unreachable_server_exits_4_with_one_line_and_a_hint(run_cli, api_pki, tmp_path, program, args):
    cert, key = api_pki.pair("alice")
    url = f"https://127.0.0.1:{closed_port()}"
    config = write_config(tmp_path / "c.toml", server=url, ca=api_pki.ca_file, cert=cert, key=key)
    result = run_cli(program, *args, config=config)
    assert result.returncode == 4
    [line] = result.stderr.splitlines()
    assert line == (f"{program}: cannot reach {url}: connection refused "
                    f"(hint: is the flexzone service running? check server in {config})")


def test_subcommand_words_stand_for_the_flags():
    assert translate_words(["add", "--site", "x"]) == ["--add", "--site", "x"]
    assert translate_words(["status", "12"]) == ["--status", "12"]
    assert translate_words(["ls"]) == ["--lsifcp"]
    assert translate_words(["--lsifcp", "add"]) == ["--lsifcp", "add"]


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200),
                                               ("1d", 86400), ("1h30m", 5400), ("1.5h", 5400)])
def test_lease_durations_read_like_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


def test_a_lease_shows_its_end_and_what_is_left():
    import datetime as dt

    now = dt.datetime(2026, 11, 21, 20, 0, tzinfo=dt.UTC)
    assert lease_text("2026-11-21T22:00:00Z", now) == "2026-11-21 22:00 UTC (2h left)"
    assert lease_text("2026-11-21T19:00:00+00:00", now) == "2026-11-21 19:00 UTC (expired)"
    assert lease_text(None, now) == "-"


def test_the_installed_console_scripts_answer_help():
    for script in ("flexzone", "flexzone-rtr"):
        path = Path(sys.executable).parent / script
        result = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        assert "exit status:" in result.stdout and "config.toml" in result.stdout


def test_a_server_that_does_not_speak_tls_exits_4_saying_so(run_cli, api_pki, tmp_path):
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        cert, key = api_pki.pair("alice")
        url = f"https://127.0.0.1:{server.server_address[1]}"
        config = write_config(tmp_path / "c.toml", server=url, ca=api_pki.ca_file, cert=cert, key=key)
        result = run_cli("flexzone", "--zones", config=config)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 4, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"flexzone: {url} does not speak TLS")


@pytest.mark.parametrize("status, exit_code", [(400, USAGE), (403, REFUSED), (409, OPERATION_FAILED),
                                               (503, OPERATION_FAILED)])
def test_an_api_error_carries_its_http_status_so_a_caller_tells_a_refusal_from_a_failure(status, exit_code):
    # The lab counts a 4xx as the service refusing a request and anything else as an error of the run.
    response = requests.Response()
    response.status_code, response.url = status, "https://127.0.0.1:8443/api/connect/"
    response._content = json.dumps({"detail": "no", "errors": [{"field": "site", "message": "unknown"}]}).encode()
    error = http_error(response)
    assert (error.status, error.exit_code) == (status, exit_code)
    assert CliError("cannot reach the server", exit_code=UNREACHABLE).status is None
