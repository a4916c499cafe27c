"""Hostile input: every value in the corpus is a 400 naming the field, and nothing is journaled.

The corpus targets what could reach a router command line: line breaks and separators that would
start a second command, shell metacharacters, control characters, overlong strings, and Unicode
look-alikes that a human would read as a valid name or number.
"""

from __future__ import annotations

import pytest

from operations.models import Operation
from registry.models import Site
from routers import hostkeys

HOSTILE_TEXT = [
    "XRAID1\n",
    "XRAID1\r\nifcp session delete all",
    "XRAID1; reboot",
    "XRAID1 | tee /tmp/x",
    "XRAID1 `reboot`",
    "XRAID1 $(reboot)",
    "XRAID1\x00",
    "XRAID1\x1b[2J",
    "XRAID1\t",
    "XR\u0410ID1",  # Cyrillic capital A
    "XRAID\uff11",  # fullwidth digit one
    "XRAID1\u200b",  # zero-width space
    "X" * 5000,
    "' OR 1=1 --",
    "XRAID1 > /dev/null",
    "XRAID1 & shutdown",
]
HOSTILE_NUMBERS = ["\uff18", "\u0668", "8\n", "8;", " 8", "8 | 9", "1e3", "8.0", True, "0x8", "99999999999999999999"]
HOSTILE_IPS = ["10.0.8.50\n", "10.0.8.50; reboot", "\uff11\uff10.0.8.50", "10.0.8.50 | x", "10.0.8.\u0665\u0660",
               "::ffff:10.0.8.50\x00", "10.0.8.50`id`", "1" * 300]
HOSTILE_WWNS = ["20:00:00:04:53:00:01:a0\n", "20:00:00:04:53:00:01:a0;", "２0:00:00:04:53:00:01:a0",
                "20:00:00:04:53:00:01:\u0430\u0430"]


@pytest.fixture
def alice(api_server):
    session = api_server.session("alice")

    def post(path: str, body: dict):
        return session.post(f"{api_server.url}{path}", json=body, timeout=20)

    return post


@pytest.fixture
def root(api_server):
    session = api_server.session("root")

    def post(path: str, body: dict):
        return session.post(f"{api_server.url}{path}", json=body, timeout=20)

    return post


def refused_fields(response) -> set[str]:
    assert response.status_code == 400, f"{response.status_code}: {response.text[:300]}"
    body = response.json()
    assert body["code"] in ("invalid", "plan_error")
    return {error["field"] for error in body["errors"]}


def assert_each_refused(post, path: str, base: dict, field: str, values: list, good=None) -> None:
    """`base` with `field` set to `good` is accepted (so the refusals are about the value); each value is not."""
    if good is not None:
        accepted = post(path, {**base, field: good})
        assert accepted.status_code in (200, 201, 202), f"the control {good!r} was refused: {accepted.text[:300]}"
    failures = []
    for value in values:
        response = post(path, {**base, field: value})
        try:
            fields = refused_fields(response)
        except AssertionError as exc:
            failures.append(f"{value!r}: {exc}")
            continue
        if field not in fields:
            failures.append(f"{value!r}: the error names {fields}, not {field}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "path, field, values, good, base",
    [
        ("/api/disconnect/", "device_description", HOSTILE_TEXT, "XRAID1", {"site": "remote-site"}),
        ("/api/disconnect/", "site", HOSTILE_TEXT, "remote-site", {"device_description": "XRAID1"}),
        ("/api/disconnect/", "wwn", HOSTILE_WWNS + HOSTILE_TEXT, "20:00:00:04:53:00:01:A0", {"site": "remote-site"}),
        ("/api/disconnect/", "zone", HOSTILE_NUMBERS, 1, {"site": "remote-site"}),
        ("/api/connect/", "duration", HOSTILE_NUMBERS, 3600, {"site": "remote-site", "device_description": "XRAID1"}),
    ],
)
def test_hostile_connect_input_is_a_400_naming_the_field(alice, cast, path, field, values, good, base):
    assert_each_refused(alice, path, base, field, values, good)
    assert Operation.objects.count() == 1  # the control only


