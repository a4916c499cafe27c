"""The restore commands a zoning before-image renders (pure: nothing is sent), for each kind of change,
and never for zoning flexzone did not create."""

from __future__ import annotations

from routers.drivers.brocade_fos import BrocadeFosDriver
from routers.drivers.cisco_mds import CiscoMdsDriver
from routers.drivers.zoning_restore import differences

fos, mds = BrocadeFosDriver.render_restore, CiscoMdsDriver.render_restore
PROD = {"prod_a": ["10:00:00:00:00:00:00:01", "50:00:00:00:00:00:00:01"]}
FOS_ZONE = "fz_z1_ve24_100000000000000a_500000000000000b"
MDS_ZONE = "fz_z1_fcip25_100000000000000a_500000000000000b"
MEMBERS = ["10:00:00:00:00:00:00:0a", "50:00:00:00:00:00:00:0b"]


def images(zone: str, *, vsan: int | None = None, before_ours: bool = False, after_ours: bool = True):
    extra = {"vsan": vsan} if vsan else {}
    ours = {zone: MEMBERS}
    return ({"in_effect": "PROD", "zones": {**PROD, **(ours if before_ours else {})}, **extra},
            {"in_effect": "PROD", "zones": {**PROD, **(ours if after_ours else {})}, **extra})


def test_a_change_that_added_zones_is_undone_by_taking_them_out_and_enabling_again():
    before, after = images(FOS_ZONE)
    assert differences(before, after) == ([FOS_ZONE], [], [])
    assert fos(before, after) == [f'cfgremove "PROD", "{FOS_ZONE}"', 'cfgenable "PROD"']
    before, after = images(MDS_ZONE, vsan=10)
    assert mds(before, after) == ["zoneset name PROD vsan 10", f"no member {MDS_ZONE}",
                                  "zoneset activate name PROD vsan 10"]


def test_a_change_that_took_zones_out_is_undone_by_defining_and_adding_them_again():
    before, after = images(FOS_ZONE, before_ours=True, after_ours=False)
    assert fos(before, after) == [f'zonecreate "{FOS_ZONE}", "{"; ".join(MEMBERS)}"', f'cfgadd "PROD", "{FOS_ZONE}"',
                                  'cfgenable "PROD"']
    before, after = images(MDS_ZONE, vsan=1, before_ours=True, after_ours=False)
    assert mds(before, after) == [f"zone name {MDS_ZONE} vsan 1", *(f"member pwwn {m}" for m in MEMBERS),
                                  "zoneset name PROD vsan 1", f"member {MDS_ZONE}", "zoneset activate name PROD vsan 1"]


def test_changed_members_are_put_back_member_by_member():
    grown = [*MEMBERS, "10:00:00:00:00:00:00:0c"]
    before = {"in_effect": "PROD", "zones": {FOS_ZONE: MEMBERS}}
    assert fos(before, {"in_effect": "PROD", "zones": {FOS_ZONE: grown}}) == [
        f'zoneremove "{FOS_ZONE}", "10:00:00:00:00:00:00:0c"', 'cfgenable "PROD"']
    before = {"in_effect": "PROD", "vsan": 1, "zones": {MDS_ZONE: MEMBERS}}
    assert mds(before, {"in_effect": "PROD", "vsan": 1, "zones": {MDS_ZONE: grown}}) == [
        f"zone name {MDS_ZONE} vsan 1", "no member pwwn 10:00:00:00:00:00:00:0c", "zoneset activate name PROD vsan 1"]


def test_flexzones_own_configuration_is_disabled_or_made_again_and_nothing_else_is():
    none, own = {"in_effect": None, "zones": {}}, {"in_effect": "fz_cfg", "zones": {FOS_ZONE: MEMBERS}}
    assert fos(none, own) == ["cfgdisable"]
    # flexzone disabled and deleted its own cfg with its last zone: putting it back makes it again.
    assert fos(own, none) == [f'zonecreate "{FOS_ZONE}", "{"; ".join(MEMBERS)}"', f'cfgcreate "fz_cfg", "{FOS_ZONE}"',
                              'cfgenable "fz_cfg"']
    assert mds({**none, "vsan": 1}, {"in_effect": "fz_zoneset", "vsan": 1, "zones": {}}) == [
        "no zoneset activate name fz_zoneset vsan 1"]


def test_zoning_flexzone_did_not_create_is_never_named():
    before = {"in_effect": "PROD", "zones": PROD}
    grown = [*PROD["prod_a"], "10:00:00:00:00:00:00:99"]
    theirs = {"in_effect": "PROD", "zones": {"prod_a": grown, "adm_new": MEMBERS}}
    assert fos(before, theirs) == [] and mds({**before, "vsan": 1}, {**theirs, "vsan": 1}) == []
    assert fos(before, {"in_effect": "OTHER", "zones": {FOS_ZONE: MEMBERS}}) == []  # another cfg was enabled
    assert fos({"in_effect": None, "zones": {}}, {"in_effect": "PROD", "zones": PROD}) == []  # not flexzone's cfg
    assert fos(before, None) == [] == mds(before, None)
