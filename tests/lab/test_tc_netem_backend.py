"""The tc-netem backend, checked by the exact commands it would run (this kernel has no sch_netem)."""

from lab.backends import Hop, TcNetemBackend, netem_limit, render_netem
from lab.profiles import GilbertElliott, Impairment
from lab.runner import RecordingRunner

HOP = Hop("primary", "remote", 1, 2, "fzw1", "fzw2", "198.18.1.0/24")


def backend() -> tuple[TcNetemBackend, RecordingRunner]:
    runner = RecordingRunner()
    return TcNetemBackend(runner, "fzlab-wan"), runner


def test_prepare_builds_one_htb_class_and_source_filter_per_hop_on_the_egress_veth():
    tc, runner = backend()
    tc.prepare([HOP, Hop("remote", "primary", 2, 1, "fzw2", "fzw1", "198.18.2.0/24")])
    wan = "ip netns exec fzlab-wan tc"
    assert runner.commands == [
        f"{wan} qdisc replace dev fzw1 root handle 1: htb default 1",
        f"{wan} class replace dev fzw1 parent 1: classid 1:1 htb rate 10gbit quantum 60000",
        f"{wan} qdisc replace dev fzw2 root handle 1: htb default 1",
        f"{wan} class replace dev fzw2 parent 1: classid 1:1 htb rate 10gbit quantum 60000",
        f"{wan} class replace dev fzw2 parent 1: classid 1:11 htb rate 10gbit quantum 60000",
        f"{wan} filter replace dev fzw2 parent 1: protocol ip prio 1 u32 match ip src 198.18.1.0/24 flowid 1:11",
        f"{wan} class replace dev fzw1 parent 1: classid 1:12 htb rate 10gbit quantum 60000",
        f"{wan} filter replace dev fzw1 parent 1: protocol ip prio 2 u32 match ip src 198.18.2.0/24 flowid 1:12",
    ]


def test_apply_shapes_the_hop_on_the_destination_egress_with_netem_as_htb_leaf():
    tc, runner = backend()
    tc.apply(HOP, Impairment(delay_ms=40, jitter_ms=4, loss_pct=1.5, rate_mbit=100))
    wan = "ip netns exec fzlab-wan tc"
    assert runner.commands == [
        f"{wan} class replace dev fzw2 parent 1: classid 1:11 htb rate 100mbit ceil 100mbit burst 15000b "
        "cburst 15000b quantum 60000",
        f"{wan} qdisc replace dev fzw2 parent 1:11 handle 11: netem limit 1000 delay 40ms 4ms loss random 1.5%",
    ]


def test_netem_limit_is_one_and_a_half_bandwidth_delay_products_not_the_default_1000():
    # 1 Gbit/s x 80 ms one way = 6667 full-size packets; 1.5 x that = 10000.
    assert netem_limit(Impairment(delay_ms=80, rate_mbit=1000)) == 10_000
    # Without a rate the hop is assumed to run at 10 Gbit/s.
    assert netem_limit(Impairment(delay_ms=20)) == 25_000
    assert netem_limit(Impairment(delay_ms=1, rate_mbit=10)) == 1000


def test_bursty_loss_renders_as_netem_gemodel_in_percent():
    imp = Impairment(delay_ms=10, burst=GilbertElliott(p=0.01, r=0.3, loss_bad=0.9, loss_good=0.001))
    assert render_netem(imp) == ["netem", "limit", "12500", "delay", "10ms", "loss", "gemodel", "1%", "30%", "90%",
                                 "0.1%"]


def test_a_neutral_impairment_renders_a_netem_that_only_queues():
    assert render_netem(Impairment()) == ["netem", "limit", "1000"]
