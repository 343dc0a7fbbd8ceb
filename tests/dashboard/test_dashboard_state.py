"""Dashboard state helpers: bin counts, the default mapping (the library's role rule)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import state as s
from mcviz.io import load_predictions


@pytest.mark.parametrize(("text", "expected"), [
    ("10, 20, 50", (10, 20, 50)),
    ("5;7", (5, 7)),
    ("1, 2, 1001, 30", (2, 30)),  # 1 and 1001 lie outside [2, 1000]
    ("a, b", s.DEFAULT_BINS),
    ("", s.DEFAULT_BINS),
    ("3, 4, 5, 6", (3, 4, 5)),
    ("9" * 50, s.DEFAULT_BINS),
])
def test_bin_counts(text, expected):
    assert s.parse_bin_counts(text) == expected


def _three_class_frame(labels, prefix="prob_"):
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1, 1, 1], size=60)
    return pd.DataFrame({f"{prefix}{labels[0]}": p[:, 0], f"{prefix}{labels[1]}": p[:, 1],
                         f"{prefix}{labels[2]}": p[:, 2],
                         "label": rng.choice(labels, 60), "x": rng.normal(size=60)})


def test_per_class_columns_with_class_labels_are_multiclass_and_load():
    # prob_a1/prob_a2/prob_a3 with labels a1/a2/a3: the case the old dashboard rule got wrong
    frame = _three_class_frame(["a1", "a2", "a3"])
    mapping = s.default_mapping(frame)
    assert mapping.probabilities == ("prob_a1", "prob_a2", "prob_a3")
    assert mapping.score is None
    pred = load_predictions(frame, **mapping.load_options())
    assert pred.multiclass


def test_three_binary_models_with_a_0_1_label_are_not_classes():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"score_a": rng.uniform(size=40), "score_b": rng.uniform(size=40),
                          "score_c": rng.uniform(size=40), "label": rng.integers(0, 2, 40)})
    mapping = s.default_mapping(frame)
    assert mapping.probabilities == ()
    assert mapping.score == "score_a"
    load_predictions(frame, **mapping.load_options())


def test_analysis_key_changes_with_the_mapping():
    source = {"kind": "upload", "name": "f.csv", "digest": "ab" * 32}
    one = s.analysis_key(source, s.ColumnMapping(score="p"))
    two = s.analysis_key(source, s.ColumnMapping(score="q"))
    assert one != two
    assert len(one) == 24
