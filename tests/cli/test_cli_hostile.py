"""The command line's hostile corpus (issue #41): outputs, saved maps, dates, optional parts, flags.

Each case is what a careless or hostile user typed; each must end in one line on stderr naming
the flag (or the file) and the problem, exit status 2, no traceback, and nothing written; or,
where the work can be done, in the right file with the right mode.
"""

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def files(planted_directory):
    return planted_directory("hostile", 4_000, 2_000)


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _refused(run, *words):
    assert run.status == 2, (run.status, run.err)
    assert "Traceback" not in run.err
    line = run.err.strip().splitlines()[-1]
    assert line.startswith("mcviz: error:"), run.err
    for word in words:
        assert word in line, line
    return line


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------------------
# Outputs: checked before the work, written with the user's umask (item 3)

def _fix_map(cli, files, directory):
    path = directory / "fix.json"
    run = cli("fix", files / "pred.parquet", "--method", "platt", "--map", path,
              "--bootstrap", "50", "--json")
    assert run.status == 0, run.err
    return path


def test_fix_map_and_out_follow_the_umask(cli, files, tmp_path, umask_022):
    out = tmp_path / "scored.csv"
    path = tmp_path / "fix.json"
    run = cli("fix", files / "pred.parquet", "--method", "platt", "--map", path, "--out", out,
              "--bootstrap", "50", "--json")
    assert run.status == 0, run.err
    assert _mode(path) == 0o644  # 0666 less umask 022, as `open` gives; mkstemp alone is 0600
    assert _mode(out) == 0o644


def test_apply_out_follows_the_umask(cli, files, tmp_path):
    path = _fix_map(cli, files, tmp_path)
    previous = os.umask(0o027)
    try:
        out = tmp_path / "applied.parquet"
        assert cli("apply", path, files / "new.csv", "--out", out).status == 0
    finally:
        os.umask(previous)
    assert _mode(out) == 0o640


@pytest.mark.parametrize(("command", "flag", "name"), [
    ("metrics", "--table", "table.csv"), ("screen", "--out", "screen.parquet")])
def test_metrics_table_and_screen_out_follow_the_umask(cli, files, tmp_path, umask_022,
                                                       command, flag, name):
    written = tmp_path / name
    run = cli(command, files / "pred.parquet", "--score", "score", "--label", "label",
              "--subpopulations", "10", flag, written, "--json")
    assert run.status == 0, run.err
    assert _mode(written) == 0o644


def test_report_deck_follows_the_umask(cli, files, tmp_path, umask_022):
    pytest.importorskip("pptx")
    deck = tmp_path / "deck.pptx"
    run = cli("report", files / "pred.parquet", "--score", "score", "--label", "label",
              "--covariates", "region,age", "--deck", deck, "--json")
    assert run.status == 0, run.err
    assert _mode(deck) == 0o644


@pytest.mark.parametrize(("command", "flag", "suffix"), [
    ("metrics", "--table", ".csv"), ("screen", "--out", ".parquet"), ("fix", "--map", ".json"),
    ("fix", "--out", ".csv"), ("report", "--deck", ".pptx"),
])
def test_a_bad_output_is_refused_before_the_file_is_read(cli, tmp_path, command, flag, suffix):
    # the input does not exist: a refusal that names the output proves it came first
    missing = tmp_path / "never-read.parquet"
    directory = tmp_path / f"taken{suffix}"
    directory.mkdir()
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    extra = ["--score", "score", "--label", "label"]
    if command == "metrics":
        extra += ["--subpopulations", "10"]
    cases = {
        directory: "is a directory",
        fifo: "not a regular file",
        tmp_path / "no" / f"such{suffix}": "does not exist",
        f"/proc/mcviz-h41{suffix}": "no file can be written",
    }
    for path, words in cases.items():
        run = cli(command, missing, *extra, flag, path)
        _refused(run, flag, words)
    assert not list(directory.iterdir())


def test_apply_refuses_a_directory_as_out_before_reading(cli, files, tmp_path):
    path = _fix_map(cli, files, tmp_path)
    _refused(cli("apply", path, files / "new.csv", "--out", tmp_path), "--out", "suffix" if False
             else ".parquet or .csv")
    folder = tmp_path / "d.csv"
    folder.mkdir()
    _refused(cli("apply", path, files / "new.csv", "--out", folder), "--out", "is a directory")


# ------------------------------------------------------------------------------------------
# Saved maps are input like any file (item 1)

