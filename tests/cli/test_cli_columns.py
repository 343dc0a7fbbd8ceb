"""The column the user named, or a message (issue 31): roles on every surface, --no-weight."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import mcviz
from mcviz.cli import main
from mcviz.errors import ValidationError


@pytest.fixture
def bad_score(tmp_path, bad_score_frame):
    frame = bad_score_frame(300)
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_text_score_column_is_still_the_score():
    frame = pd.DataFrame({"x0": [0.1, 0.9], "score": ["0.2", "oops"], "label": [0, 1]})
    roles = mcviz.infer_roles(frame)
    assert roles.score == "score"  # not x0, though x0 is the only numeric column in [0, 1]
    assert "score" not in roles.covariates


def test_library_and_cli_stop_with_the_same_message(bad_score, capsys):
    with pytest.raises(ValidationError, match=r"column 'score': 1 of 300 rows \(rows 7\) are "
                       r"not numbers.*'oops'.*--drop-invalid") as caught:
        mcviz.load_predictions(bad_score)
    assert caught.value.column == "score"
    assert main(["metrics", str(bad_score)]) == 2
    err = capsys.readouterr().err
    assert str(caught.value) in err
    # --drop-invalid drops the row and analyses `score`, as the message offers
    assert main(["metrics", str(bad_score), "--drop-invalid", "--json"]) == 0
    captured = capsys.readouterr()
    output = json.loads(captured.out)
    assert output["n"] == 299
    assert output["columns"] == {"score": "score", "probabilities": [], "label": "label",
                                 "weight": None, "response": "binary",
                                 "covariates": ["x0", "x1"]}
    assert ("mcviz: columns: score 'score', label 'label', unweighted, 2 covariates "
            "('x0', 'x1')") in captured.err


def test_no_weight_is_unweighted_and_the_weight_column_is_no_covariate(tmp_path, capsys):
    frame = pd.DataFrame({"p": [0.1, 0.3, 0.6, 0.8] * 5, "y": [0, 1, 0, 1] * 5,
                          "weight": [1.0, 2.0, 3.0, 4.0] * 5, "age": range(20)})
    path = tmp_path / "w.csv"
    frame.to_csv(path, index=False)
    for flag in (["--no-weight"], ["--weight", ""]):
        assert main(["metrics", str(path), "--json", *flag]) == 0
        output = json.loads(capsys.readouterr().out)
        assert output["weight_total"] == 20.0
        assert output["columns"]["weight"] is None
        assert output["columns"]["covariates"] == ["age"]
    assert main(["metrics", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["columns"]["weight"] == "weight"


def test_no_weight_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["metrics", "--help"])
    text = capsys.readouterr().out
    assert "--no-weight" in text
    assert "--weight ''" in " ".join(text.split())
