"""The comparison of two models in plain sentences (the verdict every surface shows).

Only words: every number is read from the results of :func:`mcviz.compare_models`; a claim
follows its interval (a difference whose 95% interval holds 0 is "not beyond chance").
"""

from __future__ import annotations

from mcviz.text import MINUS, format_fixed, p_phrase

__all__ = ["comparison_sentences", "decision_sentences", "finding_details", "finding_sentence",
           "points", "relative", "signed", "verdict_parts"]

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
    """One group where B's loss differs from A's, in a sentence in words (#40).

    The held-out effect, its interval and the adjusted p are :func:`finding_details` (the
    hover help and the JSON's fields), never the sentence.

    Examples
    --------
    >>> finding_sentence("region is north", 0.12, 0.031, 0.02, 0.042, 0.01, -0.06, 1e-5, True)
    ... # doctest: +NORMALIZE_WHITESPACE
    "B predicts worse than A for region is north (12.0% of rows): there A's observed − predicted
    is +1.0 percentage points, B's −6.0 percentage points (held-out rows)."
    """
    direction = "worse" if effect > 0 else "better"
    text = (f"B predicts {direction} than A for {description} ({share:.1%} of rows): there "
            f"A's observed − predicted is {points(calibration_a)}, B's {points(calibration_b)} "
            "(held-out rows).")
    if not confirmed:
        text += " Not confirmed on the held-out rows: a lead, not a result."
    return text


def finding_details(finding) -> str:
    """The statistics behind a group's sentence (hover help, a details line).

    >>> from types import SimpleNamespace as F
    >>> print(finding_details(F(effect=0.031, ci_low=0.02, ci_high=0.042, p_adjusted=1e-5,
    ...                         holdout_size=1200)))  # doctest: +NORMALIZE_WHITESPACE
    Held-out Brier loss B − A +0.0310 per row (95% CI +0.0200 to +0.0420); adjusted
    p < 0.0001; 1,200 held-out rows.
    """
    return (f"Held-out Brier loss B − A {signed(finding.effect)} per row (95% CI "
            f"{signed(finding.ci_low)} to {signed(finding.ci_high)}); adjusted "
            f"{p_phrase(finding.p_adjusted)}; {finding.holdout_size:,} held-out rows.")


def _overall(brier, log_loss=None) -> tuple[str, str, str]:
    details = (f"Brier score B {brier.b:.4f}, A {brier.a:.4f}; B − A {signed(brier.difference)} "
               f"(95% CI {signed(brier.ci_low)} to {signed(brier.ci_high)}, paired)")
    if log_loss is not None:
        details += f"; log loss B − A {signed(log_loss.difference)}"
    details += "."
    if brier.ci_high < 0:
        return (f"B predicts better than A overall: its squared error (Brier score) is "
                f"{relative(brier.relative)} lower.", "good", details)
    if brier.ci_low > 0:
        return (f"B predicts worse than A overall: its squared error (Brier score) is "
                f"{relative(brier.relative)} higher.", "bad", details)
    return ("Overall, A and B predict equally well: the difference is within chance.",
            "neutral", details)


def _calibration(calibration_a, calibration_b) -> tuple[str, str, str]:
    def one(name: str, result) -> str:
        beyond = "beyond chance" if result.p_value < ALPHA else "within chance"
        return f"{name} {result.kuiper * 100:.1f} percentage points ({beyond})"

    def stats(name: str, result) -> str:
        return f"{name}: D/σ {result.kuiper_z:.2f}, {p_phrase(result.p_value)}"

    return (f"Largest cumulative gap between observed and predicted: "
            f"{one('A', calibration_a)}, {one('B', calibration_b)}.", "neutral",
            f"{stats('A', calibration_a)}; {stats('B', calibration_b)} (Kuiper, eqs. 2 and 5).")