@pytest.fixture(scope="module")
def maps(files, tmp_path_factory):
    """A map of each built-in method fitted on the planted data, as parsed JSON."""
    from mcviz.cli import main

    directory = tmp_path_factory.mktemp("maps")
    fitted = {}
    for method in ("platt", "isotonic", "beta", "findings", "boost"):
        path = directory / f"{method}.json"
        argv = ["fix", str(files / "pred.parquet"), "--method", method, "--map", str(path),
                "--bootstrap", "50", "--json"]
        if method in ("findings", "boost"):
            argv += ["--covariates", "region,age"]
        assert main(argv) == 0
        fitted[method] = json.loads(path.read_text())
    return fitted


def _apply(cli, files, tmp_path, text):
    path = tmp_path / "hostile.json"
    path.write_text(text if isinstance(text, str) else json.dumps(text))
    out = tmp_path / "scored.parquet"
    run = cli("apply", path, files / "new.csv", "--out", out)
    assert not out.exists()  # nothing written, whatever the refusal
    return run


def _with(data, method_params):
    changed = json.loads(json.dumps(data))
    changed["params"].update(method_params)
    return changed


def test_maps_with_non_finite_numbers_are_refused(cli, files, maps, tmp_path):
    platt = json.dumps(maps["platt"])
    intercept = maps["platt"]["params"]["intercept"]
    nan = platt.replace(json.dumps(intercept), "NaN", 1)
    _refused(_apply(cli, files, tmp_path, nan), "map", "NaN", "finite")
    infinite = json.dumps(_with(maps["platt"], {"slope": 1.0})).replace('"slope": 1.0',
                                                                        '"slope": Infinity')
    _refused(_apply(cli, files, tmp_path, infinite), "map", "Infinity")


def test_isotonic_knots_unsorted_outside_or_unequal_are_refused(cli, files, maps, tmp_path):
    iso = maps["isotonic"]
    x, y = iso["params"]["x"], iso["params"]["y"]
    cases = {
        "increase": {"x": x[::-1]},
        "in [0, 1]": {"x": [*x[:-1], 3.5]},
        "not a number in [0, 1]": {"y": [*y[:-1], -2.0]},
        "must be equal": {"y": y[:-1]},
    }
    for words, change in cases.items():
        _refused(_apply(cli, files, tmp_path, _with(iso, change)), "params", words)


def test_maps_of_the_wrong_types_are_refused(cli, files, maps, tmp_path):
    _refused(_apply(cli, files, tmp_path, _with(maps["platt"], {"intercept": "0.3"})),
             "params.intercept", "must be a number")
    _refused(_apply(cli, files, tmp_path, _with(maps["beta"], {"a": None})),
             "params.a", "must be a number")
    broken = [{"description": "age > 30", "shape": "offset", "a": 1.0, "b": [1],
               "p_adjusted": 0.01}]
    _refused(_apply(cli, files, tmp_path, _with(maps["findings"], {"terms": broken})),
             "terms[0].b", "must be a number")
    broken = [{"description": "age > 30", "shape": "wiggle", "a": 1.0, "b": 0.1,
               "p_adjusted": 0.01}]
    _refused(_apply(cli, files, tmp_path, _with(maps["findings"], {"terms": broken})),
             "terms[0].shape", "offset, slope or additive")
    _refused(_apply(cli, files, tmp_path, [1, 2]), "not a JSON object")


def test_a_broken_boosted_map_is_refused(cli, files, maps, tmp_path):
    boost = maps["boost"]
    rounds = [{"alpha": 1.0, "model": "tree\nnot a model\n"}]
    _refused(_apply(cli, files, tmp_path, _with(boost, {"rounds": rounds})), "LightGBM")


def test_a_deep_or_huge_or_special_map_is_refused_before_parsing(cli, files, maps, tmp_path):
    _refused(_apply(cli, files, tmp_path, "[" * 100_000 + "]" * 100_000), "nests", "100,000")
    terms = [{"description": "age > 30", "shape": "offset", "a": 1.0, "b": 0.1,
              "p_adjusted": 0.01}] * 100_000
    _refused(_apply(cli, files, tmp_path, _with(maps["findings"], {"terms": terms})),
             "100,000 terms", "at most")
    from mcviz.settings import MAP_MAX_BYTES

    huge = tmp_path / "huge.json"
    with huge.open("wb") as stream:  # sparse: its size is read, never its bytes
        stream.truncate(MAP_MAX_BYTES + 1)
    _refused(cli("apply", huge, files / "new.csv", "--out", tmp_path / "x.csv"),
             "refused before it is read")
    fifo = tmp_path / "map.fifo"
    os.mkfifo(fifo)  # opening it would block forever: refused from its type
    _refused(cli("apply", fifo, files / "new.csv", "--out", tmp_path / "x.csv"),
             "not a regular file")
    _refused(cli("apply", "/dev/zero", files / "new.csv", "--out", tmp_path / "x.csv"),
             "not a regular file")


