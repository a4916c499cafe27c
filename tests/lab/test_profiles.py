"""Impairment profiles: parsing, validation and the loss arithmetic the self-check relies on."""

import math

import pytest

from lab.measure import mathis_mbit
from lab.profiles import GilbertElliott, Impairment, LinkProfile


def test_parse_reads_every_key_with_units():
    imp = Impairment.parse("delay=20ms, jitter=2ms, loss=1.5%, rate=100mbit, buffer=30ms")
    assert imp == Impairment(delay_ms=20, jitter_ms=2, loss_pct=1.5, rate_mbit=100, buffer_ms=30)


def test_parse_reads_a_gilbert_elliott_burst_model_in_percent():
    imp = Impairment.parse("delay=5,ge=1/30")
    assert imp.burst == GilbertElliott(p=0.01, r=0.3)
    assert imp.mean_loss == pytest.approx(0.01 / 0.31)
    assert imp.burst.mean_burst == pytest.approx(1 / 0.3)


def test_parse_of_none_is_the_neutral_impairment():
    assert Impairment.parse("none").is_neutral
    assert Impairment.parse("").is_neutral


@pytest.mark.parametrize("text", ["delay=-1", "loss=150%", "delay=1ms,jitter=5ms", "speed=3", "rate=0mbit",
                                  "loss=1%,ge=1/30", "ge=1", "delay"])
def test_parse_rejects_impossible_or_unknown_values(text):
    with pytest.raises(ValueError):
        Impairment.parse(text)


def test_round_trip_loss_combines_both_directions():
    profile = LinkProfile("x", Impairment(loss_pct=4), Impairment(loss_pct=4))
    assert profile.round_trip_loss == pytest.approx(1 - 0.96**2)
    one_way = LinkProfile("y", Impairment(delay_ms=20, loss_pct=2), Impairment(delay_ms=20))
    assert one_way.round_trip_loss == pytest.approx(0.02)


def test_profiles_survive_a_trip_through_json_dicts():
    profile = LinkProfile("p", Impairment(delay_ms=20, jitter_ms=5, burst=GilbertElliott(0.01, 0.5)),
                          Impairment(rate_mbit=10))
    assert LinkProfile.from_dict(profile.to_dict()) == profile


def test_mathis_matches_the_published_formula():
    # 1448-byte MSS, 40 ms, 1 %: 1448*8/0.04 * 1.2247/0.1 = 3.547 Mbit/s
    assert mathis_mbit(40, 0.01) == pytest.approx(3.547, rel=1e-3)
    assert math.isinf(mathis_mbit(40, 0))
