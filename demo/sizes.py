"""How big each demo size is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoSize:
    """Counts and spans of one demo size."""

    name: str
    securities: int
    years: int
    sp500: int
    djia: int
    ndx100: int
    managers: int
    holdings_per_manager: int
    insider_issuers: int


SIZES: dict[str, DemoSize] = {
    # tiny: every scenario on the fewest securities, for the generator's property tests
    "tiny": DemoSize(
        "tiny",
        securities=20,
        years=4,
        sp500=10,
        djia=5,
        ndx100=6,
        managers=2,
        holdings_per_manager=8,
        insider_issuers=2,
    ),
    # small builds through the whole pipeline in well under a minute
    "small": DemoSize(
        "small",
        securities=140,
        years=5,
        sp500=60,
        djia=30,
        ndx100=40,
        managers=6,
        holdings_per_manager=40,
        insider_issuers=8,
    ),
    # large: about 3,000 securities over 20 years, for benchmarks
    "large": DemoSize(
        "large",
        securities=3000,
        years=20,
        sp500=500,
        djia=30,
        ndx100=100,
        managers=25,
        holdings_per_manager=300,
        insider_issuers=150,
    ),
}
