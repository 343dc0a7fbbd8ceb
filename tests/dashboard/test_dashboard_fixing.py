"""The Fix page's services: the JSON of ``mcviz fix --json``; terms mapped to reviewed findings.

The page loads the file with its default mapping (:func:`dashboard.state.default_mapping`), runs
:func:`dashboard.fixing.run_fix` with :class:`dashboard.fixing.FixRun`'s options and writes
:func:`dashboard.fixing.fix_json`; the command line is given the same file, score, label and
method. Every number must be the same (the page once judged 300 subpopulations and the command
line 1,000: "removes 61%" against "58%" of held-out M on the same rows).
"""

import json

import pandas as pd
import pytest

from dashboard import fixing
from dashboard.state import default_mapping
from mcviz.cli._common import json_safe
from mcviz.io import demo_path, load_predictions
from mcviz.recalibration.simulate import planted_fix_data
from mcviz.settings import DecisionSettings, FixSettings


def _page(frame: pd.DataFrame, method: str):
    mapping = default_mapping(frame)
    pred = load_predictions(frame, **mapping.load_options())
    run = fixing.FixRun(method, tuple(pred.covariate_kinds), FixSettings())
    result = fixing.run_fix(pred, **run.options())
    return mapping, pred, result, fixing.fix_json(result, DecisionSettings(), run.settings.seed)


@pytest.mark.parametrize(("source", "method"), [("adult", "platt"), ("planted", "findings")])
def test_the_page_and_the_command_line_print_the_same_json(cli, tmp_path, source, method):
    if source == "adult":
        path = demo_path("adult")
        frame = pd.read_parquet(path)
    else:
        frame = planted_fix_data(20_000, seed=1).drop(columns="truth")
        path = tmp_path / "pred.parquet"
        frame.to_parquet(path, index=False)
    mapping, pred, _result, page = _page(frame, method)
    run = cli("fix", path, "--score", mapping.score, "--label", mapping.label, "--method",
              method, "--json")
    assert run.status == 0, run.err
    assert run.json == json.loads(json.dumps(json_safe(page)))
    if source == "adult":  # the covariates both took: the mapping's 14 (no other score column)
        assert len(pred.covariate_kinds) == 14
        assert not {"score_logistic", "score_uncalibrated"} & set(pred.covariate_kinds)


def test_terms_map_to_the_reviewed_findings_and_the_reviewed_can_be_fixed_exactly():
    from mcviz.search import search_subpopulations

    frame = planted_fix_data(20_000, seed=1).drop(columns="truth")
    pred = load_predictions(frame, score="score", label="label")
    reviewed = fixing.reviewed_findings(search_subpopulations(pred, seed=0))
    assert reviewed, "the planted findings are confirmed"
    descriptions = tuple(f.description for f in reviewed)
    run = fixing.FixRun("findings", tuple(pred.covariate_kinds), FixSettings(), descriptions)
    result = fixing.run_fix(pred, findings=reviewed, **run.options())
    # exactly the reviewed findings, one term each (applied largest group first)
    assert sorted(result.terms) == sorted(descriptions)
    assert len(result.terms) == len(descriptions)
    overlap = fixing.term_overlap(result, descriptions)
    assert list(overlap["closest reviewed finding"]) == list(result.terms)
    assert list(overlap["overlap (Jaccard, held-out rows)"]) == [1.0] * len(descriptions)
    assert "used twice" in fixing.TWICE_CAVEAT