@pytest.mark.parametrize(
    "field, values",
    [("router", HOSTILE_TEXT), ("port", HOSTILE_NUMBERS), ("zone", HOSTILE_NUMBERS), ("ifcpip", HOSTILE_IPS)],
)
def test_hostile_v1_invoke_input_is_a_400_naming_the_field(alice, cast, field, values):
    base = {"router": "primary-rtr", "command": "addifcp", "port": 8, "zone": 1, "ifcpip": "127.0.0.22"}
    assert_each_refused(alice, "/api/invoke/", base, field, values, base[field])
    assert Operation.objects.count() == 1


def test_the_v1_command_itself_is_one_of_three_words(alice, cast):
    base = {"router": "primary-rtr", "port": 8, "zone": 1, "ifcpip": "127.0.0.22"}
    hostile = ["addifcp\n", "addifcp; rmifcp", "show run", "\uff2c\uff33\uff29\uff26\uff23\uff30"]
    assert_each_refused(alice, "/api/invoke/", base, "command", hostile, "rmifcp")


@pytest.mark.parametrize(
    "field, values",
    [
        ("name", HOSTILE_TEXT),
        ("display_name", HOSTILE_TEXT),
        ("description", HOSTILE_TEXT),
        ("msan_id", HOSTILE_NUMBERS),
        ("router_port", HOSTILE_NUMBERS),
        ("data_ip", HOSTILE_IPS),
    ],
)
def test_hostile_registry_input_is_a_400_naming_the_field(root, cast, field, values):
    site = {"name": "third-site", "display_name": "THIRD", "msan_id": 3, "management_ip": "127.0.0.13",
            "data_ip": "127.0.0.23", "router_port": 2, "description": "third lab"}
    assert_each_refused(root, "/api/sites/", site, field, values, site[field])
    assert Site.objects.filter(msan_id=3).count() == 1


def test_hostile_query_parameters_are_a_400_not_a_500(api_server, cast):
    session = api_server.session("bob")
    expected = {
        "/api/devices/?zone=%EF%BC%91": 400,
        "/api/sites/?name=a%00b": 400,
        "/api/links/?state=up%0A": 400,
        "/api/plan/?site=remote-site&zone=%EF%BC%91": 400,
        "/api/devices/?offset=99999999999999999999999": 400,
        "/api/devices/?limit=99999999999999999999999": 200,  # capped at the maximum page size
    }
    for path, status in expected.items():
        response = session.get(f"{api_server.url}{path}", timeout=20)
        assert response.status_code == status, f"{path}: {response.status_code} {response.text[:200]}"
    assert session.get(f"{api_server.url}/api/sites/abc/", timeout=20).status_code == 404
    alice = api_server.session("alice")
    for wait in ("%EF%BC%91", "1%0A", "-1", "1e3", "inf", "nan"):
        response = alice.post(f"{api_server.url}/api/connect/?wait={wait}", timeout=20,
                              json={"site": "remote-site", "device_description": "XRAID1"})
        assert response.status_code == 400, f"wait={wait}: {response.status_code}"
        assert response.json()["errors"][0]["field"] == "wait"
    assert not Operation.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(alice, cast):
    assert alice("/api/connect/", ["remote-site", "XRAID1"]).status_code == 400


