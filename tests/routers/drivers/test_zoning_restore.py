"""The restore commands a zoning before-image renders (pure: nothing is sent), for each kind of change."""

from __future__ import annotations

from routers.drivers.zoning_restore import differences, render_fos_restore, render_mds_restore

PROD = {"prod_a": ["10:00:00:00:00:00:00:01", "50:00:00:00:00:00:00:01"]}
OURS = {"fz_z1_ve24_a_b": ["10:00:00:00:00:00:00:0a", "50:00:00:00:00:00:00:0b"]}


def test_a_change_that_added_zones_is_undone_by_taking_them_out_and_enabling_again():
    before, after = {"in_effect": "PROD", "zones": PROD}, {"in_effect": "PROD", "zones": {**PROD, **OURS}}
    assert differences(before, after) == (["fz_z1_ve24_a_b"], [], [])
    assert render_fos_restore(before, after) == ['cfgremove "PROD", "fz_z1_ve24_a_b"', 'cfgenable "PROD"']
    assert render_mds_restore({**before, "vsan": 10}, {**after, "vsan": 10}) == [
        "zoneset name PROD vsan 10", "no member fz_z1_ve24_a_b", "zoneset activate name PROD vsan 10"]


def test_a_change_that_took_zones_out_is_undone_by_defining_and_adding_them_again():
    before, after = {"in_effect": "PROD", "zones": {**PROD, **OURS}}, {"in_effect": "PROD", "zones": PROD}
    members = "; ".join(OURS["fz_z1_ve24_a_b"])
    assert render_fos_restore(before, after) == [f'zonecreate "fz_z1_ve24_a_b", "{members}"',
                                                 'cfgadd "PROD", "fz_z1_ve24_a_b"', 'cfgenable "PROD"']
    assert render_mds_restore({**before, "vsan": 1}, after) == [
        "zone name fz_z1_ve24_a_b vsan 1", *(f"member pwwn {m}" for m in OURS["fz_z1_ve24_a_b"]),
        "zoneset name PROD vsan 1", "member fz_z1_ve24_a_b", "zoneset activate name PROD vsan 1"]


def test_changed_members_are_put_back_member_by_member():
    grown = {"fz_z1_ve24_a_b": [*OURS["fz_z1_ve24_a_b"], "10:00:00:00:00:00:00:0c"]}
    before, after = {"in_effect": "PROD", "zones": OURS}, {"in_effect": "PROD", "zones": grown}
    assert render_fos_restore(before, after) == ['zoneremove "fz_z1_ve24_a_b", "10:00:00:00:00:00:00:0c"',
                                                 'cfgenable "PROD"']
    assert render_mds_restore({**before, "vsan": 1}, after) == [
        "zone name fz_z1_ve24_a_b vsan 1", "no member pwwn 10:00:00:00:00:00:00:0c",
        "zoneset activate name PROD vsan 1"]


def test_a_configuration_enabled_where_none_was_is_disabled_and_nothing_is_undone_without_an_after_image():
    before, after = {"in_effect": None, "zones": {}}, {"in_effect": "fz_cfg", "zones": OURS}
    assert render_fos_restore(before, after) == ["cfgdisable"]
    assert render_mds_restore({**before, "vsan": 1}, after) == ["no zoneset activate name fz_cfg vsan 1"]
    assert render_fos_restore(before, None) == [] == render_mds_restore(before, None)
    same = {"in_effect": "PROD", "zones": PROD}
    assert render_fos_restore(same, same) == [] == render_mds_restore(same, same)
