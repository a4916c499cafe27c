"""What each router must carry, as a pure function of the grants (no database, no router)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from operations.desired import DeviceFacts, GrantFacts, SiteFacts, Want, desired_links, needed_pairs

# Three sites with a router each (10, 20, 30); router 30 zones initiators (FCIP).
SITES = {
    1: SiteFacts(data_ip="127.0.0.21", router_port=8, router=10),
    2: SiteFacts(data_ip="127.0.0.22", router_port=4, router=20),
    3: SiteFacts(data_ip="127.0.0.23", router_port=25, router=30),
    4: SiteFacts(data_ip="127.0.0.24", router_port=2, router=None),  # no router registered
}
ZONING = {10: False, 20: False, 30: True}
DEVICES = {
    101: DeviceFacts(zone=1, owner=1, wwn="20:00:00:00:00:00:01:01"),  # zone 1, site 1's
    102: DeviceFacts(zone=1, owner=1, wwn="20:00:00:00:00:00:01:02"),  # zone 1, site 1's
    201: DeviceFacts(zone=1, owner=2, wwn="20:00:00:00:00:00:02:01"),  # zone 1, site 2's
    301: DeviceFacts(zone=4, owner=3, wwn="20:00:00:00:00:00:03:01"),  # zone 4, site 3's (FCIP)
    302: DeviceFacts(zone=4, owner=3, wwn="20:00:00:00:00:00:03:02"),
}


def keys(wanted):
    return {router: set(links) for router, links in wanted.items()}


def test_a_grant_needs_one_link_on_each_sides_router_towards_the_other():
    wanted = desired_links([GrantFacts(site=2, device=101)], SITES, DEVICES, ZONING)
    assert keys(wanted) == {10: {(8, 1, "127.0.0.22")}, 20: {(4, 1, "127.0.0.21")}}


def test_holds_of_one_zone_between_the_same_two_sites_share_the_links_whichever_site_asked():
    one = desired_links([GrantFacts(site=2, device=101)], SITES, DEVICES, ZONING)
    both = desired_links([GrantFacts(site=2, device=101), GrantFacts(site=2, device=102),
                          GrantFacts(site=1, device=201)], SITES, DEVICES, ZONING)
    assert keys(both) == keys(one)


def test_a_sites_own_device_and_a_site_without_a_router_need_nothing():
    assert desired_links([GrantFacts(site=1, device=101), GrantFacts(site=4, device=101)], SITES, DEVICES, ZONING) == {}


def test_an_fcip_link_zones_the_union_of_its_grants_pairs_and_an_ifcp_one_none():
    wanted = desired_links([GrantFacts(site=1, device=301, initiators=("10:00:00:00:c9:00:00:01",)),
                            GrantFacts(site=1, device=302, initiators=("10:00:00:00:c9:00:00:02",))],
                           SITES, DEVICES, ZONING)
    fcip = wanted[30][(25, 4, "127.0.0.21")]
    assert fcip.targets == {"20:00:00:00:00:00:03:01", "20:00:00:00:00:00:03:02"}
    assert fcip.initiators == {"10:00:00:00:c9:00:00:01", "10:00:00:00:c9:00:00:02"}
    ifcp = wanted[10][(8, 4, "127.0.0.23")]
    assert ifcp.targets == set() and ifcp.initiators == set()


GRANTS = st.lists(st.builds(GrantFacts, site=st.sampled_from(sorted(SITES)), device=st.sampled_from(sorted(DEVICES)),
                            initiators=st.lists(st.sampled_from(["10:00:00:00:c9:00:00:01", "10:00:00:00:c9:00:00:02"]),
                                                max_size=2).map(tuple)), max_size=8)


@given(grants=GRANTS, extra=GRANTS)
def test_the_desired_state_is_the_union_of_each_grants_own_and_ending_a_grant_never_adds_a_link(grants, extra):
    def flat(wanted):
        return ({(router, key, None, None) for router, links in wanted.items() for key in links}
                | {(router, key, "target", wwn) for router, links in wanted.items() for key, want in links.items()
                   for wwn in want.targets}
                | {(router, key, "initiator", wwn) for router, links in wanted.items()
                   for key, want in links.items() for wwn in want.initiators})

    together = desired_links(grants + extra, SITES, DEVICES, ZONING)
    apart = flat(desired_links(grants, SITES, DEVICES, ZONING)) | flat(desired_links(extra, SITES, DEVICES, ZONING))
    assert flat(together) == apart
    assert keys(desired_links(list(reversed(grants)), SITES, DEVICES, ZONING)) == keys(
        desired_links(grants, SITES, DEVICES, ZONING))
    fewer = keys(desired_links(grants, SITES, DEVICES, ZONING))
    for router, links in fewer.items():
        assert links <= set(together.get(router, {}))


PAIRS = st.sets(st.tuples(st.sampled_from("abc"), st.sampled_from("xyz")), max_size=5)


@given(settled=PAIRS, pending=PAIRS, found=PAIRS, joining=PAIRS)
def test_a_link_zones_the_settled_pairs_the_pending_ones_already_there_and_the_asker_s(settled, pending, found,
                                                                                      joining):
    """The one rule every converge of an FCIP link decides by: a pending grant's pair never goes on by
    someone else's converge, nor comes off while it is there; a settled grant's always goes on."""
    needed = needed_pairs(Want(pairs=settled), Want(pairs=pending), found, joining)
    assert settled <= needed and joining <= needed and (pending & found) <= needed
    assert needed - settled - joining <= pending & found  # nothing else: no pending pair it lacks, no stray pair
    assert needed_pairs(None, None, found) == set()
