"""Which band an agreement falls in, and what that band supports (the bands practitioners
use: below 0.4 exploration only, 0.4 to 0.7 monitoring, about 0.7 and up gating)."""

from __future__ import annotations

from tracejudge.models import AgreementBand, Estimate

__all__ = ["BANDS", "band_of", "describe"]

#: (lower edge, band, what it supports), highest first.
BANDS: tuple[tuple[float, AgreementBand, str], ...] = (
    (
        0.7,
        "gating",
        "gating releases: agreement strong enough to block a release on the judge's "
        "verdict (keep labelling a sample to watch for drift)",
    ),
    (
        0.4,
        "monitoring",
        "monitoring: trends, dashboards and picking traces for people to review; not "
        "gating a release on the judge alone",
    ),
    (
        float("-inf"),
        "exploration",
        "exploration only: finding candidates to read; the judge agrees with your people "
        "too little beyond chance to monitor or gate on it",
    ),
)

#: About this many labelled items make an interval narrow enough to trust a band.
ENOUGH_ITEMS = 100


def band_of(value: float) -> tuple[AgreementBand, str]:
    """The band of an agreement value and what it supports."""
    for edge, band, supports in BANDS:
        if value >= edge:
            return band, supports
    raise AssertionError("unreachable")


def describe(kappa: Estimate) -> tuple[AgreementBand | None, str, list[str]]:
    """The band of `kappa`, a sentence on what it supports, and cautions (an interval that
    reaches into a lower band, too few items)."""
    cautions = []
    if kappa.n < ENOUGH_ITEMS:
        cautions.append(
            f"only {kappa.n} labelled items: about {ENOUGH_ITEMS} give an interval narrow "
            "enough to trust"
        )
    if kappa.value is None:
        why = "no band: Cohen's kappa is undefined here (people and judge used one label only)"
        return None, why, cautions
    band, supports = band_of(kappa.value)
    text = f"kappa {kappa.value:.2f} is in the {band} band: it supports {supports}"
    if kappa.low is not None:
        lower, _ = band_of(kappa.low)
        if lower != band:
            cautions.append(
                f"the 95% interval reaches down to {kappa.low:.2f}, into the {lower} band: "
                "label more items before relying on this band"
            )
    return band, text, cautions