@pytest.mark.parametrize(
    "user, path, body, misspelt, meant",
    [
        ("alice", "/api/connect/", {"site": "remote-site", "device_description": "XRAID1", "duraton": 60},
         "duraton", "duration"),
        ("alice", "/api/invoke/", {"router": "primary-rtr", "command": "lsifcp", "ifcp_ip": "127.0.0.22"},
         "ifcp_ip", "ifcpip"),
        ("root", "/api/sites/", {"name": "third-site", "display_name": "THIRD", "msan_id": 3,
                                 "management_ip": "127.0.0.13", "data_ip": "127.0.0.23", "router_prot": 2},
         "router_prot", "router_port"),
    ],
)  # fmt: skip
def test_a_field_the_request_does_not_take_is_a_400_naming_it(api_server, cast, user, path, body, misspelt, meant):
    response = api_server.session(user).post(f"{api_server.url}{path}", json=body, timeout=20)
    assert refused_fields(response) == {misspelt}
    assert "this request takes" in response.text and meant in response.text
    assert not Operation.objects.exists() and not Site.objects.filter(msan_id=3).exists()
    body[meant] = body.pop(misspelt)  # spelt right, the same request is accepted
    accepted = api_server.session(user).post(f"{api_server.url}{path}", json=body, timeout=20)
    assert accepted.status_code in (200, 201, 202), accepted.text


SECRET_REFS_REFUSED = [
    "env:DATABASE_URL",  # any other variable of the service's environment
    "env:FLEXZONE_PROXY_SECRET",
    "env:FLEXZONE_ROUTER_SECRET_",  # the prefix alone
    "env:flexzone_router_secret_x",
    "file:../flexzone.sqlite3",
    "file:/etc/shadow",
    "file:.hidden",
    "file:a..b",
    "file:",
    "vault:primary",
    "FLEXZONE_ROUTER_SECRET_X",
]


def test_a_router_secret_reference_names_a_router_secret_and_nothing_else(root, cast):
    router = {"name": "third-rtr", "site": "primary-site", "platform": "mcdata_eclipse", "transport": "telnet",
              "host": "127.0.0.1", "port": 2323, "username": "admin"}
    assert_each_refused(root, "/api/routers/", router, "secret_ref", SECRET_REFS_REFUSED,
                        "env:FLEXZONE_ROUTER_SECRET_THIRD_RTR")
    fourth = {**router, "name": "fourth-rtr", "port": 2324, "secret_ref": "file:fourth-rtr.password"}
    accepted = root("/api/routers/", fourth)
    assert accepted.status_code == 201, accepted.text
    refused = root("/api/routers/", {**router, "name": "fifth-rtr", "secret_ref": "env:DATABASE_URL"})
    [error] = refused.json()["errors"]
    assert error["field"] == "secret_ref" and "FLEXZONE_ROUTER_SECRET_<NAME>" in error["message"]


def test_an_admin_pins_a_routers_host_key_through_the_api_and_everyone_sees_its_fingerprint(api_server, cast):
    root, bob = api_server.session("root"), api_server.session("bob")
    routers = {r["name"]: r for r in bob.get(f"{api_server.url}/api/routers/", timeout=20).json()["results"]}
    primary = routers["primary-rtr"]
    assert (primary["transport"], primary["transport_security"], primary["ssh_host_key_sha256"]) == (
        "telnet", "plaintext", "")
    url = f"{api_server.url}/api/routers/{primary['id']}/"
    refused = root.patch(url, json={"ssh_host_key": "ssh-ed25519 not-a-key"}, timeout=20)
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "ssh_host_key", refused.text
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkIOq0NQSnVfbA0fKXTU30MXpsvPYJCCEqT+4e/HUjg admin@console"
    pinned = root.patch(url, json={"ssh_host_key": key, "transport": "ssh"}, timeout=20)
    assert pinned.status_code == 200, pinned.text
    shown = bob.get(url, timeout=20).json()
    assert shown["ssh_host_key"] == " ".join(key.split()[:2])  # stored without the comment
    assert shown["ssh_host_key_sha256"] == hostkeys.fingerprint(key)
    assert shown["transport_security"] == "ssh, host key pinned"
    assert bob.patch(url, json={"ssh_host_key": ""}, timeout=20).status_code == 403  # viewers read only
