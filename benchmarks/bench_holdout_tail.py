r"""The Brownian-range tail against the exact (simulated) tail of a held-out group's D/sigma.

Why small binary held-out groups get a simulated p-value in the guided search
(:func:`mcviz.search._confirm.holdout_p_values`): calibrated labels are drawn on ``m`` rows with
scores uniform in a range, so that :math:`V = \sum S(1-S)` takes the values below; the
statistic is the range of the cumulative differences over the square root of V (eqs. (2) and
(5) of paper 000), and each line gives how often it exceeds the Brownian critical value of
level alpha, and that rate over alpha (1.00x: exact; above 1: the Brownian p is too small).

    nice -n 10 prlimit --as=4000000000 -- python benchmarks/bench_holdout_tail.py
"""

import numpy as np

from mcviz.search._confirm import critical_z

ALPHAS = (0.05, 0.01, 0.002)
SCORE_RANGES = ((0.005, 0.015), (0.02, 0.06), (0.1, 0.2), (0.3, 0.7), (0.94, 0.98))
VARIANCES = (2, 5, 10, 20, 40, 80)


def main() -> None:
    rng = np.random.default_rng(3)
    crit = [critical_z(a) for a in ALPHAS]
    for lo, hi in SCORE_RANGES:
        for variance in VARIANCES:
            mean = (lo + hi) / 2
            m = max(2, round(variance / (mean * (1 - mean))))
            draws = min(200_000, int(4e7 // m))
            hits = np.zeros(len(ALPHAS))
            done = 0
            while done < draws:
                b = min(draws - done, int(4e6 // m) + 1)
                s = np.sort(rng.uniform(lo, hi, (b, m)), axis=1)
                path = np.cumsum((rng.random((b, m)) < s) - s, axis=1)
                z = (np.maximum(path.max(1), 0) - np.minimum(path.min(1), 0)) / np.sqrt(
                    (s * (1 - s)).sum(1))
                hits += [(z > c).sum() for c in crit]
                done += b
            rate = hits / draws
            print(f"scores {lo}-{hi} V {variance} m {m} draws {draws}: " + "  ".join(
                f"a={a}: {r:.4f} ({r / a:.2f}x)" for a, r in zip(ALPHAS, rate, strict=True)),
                flush=True)


if __name__ == "__main__":
    main()
