"""Impairment profiles: what the emulated WAN does to packets in one direction between two sites.

A `LinkProfile` pairs two `Impairment`s, one per direction, because every backend acts on one direction
at a time (tc-netem only on egress, the NFQUEUE emulator per queue). Delay is one-way, so a profile
with `delay_ms=20` both ways has a 40 ms round trip. Loss is per direction too: `loss_pct=2` on both
directions makes ping (which needs both the request and the reply) lose 1-(1-0.02)^2 = 3.96 %.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class GilbertElliott:
    """Bursty loss: a two-state Markov chain (good/bad) evaluated once per packet.

    `p` is P(good -> bad), `r` is P(bad -> good); a packet is lost with `loss_bad` in the bad state and
    `loss_good` in the good state. tc-netem calls these p, r, 1-h and 1-k (`loss gemodel`).
    """

    p: float
    r: float
    loss_bad: float = 1.0
    loss_good: float = 0.0

    def __post_init__(self) -> None:
        for name in ("p", "r", "loss_bad", "loss_good"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"gilbert-elliott {name} must be a probability in [0, 1], got {value}")
        if self.r == 0.0:
            raise ValueError("gilbert-elliott r must be > 0, or the chain never leaves the bad state")

    @property
    def mean_loss(self) -> float:
        """Steady-state loss probability."""
        bad = self.p / (self.p + self.r) if self.p + self.r else 0.0
        return bad * self.loss_bad + (1.0 - bad) * self.loss_good

    @property
    def mean_burst(self) -> float:
        """Mean number of consecutive packets spent in the bad state."""
        return 1.0 / self.r


@dataclass(frozen=True)
class Impairment:
    """What happens to packets in one direction: delay (one-way), jitter, loss and a rate cap.

    `loss_pct` is independent (Bernoulli) loss; `burst` replaces it with Gilbert-Elliott loss.
    `jitter_ms` draws each packet's delay uniformly from [delay - jitter, delay + jitter] (tc-netem's
    default without a distribution table); packets still leave in arrival order. `rate_mbit` caps the
    direction's bandwidth with a queue of `buffer_ms` worth of bytes in front of it.
    """

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    burst: GilbertElliott | None = None
    rate_mbit: float | None = None
    buffer_ms: float = 50.0

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delay and jitter must not be negative")
        if self.jitter_ms > self.delay_ms:
            raise ValueError(f"jitter {self.jitter_ms} ms is larger than the delay {self.delay_ms} ms")
        if not 0.0 <= self.loss_pct <= 100.0:
            raise ValueError(f"loss must be a percentage in [0, 100], got {self.loss_pct}")
        if self.burst is not None and self.loss_pct:
            raise ValueError("give either independent loss or a gilbert-elliott burst model, not both")
        if self.rate_mbit is not None and self.rate_mbit <= 0:
            raise ValueError(f"rate must be positive, got {self.rate_mbit}")
        if self.buffer_ms <= 0:
            raise ValueError("buffer_ms must be positive")

    @property
    def mean_loss(self) -> float:
        """Expected fraction of packets lost in this direction."""
        return self.burst.mean_loss if self.burst else self.loss_pct / 100.0

    @property
    def needs_delay_stage(self) -> bool:
        """True when a packet has to be held (delay, jitter) or judged statefully (bursty loss)."""
        return self.delay_ms > 0 or self.jitter_ms > 0 or self.burst is not None

    @property
    def is_neutral(self) -> bool:
        return not self.needs_delay_stage and not self.loss_pct and self.rate_mbit is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Impairment:
        data = dict(data)
        if data.get("burst"):
            data["burst"] = GilbertElliott(**data["burst"])
        return cls(**data)

    @classmethod
    def parse(cls, text: str) -> Impairment:
        """Parse `delay=20ms,jitter=2ms,loss=1%,rate=100mbit,buffer=50ms` or `ge=P/R[/1-h[/1-k]]` (percent).

        An empty string or `none` is the neutral impairment.
        """
        text = text.strip()
        if text in ("", "none"):
            return cls()
        values: dict[str, Any] = {}
        for item in text.split(","):
            key, sep, raw = item.partition("=")
            key, raw = key.strip().lower(), raw.strip().lower()
            if not sep or not raw:
                raise ValueError(f"expected key=value in {item!r}")
            if key in ("delay", "jitter", "buffer"):
                values[{"delay": "delay_ms", "jitter": "jitter_ms", "buffer": "buffer_ms"}[key]] = _number(raw, "ms")
            elif key == "loss":
                values["loss_pct"] = _number(raw, "%")
            elif key == "rate":
                values["rate_mbit"] = _rate_mbit(raw)
            elif key == "ge":
                parts = [_number(part, "%") / 100.0 for part in raw.split("/")]
                if not 2 <= len(parts) <= 4:
                    raise ValueError(f"ge needs p/r[/1-h[/1-k]] in percent, got {raw!r}")
                values["burst"] = GilbertElliott(*parts)
            else:
                raise ValueError(f"unknown impairment key {key!r} (delay, jitter, loss, ge, rate, buffer)")
        return cls(**values)

    def describe(self) -> str:
        parts = []
        if self.delay_ms or self.jitter_ms:
            parts.append(f"delay={self.delay_ms:g}ms" + (f"±{self.jitter_ms:g}ms" if self.jitter_ms else ""))
        if self.loss_pct:
            parts.append(f"loss={self.loss_pct:g}%")
        if self.burst:
            b = self.burst
            parts.append(f"ge={b.p * 100:g}/{b.r * 100:g}/{b.loss_bad * 100:g}/{b.loss_good * 100:g}%")
        if self.rate_mbit:
            parts.append(f"rate={self.rate_mbit:g}mbit")
        return ",".join(parts) or "none"


def _number(raw: str, unit: str) -> float:
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(?:" + re.escape(unit) + ")?", raw)
    if not match:
        raise ValueError(f"expected a number in {unit}, got {raw!r}")
    return float(match.group(1))


def _rate_mbit(raw: str) -> float:
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(kbit|mbit|gbit)?", raw)
    if not match:
        raise ValueError(f"expected a rate like 100mbit, got {raw!r}")
    scale = {"kbit": 1e-3, "mbit": 1.0, "gbit": 1e3, None: 1.0}[match.group(2)]
    return float(match.group(1)) * scale


@dataclass(frozen=True)
class LinkProfile:
    """The impairment between two sites: `forward` acts on a -> b, `reverse` on b -> a."""

    name: str = "clear"
    forward: Impairment = field(default_factory=Impairment)
    reverse: Impairment = field(default_factory=Impairment)

    @classmethod
    def symmetric(cls, name: str, impairment: Impairment) -> LinkProfile:
        return cls(name, impairment, impairment)

    @property
    def rtt_ms(self) -> float:
        """Configured round-trip delay (the emulator's contribution, not the hosts')."""
        return self.forward.delay_ms + self.reverse.delay_ms

    @property
    def round_trip_loss(self) -> float:
        """Probability that a request/reply exchange such as ping loses either packet."""
        return 1.0 - (1.0 - self.forward.mean_loss) * (1.0 - self.reverse.mean_loss)

    def with_name(self, name: str) -> LinkProfile:
        return replace(self, name=name)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "forward": self.forward.to_dict(), "reverse": self.reverse.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkProfile:
        return cls(data["name"], Impairment.from_dict(data["forward"]), Impairment.from_dict(data["reverse"]))

