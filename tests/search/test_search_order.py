"""The findings' list: held-out evidence orders it, in-sample numbers use M's sigma, void p."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcviz import Predictions, multicalibration, search_subpopulations
from mcviz.io.assembly import demo_path
from mcviz.stats.weighting import reweight
from mcviz.subpopulations import Subpopulation


def _calibrated_census(seed: int) -> Predictions:
    """The Adult demo's covariates and GBM score, labels drawn Bernoulli(score): calibrated,
    read as real-valued responses (the issue's ``--response continuous`` case)."""
    frame = pd.read_parquet(demo_path("adult"))
    score = frame["score_gbm"].to_numpy(float)
    label = (np.random.default_rng(seed).random(score.size) < score).astype(float)
    covariates = frame.drop(columns=["income_gt_50k", "score_gbm", "score_logistic",
                                     "score_uncalibrated"])
    return Predictions.from_arrays(score, label, covariates=covariates, response="continuous")


def test_findings_are_listed_by_held_out_evidence_with_m_sigma_in_sample():
    pred = _calibrated_census(0)
    result = search_subpopulations(pred, seed=0)
    findings = result.findings
    assert len(findings) >= 3
    # the list: confirmed first, then by held-out p-value (Holm's adjustment is monotone in it)
    keys = [(not f.confirmed, f.p_value) for f in findings]
    assert keys == sorted(keys)
    assert [f.rank for f in findings] == list(range(1, len(findings) + 1))
    assert [s.id for s in result.subpopulations.subpopulations[1:]] == [f.rank for f in findings]
    # not the order of the in-sample numbers: the held-out rows reordered it
    in_sample = [f.search_kuiper_z for f in findings]
    assert in_sample != sorted(in_sample, reverse=True)
    # every in-sample D/sigma is the one M's table gives the same rows (the whole population's
    # pooled floor of eq. (6)): over all rows, and over the search rows
    held = np.asarray(result.holdout_index)
    searched = [Subpopulation(f.rank, 0, (), f.description,
                              np.setdiff1d(f.subpopulation.index, held)) for f in findings]
    table = multicalibration(pred, searched)
    np.testing.assert_allclose([f.search_kuiper_z for f in findings], table.kuiper_z[1:],
                               rtol=1e-9)
    table = multicalibration(pred, result.subpopulations)
    np.testing.assert_allclose([f.kuiper_z for f in findings], table.kuiper_z[1:], rtol=1e-9)
    # a collapsed eq. (6) sigma no longer inflates it: at most 4x the all-rows D/sigma
    # (the search's own per-part floor gave 139.7 for `score >= 0.994862`, whose all-rows
    # D/sigma is 10.6)
    assert all(f.search_kuiper_z <= 4 * max(f.kuiper_z, 1.0) for f in findings)


def _low_prevalence_planted(n: int = 10_000) -> tuple[pd.DataFrame, np.ndarray]:
    """Scores calibrated under the low-prevalence weights (Appendix B), but for a planted group.

    With true probability p and prevalence A, the weighted rate at p is (p/A) / (p/A + 1 - p),
    the score given; group ``g == a`` (10% of the rows) has p + 0.15 instead.
    """
    rng = np.random.default_rng(3)
    g = np.where(rng.random(n) < 0.1, "a", rng.choice(["b", "c", "d"], n))
    p = rng.uniform(0.05, 0.4, n)
    label = (rng.random(n) < p + 0.15 * (g == "a")).astype(int)
    prevalence = label.mean()
    score = (p / prevalence) / (p / prevalence + 1 - p)
    frame = pd.DataFrame({"score": score, "label": label, "g": pd.Categorical(g),
                          "x": rng.normal(size=n)})
    return frame, g == "a"


def test_low_prevalence_weights_void_the_held_out_p_values():
    # the planted group (about 1,000 rows, 700 searched: far above the size limit of
    # max(20, 0.005 x 7,000)) under label-dependent weights: found, with a held-out D/sigma
    # whose Brownian tail would be below 1e-3 (D/sigma > 4) -- but the p-value is void under
    # such weights, so it is NaN, and the finding is not confirmed
    frame, mask = _low_prevalence_planted()
    pred = reweight(Predictions.from_arrays(
        frame["score"].to_numpy(), frame["label"].to_numpy(),
        covariates=frame[["g", "x"]]), "low-prevalence")
    result = search_subpopulations(pred, n_findings=3)
    first = next(f for f in result.findings if f.description == "g == a")
    assert first.size == mask.sum() > 10 * max(20, 0.005 * result.n_search)
    assert first.holdout_kuiper_z > 4
    assert np.isnan(first.p_value)
    assert np.isnan(first.p_adjusted)
    assert not first.confirmed
    assert not any(f.confirmed for f in result.findings)


def test_cli_json_says_null_for_a_void_p_value(cli, tmp_path):
    import json

    frame, _ = _low_prevalence_planted()
    path = tmp_path / "planted.csv"
    frame.to_csv(path, index=False)
    run = cli("search", path, "--score", "score", "--label", "label", "--weighting",
              "low-prevalence", "--findings", "3", "--json")
    assert run.status == 0, run.err
    found = json.loads(run.out)["findings"]
    planted_group = next(f for f in found if f["description"] == "g == a")
    assert planted_group["p_adjusted"] is None
    assert planted_group["p_value"] is None
    assert planted_group["confirmed"] is False
