"""Before- and after-images of every zoning change flexzone makes on an FCIP switch, journaled on the
operation, and the restore a before-image renders (a dry run: nothing is ever sent). Against the FOS
and MDS simulators over SSH, each carrying another admin's production zoning."""

from __future__ import annotations

import pytest

from operations import execute, submit
from operations.models import ZoningImage
from operations.steps import router_target
from registry.models import Site
from routers.drivers import DRIVERS
from simulators.admin import PROD_MEMBERS, PROD_ZONE, FabricAdmin
from tests.support.sims import wire


@pytest.fixture(params=["brocade_fos", "cisco_mds"])
def fcip_lab(request, demo, ops_settings, sim_factory, secrets_dir):
    """The demo's two sites, both on `platform` over SSH; each switch carries PROD in force."""
    platform = request.param
    if platform == "brocade_fos":  # FCIP links live on VE ports 24-43
        Site.objects.filter(name="primary-site").update(router_port=24)
        Site.objects.filter(name="remote-site").update(router_port=25)
    sims, admins = {}, []
    for router in (demo["primary_rtr"], demo["remote_rtr"]):
        sims[router.name] = sim_factory(platform, ssh=("127.0.0.1", 0))
        wire(router, sims[router.name], secrets_dir, command_timeout=5.0)
        admin = FabricAdmin(sims[router.name], platform)
        admin.seed_production()
        admins.append(admin)
    yield platform, sims, demo, admins[0]
    for admin in admins:
        admin.close()


def fz_zones(image: dict) -> set[str]:
    return {name for name in image["zones"] if name.startswith("fz_")}


def test_a_connect_and_a_disconnect_journal_the_zoning_in_force_before_and_after(fcip_lab):
    platform, _sims, demo, _admin = fcip_lab
    add = execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert add.state == "succeeded", add.error
    images = {image.router.name: image for image in ZoningImage.objects.filter(operation=add)}
    assert set(images) == {"primary-rtr", "remote-rtr"}
    for image in images.values():
        before, after = image.before, image.after
        assert before["in_effect"] == after["in_effect"] == "PROD"  # flexzone adds to the config in force
        assert before["zones"] == {PROD_ZONE: sorted(PROD_MEMBERS)}  # exactly what the admin had, nothing of ours
        assert after["zones"][PROD_ZONE] == sorted(PROD_MEMBERS)
        assert fz_zones(after) and not fz_zones(before)
        if platform == "cisco_mds":
            assert before["vsan"] == after["vsan"] == 1
    remove = execute(submit("remove", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    assert remove.state == "succeeded", remove.error
    for image in ZoningImage.objects.filter(operation=remove):
        assert fz_zones(image.before) and image.after["zones"] == {PROD_ZONE: sorted(PROD_MEMBERS)}
    assert ZoningImage.objects.filter(router=demo["primary_rtr"]).count() == 2


def test_a_restore_renders_what_would_put_the_before_image_back_and_sends_nothing(fcip_lab):
    platform, sims, demo, admin = fcip_lab
    execute(submit("add", {"site": "remote-site", "device_description": "XRAID1"}).pk)
    image = ZoningImage.objects.filter(router__name="primary-rtr").get()
    commands = DRIVERS[platform].render_restore(image.before, image.after)
    ours = sorted(fz_zones(image.after))
    if platform == "brocade_fos":
        assert commands == [f'cfgremove "PROD", "{"; ".join(ours)}"', 'cfgenable "PROD"']
    else:
        assert commands == ["zoneset name PROD vsan 1", *(f"no member {name}" for name in ours),
                            "zoneset activate name PROD vsan 1"]
    # Nothing reached the switch: the link and its zones are still up there.
    assert [link.state for link in sims["primary-rtr"].links()] == ["up"]
    # An admin who runs them gets the before-image back in force, as the driver reads it.
    if platform == "brocade_fos":
        for command in commands:
            assert "error" not in admin.fos_confirmed(command).lower(), command
    else:
        admin.conn.send_config_set(commands)
    assert in_force(platform, demo["primary_rtr"]) == image.before


def in_force(platform: str, router) -> dict:
    driver = DRIVERS[platform](router_target(router))
    driver.connect()
    try:
        return driver.zoning_image(driver.zoning())
    finally:
        driver.close()
