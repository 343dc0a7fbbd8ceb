"""The comparison of two models in plain sentences (the verdict every surface shows).

Only words: every number is read from the results of :func:`mcviz.compare_models`; a claim
follows its interval (a difference whose 95% interval holds 0 is "not beyond chance").
"""

from __future__ import annotations

from mcviz.text import MINUS, format_fixed, p_phrase

__all__ = ["comparison_sentences", "decision_sentences", "finding_sentence",
           "points", "relative", "signed"]

ALPHA = 0.05


def points(value: float) -> str:
    """Write a difference of probabilities in percentage points (signed).

    Examples
    --------
    >>> points(0.0612), points(-0.004), points(-0.0002)
    ('+6.1 percentage points', '−0.4 percentage points', '0.0 percentage points')
    """
    return f"{format_fixed(value * 100, signed=True)} percentage points"


def signed(value: float) -> str:
    """Write a loss difference with its sign: four decimals, two significant digits if tiny.

    Examples
    --------
    >>> signed(0.0234), signed(-0.00041), signed(7.43e-06), signed(0.0)
    ('+0.0234', '−0.0004', '+7.4e-06', '+0.0000')
    """
    text = f"{value:+.4f}" if value == 0 or abs(value) >= 5e-5 else f"{value:+.2g}"
    return text.replace("-", MINUS, 1) if text.startswith("-") else text


def relative(value: float) -> str:
    """Write a relative change (a fraction) as a percentage: 0.1 % or more to one decimal.

    Examples
    --------
    >>> relative(0.267), relative(8.4e-05)
    ('26.7%', '0.0084%')
    """
    value = abs(value)
    return f"{value:.1%}" if value >= 0.001 or value == 0 else f"{value * 100:.2g}%"


def finding_sentence(description: str, share: float, effect: float, low: float, high: float,
                     calibration_a: float, calibration_b: float, p_adjusted: float,
                     confirmed: bool) -> str:
    """One group where B's loss differs from A's, in a sentence.

    Examples
    --------
    >>> finding_sentence("region == north", 0.12, 0.031, 0.02, 0.042, 0.01, -0.06, 1e-5, True)
    ... # doctest: +NORMALIZE_WHITESPACE
    "Among rows with region == north (12.0% of rows), B's Brier loss is higher than A's by
    0.0310 per row (95% CI 0.0200 to 0.0420, held-out rows); there observed − predicted is
    +1.0 percentage points under A and −6.0 percentage points under B (adjusted p < 0.0001)."
    """
    direction = "higher" if effect > 0 else "lower"
    text = (f"Among rows with {description} ({share:.1%} of rows), B's Brier loss is "
            f"{direction} than A's by {abs(effect):.4f} per row (95% CI {low:.4f} to "
            f"{high:.4f}, held-out rows); there observed − predicted is "
            f"{points(calibration_a)} under A and {points(calibration_b)} under B (adjusted "
            f"{p_phrase(p_adjusted)}).")
    if not confirmed:
        text += " Not confirmed on the held-out rows: a lead, not a result."
    return text


def _overall(brier) -> str:
    numbers = (f"Brier score {brier.b:.4f} against {brier.a:.4f}; difference "
               f"{signed(brier.difference)}, 95% CI {signed(brier.ci_low)} to "
               f"{signed(brier.ci_high)}")
    if brier.ci_high < 0:
        return (f"B predicts better overall: its Brier score is {relative(brier.relative)} "
                f"lower than A's ({numbers}).")
    if brier.ci_low > 0:
        return (f"B predicts worse overall: its Brier score is {relative(brier.relative)} "
                f"higher than A's ({numbers}).")
    return f"Overall, B and A predict equally well within chance ({numbers})."


def _calibration(calibration_a, calibration_b) -> str:
    def one(name: str, result) -> str:
        beyond = "beyond chance" if result.p_value < ALPHA else "within chance"
        return (f"{name}'s largest cumulative gap between observed and predicted is "
                f"{result.kuiper * 100:.1f} percentage points ({beyond}, "
                f"{p_phrase(result.p_value)})")

    return f"Calibration: {one('A', calibration_a)}; {one('B', calibration_b)}."


def _groups(regressions, improvements) -> list[str]:
    sentences = []
    for name, found in (("worse", regressions), ("better", improvements)):
        confirmed = [f for f in found if f.confirmed]
        if confirmed:
            sentences.extend(f.sentence for f in confirmed)
        else:
            sentences.append(f"No group where B is {name} than A was confirmed on the "
                             "held-out rows.")
    return sentences


def decision_sentences(net) -> list[str]:
    """Return what switching to B does at each threshold, one sentence each (the verdict's last)."""
    sentences = []
    for k, t in enumerate(net.thresholds):
        per = 1000.0
        gain, low, high = (float(v[k]) * per for v in (net.difference, net.ci_low, net.ci_high))
        if net.changed[k] == 0:
            sentences.append(f"At a threshold of {t:g}, switching to B changes no decision.")
            continue
        interval = (f"95% CI {format_fixed(low, signed=True)} to "
                    f"{format_fixed(high, signed=True)}")
        changed = f"{net.changed[k]:.1%} of the decisions change"
        if low > 0:
            what = f"gains {gain:.1f} net true positives per 1,000 decisions ({interval})"
        elif high < 0:
            what = f"loses {-gain:.1f} net true positives per 1,000 decisions ({interval})"
        else:
            what = (f"changes the net benefit by {format_fixed(gain, signed=True)} per 1,000 "
                    "decisions, within "
                    f"chance ({interval})")
        sentences.append(f"At a threshold of {t:g}, switching to B {what}; {changed}.")
    return sentences


def _next_step(brier, regressions) -> str:
    worse = [f for f in regressions if f.confirmed]
    if brier.ci_low > 0:
        return "Keep A: B predicts worse overall."
    if brier.ci_high < 0 and not worse:
        return ("Switch to B: it predicts better overall and is worse in no group confirmed on "
                "held-out rows.")
    if brier.ci_high < 0:
        return (f"B predicts better overall but is worse in {len(worse)} confirmed group(s): "
                "fix B there (mcviz fix) or keep A for those rows before switching.")
    if worse:
        return ("Keep A, or fix B where it is worse: overall the models are equal within "
                "chance and B is worse in confirmed groups.")
    return ("Neither model predicts better beyond chance: decide on other grounds (cost, "
            "simplicity), or collect more labelled rows.")


def comparison_sentences(*, brier, calibration_a, calibration_b, paths, regressions,
                         improvements, net_benefit, **_: object) -> tuple[tuple[str, ...], str]:
    """Return the verdict sentences and the next step of a comparison.

    Takes the fields of :class:`~mcviz.compare.ModelComparison` by keyword (others ignored).
    """
    head = paths[0]
    along = ("beyond chance" if head.p_value < ALPHA else "within chance")
    sentences = [
        _overall(brier),
        _calibration(calibration_a, calibration_b),
        (f"Ordered by the {head.order_by}, the running difference of the two models' losses "
         f"varies {along} ({p_phrase(head.p_value)})."),
        *_groups(regressions, improvements),
        *decision_sentences(net_benefit),
    ]
    return tuple(sentences), _next_step(brier, regressions)