def _path(head) -> tuple[str, str, str]:
    along = "beyond chance" if head.p_value < ALPHA else "within chance"
    return (f"Ordered by the {head.order_by}, the difference between the two models' losses "
            f"changes {along}.", "neutral",
            f"Paired cumulative differences: D/σ {head.kuiper_z:.2f}, {p_phrase(head.p_value)}.")


def _groups(regressions, improvements) -> list[tuple[str, str, str]]:
    parts = []
    for name, found, kind in (("worse", regressions, "bad"), ("better", improvements, "good")):
        confirmed = [f for f in found if f.confirmed]
        if confirmed:
            parts.extend((f.sentence, kind, finding_details(f)) for f in confirmed)
        else:
            parts.append((f"No group where B is {name} than A was confirmed on the "
                          "held-out rows.", "neutral", "Guided search on the paired Brier "
                          "difference; Holm-adjusted held-out p-values."))
    return parts


def decision_sentences(net) -> list[str]:
    """Return what switching to B does at each threshold, one sentence each (the verdict's last)."""
    return [text for text, _, _ in _decisions(net)]


def _decisions(net) -> list[tuple[str, str, str]]:
    parts = []
    for k, t in enumerate(net.thresholds):
        per = 1000.0
        gain, low, high = (float(v[k]) * per for v in (net.difference, net.ci_low, net.ci_high))
        details = (f"B − A {format_fixed(gain, signed=True)} net true positives per 1,000 "
                   f"decisions (95% CI {format_fixed(low, signed=True)} to "
                   f"{format_fixed(high, signed=True)}); {net.changed[k]:.1%} of the decisions "
                   "change.")
        if net.changed[k] == 0:
            parts.append((f"At a threshold of {t:g}, switching to B changes no decision.",
                          "neutral", details))
        elif low > 0 or high < 0:
            verb = "gains" if gain > 0 else "loses"
            parts.append((f"At a threshold of {t:g}, switching to B {verb} {abs(gain):.1f} net "
                          "true positives per 1,000 decisions.", "good" if gain > 0 else "bad",
                          details))
        else:
            parts.append((f"At a threshold of {t:g}, switching to B changes the net benefit "
                          "within chance.", "neutral", details))
    return parts


def _next_step(brier, regressions) -> str:
    worse = [f for f in regressions if f.confirmed]
    if brier.ci_low > 0:
        return "Keep A, since B predicts worse overall."
    if brier.ci_high < 0 and not worse:
        return ("Switch to B, since it predicts better overall and is worse in no group "
                "confirmed on held-out rows.")
    if brier.ci_high < 0:
        return (f"B predicts better overall but is worse in {len(worse)} confirmed group(s): "
                "fix B there (mcviz fix) or keep A for those rows before switching.")
    if worse:
        return ("Keep A, or fix B where it is worse, since overall the models are equal within "
                "chance and B is worse in confirmed groups.")
    return ("Neither model predicts better beyond chance, so decide on other grounds (cost, "
            "simplicity), or collect more labelled rows.")


def verdict_parts(*, brier, calibration_a, calibration_b, paths, regressions, improvements,
                  net_benefit, log_loss=None, **_: object) -> list[tuple[str, str, str]]:
    """Return the verdict as (sentence in words, kind, the statistics behind it), in order.

    Kind is "good" (for B), "bad" or "neutral". The sentences carry no statistic (no Brier
    value, D/σ or p: #40); the third element says them, for hover help or a details line.
    Takes the fields of :class:`~mcviz.compare.ModelComparison` by keyword (others ignored).
    """
    return [_overall(brier, log_loss), _calibration(calibration_a, calibration_b),
            _path(paths[0]), *_groups(regressions, improvements), *_decisions(net_benefit)]


def comparison_sentences(**fields: object) -> tuple[tuple[str, ...], str]:
    """Return the verdict sentences (:func:`verdict_parts`' words) and the next step.

    Takes the fields of :class:`~mcviz.compare.ModelComparison` by keyword (others ignored).
    """
    parts = verdict_parts(**fields)
    return (tuple(text for text, _, _ in parts),
            _next_step(fields["brier"], fields["regressions"]))
