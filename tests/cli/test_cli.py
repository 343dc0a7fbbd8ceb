"""The `mcviz metrics` command-line contract."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcviz.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def prediction_file(tmp_path):
    rng = np.random.default_rng(1)
    score = rng.random(400)
    df = pd.DataFrame(
        {"prob": score, "y": (rng.random(400) < score).astype(int), "w": rng.random(400) + 0.5,
         "age": rng.integers(20, 70, 400)}
    )
    path = tmp_path / "pred.csv"
    df.to_csv(path, index=False)
    return path, df


def test_metrics_json_keys_and_values(prediction_file, capsys):
    path, df = prediction_file
    assert main(["metrics", str(path), "--score", "prob", "--label", "y", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert set(output) == {"n", "weight_total", "columns", "calibration", "classical"}
    assert set(output["calibration"]) == {"kuiper", "ks", "sigma", "kuiper_z", "p_value",
                                          "p_value_kind", "warnings", "unweighted_kuiper_z"}
    assert output["calibration"]["warnings"] == []
    assert output["calibration"]["p_value_kind"] == "brownian"
    assert output["n"] == 400
    # "w" is inferred as the weight column by name.
    assert output["weight_total"] == pytest.approx(df["w"].sum())
    calibration = output["calibration"]
    assert calibration["kuiper_z"] == pytest.approx(calibration["kuiper"] / calibration["sigma"])
    assert 0 <= calibration["p_value"] <= 1


def test_metrics_table(prediction_file, capsys):
    path, _ = prediction_file
    assert main(["metrics", str(path)]) == 0
    text = capsys.readouterr().out
    assert "kuiper" in text
    assert "400" in text


def test_bad_input_exits_2_with_message_and_no_traceback(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"score": [0.2, 1.7], "label": [0, 1]}).to_csv(path, index=False)
    completed = subprocess.run(
        [sys.executable, "-m", "mcviz", "metrics", str(path), "--json"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 2
    assert "column 'score': 1 of 2 rows (rows 1) lie outside [0, 1]" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stdout == ""


def test_drop_invalid_flag(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"score": [0.2, 1.7, 0.4], "label": [0, 1, 1]}).to_csv(path, index=False)
    assert main(["metrics", str(path), "--drop-invalid", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["n"] == 2
    # never silently: how many rows went, and why, on stderr (stdout stays one JSON object)
    assert "dropped 1 of 3 rows" in captured.err
    assert "[0, 1]" in captured.err


def test_warnings_and_notices_reach_stderr(tmp_path, capsys):
    path = tmp_path / "one_class.csv"
    pd.DataFrame({"score": [0.2, 0.7, 0.4], "label": [1, 1, 1], "constant": [5, 5, 5]}).to_csv(
        path, index=False
    )
    assert main(["metrics", str(path), "--json"]) == 0
    err = capsys.readouterr().err
    assert "mcviz: warning:" in err
    assert "mcviz: note:" in err
    assert "'constant'" in err


def test_real_valued_responses_use_the_appendix_c_sigma(tmp_path, capsys):
    # Residuals R - S alternate +0.05, -0.05 with unit weights (paper 000 Appendix C eq. (6)):
    # numerator 3 · 0.1² · 2² = 0.12, denominator 4 · 4 · (1 + 1 + 2 · 2) = 96,
    # sigma² = 0.00125; C_k = 0.0125, 0, 0.0125, 0, so D = 0.0125.
    path = tmp_path / "rates.csv"
    pd.DataFrame({"score": [0.1, 0.2, 0.3, 0.4], "rate": [0.15, 0.15, 0.35, 0.35]}).to_csv(
        path, index=False
    )
    arguments = ["metrics", str(path), "--score", "score", "--label", "rate", "--json"]
    assert main(arguments) == 2  # 0/1 labels expected unless told otherwise
    assert "'rate'" in capsys.readouterr().err
    assert main([*arguments, "--response", "continuous"]) == 0
    calibration = json.loads(capsys.readouterr().out)["calibration"]
    assert calibration["sigma"] == pytest.approx(np.sqrt(0.00125), rel=1e-12)
    assert calibration["kuiper"] == pytest.approx(0.0125, rel=1e-12)


def test_metrics_values_match_a_direct_computation(prediction_file, capsys):
    # Independent of mcviz: sort by score, C_k = cumsum(W(R - S)) / sum W with C_0 = 0.
    path, df = prediction_file
    assert main(["metrics", str(path), "--score", "prob", "--label", "y", "--weight", "w",
                 "--json"]) == 0
    calibration = json.loads(capsys.readouterr().out)["calibration"]
    d = df.sort_values("prob")
    s, r, w = d["prob"].to_numpy(), d["y"].to_numpy(float), d["w"].to_numpy()
    path_c = np.concatenate(([0.0], np.cumsum(w * (r - s)) / w.sum()))
    sigma = np.sqrt(np.sum(s * (1 - s) * w**2)) / w.sum()
    assert calibration["kuiper"] == pytest.approx(path_c.max() - path_c.min(), rel=1e-12)
    assert calibration["ks"] == pytest.approx(np.abs(path_c).max(), rel=1e-12)
    assert calibration["sigma"] == pytest.approx(sigma, rel=1e-12)


def test_metrics_directory_and_unreadable_input_exit_2(tmp_path, capsys):
    assert main(["metrics", str(tmp_path)]) == 2
    assert "could not be read" in capsys.readouterr().err


def test_lcs_refuses_real_valued_responses_like_the_dashboard(tmp_path, cli):
    # Paper 004 defines the LCS for binary outcomes; the rule lives in mcviz.rules.
    path = tmp_path / "rates.csv"
    pd.DataFrame({"score": [0.1, 0.2, 0.3, 0.4], "rate": [0.15, 0.15, 0.35, 0.35]}).to_csv(
        path, index=False
    )
    done = cli("lcs", path, "--score", "score", "--label", "rate", "--response", "continuous")
    assert done.status == 2
    assert "Local Calibration Score needs 0/1 responses" in done.err
    assert "Traceback" not in done.err
    assert done.out == ""


def test_lcs_on_binary_responses(prediction_file, cli):
    path, _ = prediction_file
    done = cli("lcs", path, "--score", "prob", "--label", "y", "--json")
    assert done.status == 0, done.err
    assert set(done.json) == {"lcs", "k", "grid_points"}
    assert done.json["lcs"] >= 0


def test_the_lcs_rule():
    from mcviz.errors import ValidationError
    from mcviz.rules import check_lcs_response, lcs_applies

    assert lcs_applies("binary")
    assert not lcs_applies("continuous")
    check_lcs_response("binary")
    with pytest.raises(ValidationError, match="needs 0/1 responses"):
        check_lcs_response("continuous")


def test_every_subcommand_module_follows_the_interface():
    import importlib

    from mcviz.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"mcviz.cli.{name}")
        assert callable(module.register), name
        assert callable(module.run), name
        extra = {"screen": ["--out", "x.parquet"], "deviation": ["--subpopulation", "a"],
                 "apply": ["x.csv", "--out", "x.parquet"], "compare": ["--score-b", "b"]}.get(
                     name, [])
        args = parser.parse_args([name, "file.csv", *extra])
        assert args.run is module.run, name
        assert args.json is False, name  # every subcommand takes --json


def test_no_argparse_outside_the_cli_package():
    root = ROOT / "mcviz"
    users = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if "argparse" in p.read_text() and p.parent.name != "cli"]
    assert users == []


def test_python_dash_m_mcviz_runs_the_cli():
    completed = subprocess.run([sys.executable, "-m", "mcviz", "--help"], capture_output=True,
                               text=True, check=False, cwd=ROOT)
    assert completed.returncode == 0
    assert "metrics" in completed.stdout
    assert "screen" in completed.stdout


def test_csv_and_parquet_give_the_same_metrics(random_frame, write_csv, write_parquet, cli):
    frame = random_frame(500, 5)
    arguments = ("--score", "prob", "--label", "y", "--json")
    from_csv = cli("metrics", write_csv(frame), *arguments)
    from_parquet = cli("metrics", write_parquet(frame), *arguments)
    assert from_csv.status == from_parquet.status == 0
    assert from_csv.json["n"] == from_parquet.json["n"] == 500
    assert from_csv.json["calibration"] == pytest.approx(from_parquet.json["calibration"],
                                                         rel=1e-12)


def test_metrics_of_the_embedded_demo(adult_demo_path, cli):
    from mcviz.stats.cumulative import cumulative_differences
    from mcviz.io import load_demo

    done = cli("metrics", adult_demo_path, "--score", "score_gbm", "--weight", "fnlwgt",
               "--json")
    assert done.status == 0, done.err
    pred = load_demo("adult", weight="fnlwgt")
    assert done.json["n"] == pred.n
    assert done.json["calibration"]["kuiper"] == pytest.approx(
        cumulative_differences(pred).kuiper, rel=1e-12)


@pytest.mark.parametrize(("given", "expected"), [(None, "1 0 system"), ("3", "3 0 system")])
def test_the_command_sets_its_native_defaults_before_numpy_unless_given(given, expected):
    # the command's own process: one OpenBLAS thread, small pages, malloc for Arrow; a value
    # the user set is kept (mcviz.cli.main with no arguments, as the console script calls it)
    code = ("import os, sys\nsys.argv = ['mcviz', '--help']\nimport mcviz.cli\n"
            "assert 'numpy' not in sys.modules\n"
            "try:\n    mcviz.cli.main()\nexcept SystemExit:\n    pass\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['NUMPY_MADVISE_HUGEPAGE'],"
            " os.environ['ARROW_DEFAULT_MEMORY_POOL'], file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if k not in (
        "OPENBLAS_NUM_THREADS", "NUMPY_MADVISE_HUGEPAGE", "ARROW_DEFAULT_MEMORY_POOL")}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, cwd=ROOT, check=True)
    assert completed.stderr.strip().splitlines()[-1] == expected


def test_the_command_alone_keeps_freed_memory_through_glibc():
    # mcviz.cli.main with no arguments (the console script) calls mallopt with the fixed mmap
    # and trim thresholds and one arena; a Python caller's main(argv) leaves the allocator alone
    code = ("import ctypes, sys\ncalls = []\n"
            "def mallopt(*a):\n    calls.append(a)\n    return 1\n"
            "class Libc:\n    pass\nLibc.mallopt = mallopt\n"
            "ctypes.CDLL = lambda name: Libc\nimport mcviz.cli\n"
            "for argv in (['--help'], None):\n    sys.argv = ['mcviz', '--help']\n"
            "    try:\n        mcviz.cli.main(argv)\n    except SystemExit:\n        pass\n"
            "    print(len(calls), file=sys.stderr)\n"
            "print(sorted(calls) == [(-8, 1), (-3, 32 << 20), (-1, 256 << 20)], file=sys.stderr)")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               cwd=ROOT, check=True)
    assert completed.stderr.strip().splitlines()[-3:] == ["0", "3", "True"]
    if sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION"):
        taken = subprocess.run(
            [sys.executable, "-c", "import mcviz.cli as c; print(c._keep_freed_memory())"],
            capture_output=True, text=True, cwd=ROOT, check=True)
        assert taken.stdout.strip() == "True"  # this glibc took the three values


def test_a_finished_metrics_command_leaves_without_the_interpreters_teardown(tmp_path):
    # the command itself (main() with no argv) ends a successful `metrics` run at once: its
    # output and --table file are complete, and no atexit handler runs; a Python caller's
    # main(argv) returns as before (the handler runs at its interpreter's exit)
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"score": rng.random(300), "x": rng.integers(0, 9, 300).astype(float)})
    frame["label"] = (rng.random(300) < frame["score"]).astype(int)
    data = tmp_path / "d.parquet"
    frame.to_parquet(data)
    table = tmp_path / "t.csv"
    argv = ["metrics", str(data), "--score", "score", "--label", "label", "--covariates", "x",
            "--subpopulations", "5", "--table", str(table), "--json"]
    code = ("import atexit, sys\nimport mcviz.cli\n"
            "atexit.register(lambda: print('teardown', file=sys.stderr))\n"
            "if sys.argv[1] == 'library':\n    sys.exit(mcviz.cli.main(sys.argv[2:]))\n"
            "sys.exit(mcviz.cli.main())\n")
    for how in ("command", "library"):
        table.unlink(missing_ok=True)
        args = argv if how == "command" else ["library", *argv]
        completed = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                                   text=True, cwd=ROOT)
        assert completed.returncode == 0, completed.stderr
        assert json.loads(completed.stdout)["multicalibration"]["n_subpopulations"] == 5
        assert len(pd.read_csv(table)) == 6  # the full population and the 5
        assert ("teardown" in completed.stderr) == (how == "library")