def test_scores_outside_zero_one_are_never_written():
    from mcviz.cli.apply import checked_scores
    from mcviz.errors import ValidationError

    values = np.array([0.2, np.nan, 1.0, 0.0, np.inf, -0.1])
    with pytest.raises(ValidationError, match=r"3 of 6 rows .* \(rows 1, 4, 5\)"):
        checked_scores(values, np.arange(6), "m.json")
    assert checked_scores(values[[0, 2, 3]], np.arange(3), "m.json").tolist() == [0.2, 1.0, 0.0]


# ------------------------------------------------------------------------------------------
# The command line (item 8)

def test_a_bad_flag_prints_the_subcommands_usage(capsys, files):
    from mcviz.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["metrics", str(files / "pred.parquet"), "--bogus", "1"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: mcviz metrics"), err
    assert "unrecognized arguments: --bogus 1" in err


def test_messages_name_flags_not_python_parameters(cli, files, adult_demo_path):
    line = _refused(cli("compare", adult_demo_path, "--score", "score_gbm", "--score-b",
                        "score_logistic", "--findings", "50"), "--findings")
    assert "n_findings" not in line
    line = _refused(cli("monitor", files / "pred.parquet", "--score", "score", "--label",
                        "label"), "no time column", "--time")
    assert "time=" not in line


def test_score_columns_with_binary_labels_are_alternative_scores(cli, adult_demo_path):
    run = cli("metrics", adult_demo_path, "--json")
    assert run.status == 0, run.err
    assert run.json["columns"]["score"] == "score_gbm"
    assert run.json["columns"]["probabilities"] == []
    assert run.json["n"] == 48_842  # no row dropped
    note = next(line for line in run.err.splitlines() if "alternative scores" in line)
    assert "'score_logistic'" in note
    assert "'score_uncalibrated'" in note


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_segment_levels_are_counted_before_the_file_is_read(cli, tmp_path, suffix):
    # 229 levels, and a score column holding text: had the file been read first, the message
    # would be about the score
    n = 2_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "date": pd.date_range("2024-01-01", periods=n, freq="h").astype(str),
        "score": ["high"] + list(rng.random(n - 1).round(3).astype(str)),
        "label": rng.integers(0, 2, n),
        "region": [f"r{k % 229}" for k in range(n)],
    })
    path = tmp_path / f"segments{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    _refused(cli("monitor", path, "--score", "score", "--label", "label", "--time", "date",
                 "--segments", "region"), "--segments", "229", "before the file was read")


# ------------------------------------------------------------------------------------------
# Dates (item 4)

