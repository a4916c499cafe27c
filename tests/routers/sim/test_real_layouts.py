"""The simulators print the layouts of real switches: set up the state a real-layout fixture shows (the
fixtures in tests/routers/drivers/real_layouts/ name the public capture of each), run the command, and
the simulator's reply is the fixture, byte for byte. What the parsers accept beyond these (older
releases, odd placements) is tested on the fixtures alone."""

from __future__ import annotations

import pytest

from routers.sim.brocade_fos import FosPersonality
from routers.sim.faults import Fault, FaultBook
from routers.sim.personality import SimState
from tests.routers.drivers.real_layouts import body_of
from tests.routers.sim.recording_console import Login


@pytest.fixture
def fos():
    return FosPersonality(SimState(), "fos-ext1")


def shown(login, command):
    """The whole reply, however many pages (the test answers every pager prompt)."""
    return login(command, pager_answers=[""] * 50).text.replace("Type <CR> to continue, Q<CR> to stop: ", "")


def configure(login, *commands, answers=()):
    for command in commands:
        console = login(command, answers=list(answers))
        assert "Operation Succeeded" in console.text or console.text == "" or console.questions, console.text


def test_fos_cfgshow_prints_aliases_sorted_wrapped_and_resolved_as_fos_9(fos):
    admin = Login(fos)
    body = body_of("fos/cfgshow__fos9_aliases_wrapped.txt")
    aliases = [line for line in body.splitlines() if line.startswith(" alias:")]
    wwns = [line.strip() for line in body.splitlines() if line.startswith("\t\t50:") and line.endswith(" ")]
    for alias, wwn in zip(aliases, wwns, strict=True):
        configure(admin, f'alicreate "{alias.split()[1]}", "{wwn.upper()}"')  # FOS shows them in lower case
    dlm = [a.split()[1] for a in aliases if "DLM" in a]
    srdf = [a.split()[1] for a in aliases if "SRDF" in a]
    configure(admin, f'zonecreate "DRSITE_SRDF_0521_0526", "{"; ".join(reversed(srdf))}"',
              f'zonecreate "DRSITE_DLM_2001_2004", "{"; ".join(dlm)}"',
              'cfgcreate "DRS_A", "DRSITE_SRDF_0521_0526; DRSITE_DLM_2001_2004"')
    configure(admin, 'cfgenable "DRS_A"', answers=["y"])
    assert shown(admin, "cfgshow") == body


def test_fos_cfgshow_of_an_empty_fabric(fos):
    assert shown(Login(fos), "cfgshow") == body_of("fos/cfgshow__fos9_empty_fabric.txt")


def test_fos_cfgshow_of_a_zone_defined_with_nothing_in_effect(fos):
    admin = Login(fos)
    configure(admin, 'zonecreate "REPL_C_SRDF_0611_0617", "REPL_C_SRDF_0617_3_9; REPL_C_SRDF_0611_3_10; '
                     'REPL_C_SRDF_0611_3_9; REPL_C_SRDF_0617_3_10"')
    admin("cfgsave", answers=["y"])
    assert shown(admin, "cfgshow") == body_of("fos/cfgshow__fos9_defined_not_in_effect.txt")


def test_fos_cfgtransshow_with_nothing_open_and_with_another_sessions_transaction(fos):
    admin = Login(fos)
    assert admin("cfgtransshow").text == body_of("fos/cfgtransshow__none.txt")
    fos.faults = FaultBook([Fault("zoning_locked")])
    assert admin("cfgtransshow").text == body_of("fos/cfgtransshow__hex_token_not_abortable.txt")


def test_fos_tunnel_table_prints_the_columns_of_fos_9(fos):
    admin = Login(fos)
    configure(admin, "portcfg ipif ge2.dp0 create 198.18.0.1/24", "portcfg fciptunnel 24 create -d flexzone",
              "portcfg fcipcircuit 24 create 0 --local-ip 198.18.0.1 --remote-ip 198.18.1.1",
              "portcfg fciptunnel 26 create")
    assert shown(admin, "portshow fciptunnel all -c") == body_of("fos/portshow_fciptunnel_all_c__7840.txt")