@pytest.fixture(scope="module")
def dated(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dates")
    rng = np.random.default_rng(0)
    n = 6_000
    frame = pd.DataFrame({
        "date": (pd.Timestamp("2013-01-01")
                 + pd.to_timedelta(rng.integers(0, 365, n), unit="D")).astype(str),
        "score": rng.random(n).round(4), "label": rng.integers(0, 2, n)})
    frame.to_csv(directory / "dates.csv", index=False)
    far = frame.copy()
    far.loc[5, "date"] = "9999-12-31"
    far.to_csv(directory / "far.csv", index=False)
    return directory


def _monitor(cli, path, *options):
    return cli("monitor", path, "--score", "score", "--label", "label", "--time", "date",
               "--draws", "99", "--json", *options)


@pytest.mark.parametrize("reference", ["2999-01-01", "9999-12-31", "1200-01-01"])
def test_a_reference_beyond_pandas_range_is_a_message(cli, dated, reference):
    _refused(_monitor(cli, dated / "dates.csv", "--period", "month", "--reference", reference),
             reference, "outside the dates", "2262-04-11")


def test_times_beyond_pandas_range_are_named_not_wrapped(cli, dated):
    # pandas 3 parses 9999-12-31 (microseconds); a cast to nanoseconds wraps it to 1816
    _refused(_monitor(cli, dated / "far.csv", "--period", "week"), "column 'date'",
             "1 of 6,000 rows", "outside the dates", "(rows 5)")


def test_a_reference_date_counts_through_its_last_moment(cli, dated):
    run = _monitor(cli, dated / "dates.csv", "--period", "month", "--reference", "2013-01-31")
    assert run.status == 0, run.err  # was: "comes before the first period (2013-01-01)"
    assert run.json["reference_end"] == "2013-02-01"
    assert run.json["periods"][0] == "2013-01-01"


def test_a_period_cut_by_the_reference_is_never_dropped_silently(cli, dated):
    run = _monitor(cli, dated / "dates.csv", "--period", "week", "--reference", "2013-01-31")
    assert run.status == 0, run.err
    assert run.json["reference_end"] == "2013-01-28"  # the week of Monday 28 January: monitored
    note = next(line for line in run.err.splitlines() if "cut in two" in line)
    assert "2013-01-28" in note
    assert "monitored" in note


def test_the_reference_rule_is_stated_in_the_help_and_the_message(cli, dated, capsys):
    from mcviz.cli import main

    with pytest.raises(SystemExit):
        main(["monitor", "--help"])
    assert "counts through its last" in " ".join(capsys.readouterr().out.split())
    line = _refused(_monitor(cli, dated / "dates.csv", "--period", "month", "--reference",
                             "2012-06-30"), "whole period", "ends by the reference end")
    assert "ends 2013-02-01" in line


# ------------------------------------------------------------------------------------------
# Optional parts degrade in one line (item 6)

@pytest.fixture
def without(monkeypatch):
    """Make the named modules fail to import, as on an install without the extra."""
    import sys

    def hide(*names):
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
            for loaded in [m for m in sys.modules if m.startswith(f"{name}.")]:
                monkeypatch.delitem(sys.modules, loaded)
    return hide


@pytest.mark.parametrize(("argv", "module", "words"), [
    (["screen", "{pred}", "--engine", "duckdb", "--out", "{out}.parquet"], "duckdb",
     ("--engine duckdb", "pip install 'mcviz[duckdb]'")),
    (["screen", "{pred}", "--engine", "spark", "--out", "{out}.parquet"], "pyspark",
     ("--engine spark", "mcviz[spark]")),
    (["report", "{pred}", "--covariates", "region", "--deck", "{out}.pptx"], "pptx",
     ("--deck", "mcviz[export]")),
    (["fix", "{pred}", "--method", "boost"], "lightgbm", ("--method boost", "mcviz[boost]")),
])
def test_a_missing_extra_is_one_line_before_the_work(cli, files, tmp_path, without, argv,
                                                     module, words):
    without(module)
    argv = [a.format(pred=files / "pred.parquet", out=tmp_path / "out") for a in argv]
    _refused(cli(*argv, "--score", "score", "--label", "label"), *words)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("hidden", [True, False])
def test_screen_on_a_csv_is_one_line_with_or_without_duckdb(cli, files, tmp_path, without,
                                                            hidden):
    """``mcviz screen FILE.csv`` ended in a traceback (pyarrow's "Parquet magic bytes not found"
    without duckdb, DuckDB's read_parquet error with it): every engine reads Parquet only."""
    if hidden:
        without("duckdb")
    csv = tmp_path / "pred.csv"
    pd.read_parquet(files / "pred.parquet").to_csv(csv, index=False)
    _refused(cli("screen", csv, "--score", "score", "--label", "label", "--out",
                 tmp_path / "out.parquet"), "reads Parquet files", "pred.csv")
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("argv", [
    ["metrics"], ["search"], ["report"], ["decide", "--no-fix"], ["compare", "--score-b", "x"],
    ["monitor", "--time", "x"]], ids=lambda argv: argv[0])
def test_every_engine_command_on_a_csv_is_one_line_naming_it(cli, files, tmp_path, argv):
    """``mcviz metrics|search|report|decide|compare|monitor FILE.csv --engine duckdb`` ended in
    DuckDB's traceback ("No magic bytes found at end of file"); ``screen`` alone said so."""
    pytest.importorskip("duckdb")
    csv = tmp_path / "pred.csv"
    pd.read_parquet(files / "pred.parquet").to_csv(csv, index=False)
    _refused(cli(argv[0], csv, *argv[1:], "--engine", "duckdb", "--score", "score", "--label",
                 "label"), f"mcviz {argv[0]} --engine duckdb reads Parquet files", "pred.csv",
             "without --engine")


def test_screen_engine_duckdb_on_a_csv_without_duckdb_names_what_to_install(
        cli, files, tmp_path, without):
    without("duckdb")
    csv = tmp_path / "pred.csv"
    pd.read_parquet(files / "pred.parquet").to_csv(csv, index=False)
    _refused(cli("screen", csv, "--engine", "duckdb", "--score", "score", "--label", "label",
                 "--out", tmp_path / "out.parquet"),
             "--engine duckdb", "pip install 'mcviz[duckdb]'")


def test_a_huge_bootstrap_is_refused_by_its_estimate_before_the_replicates(cli, files,
                                                                           monkeypatch):
    """``--bootstrap`` is in the estimate: 100,000 replicates over 100 thresholds (cells grow as
    thresholds squared) are refused up front, naming --bootstrap; on the previous main, 200,000
    rows ran 199 s to a 3.7 GB peak (``/usr/bin/time``; 4.6 GB estimated here)."""
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", "500MB")
    thresholds = ",".join(f"{k / 101:.4f}" for k in range(1, 101))
    line = _refused(cli("decide", files / "pred.parquet", "--score", "score", "--label", "label",
                        "--bootstrap", "100000", "--thresholds", thresholds),
                    "refused before starting", "bootstrap", "--bootstrap")
    assert "replicates" in line
