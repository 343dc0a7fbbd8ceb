import json

import numpy as np
import pandas as pd
import pytest


def appendix_f_frame(q: int) -> pd.DataFrame:
    n = q * (q + 1)
    j = np.arange(1, n + 1)
    frame = pd.DataFrame({
        "score": (2 * j + q) / (2 * (q + 1) ** 2),  # eq. (7)
        "label": np.concatenate([[1] * b + [0] * (q + 1 - b) for b in range(1, q + 1)]),
    })
    for k in range(1, (q - 1) // 2 + 1):
        frame[f"block{k}"] = (j > k * (q + 1)) & (j <= n - k * (q + 1))  # eq. (18)
    return frame


@pytest.fixture
def appendix_f_file(tmp_path):
    path = tmp_path / "appendix_f.csv"
    appendix_f_frame(11).to_csv(path, index=False)
    return path


def test_no_multicalibration_options_no_block(cli, appendix_f_file):
    done = cli(*["metrics", str(appendix_f_file), "--json"])
    assert done.status == 0
    assert "multicalibration" not in json.loads(done.out)


def test_groups_only_give_appendix_f_closed_forms(cli, appendix_f_file):
    q = 11
    groups = ",".join(f"block{k}" for k in range(1, 6))
    done = cli(*["metrics", str(appendix_f_file), "--score", "score", "--label", "label",
                 "--groups", groups, "--json"])
    assert done.status == 0, done.err
    block = json.loads(done.out)["multicalibration"]
    metric = (2 * q + 3) / (8 * (q + 1)) * np.sqrt(  # eq. (29)
        (2 * q**5 + 12 * q**4 + 27 * q**3 + 29 * q**2 + 16 * q + 4)
        / (3 * q**6 + 15 * q**5 + 29 * q**4 + 27 * q**3 + 13 * q**2 + 3 * q))
    assert block["metric"] == pytest.approx(metric, rel=1e-12)
    assert block["ablate"] == pytest.approx((2 * q + 3) / (8 * (q + 1)), rel=1e-12)  # eq. (30)
    assert block["n_subpopulations"] == 5  # exactly the full population plus the groups
    assert block["argmax"]["description"] == "block5 == True"
    assert block["argmax"]["size"] == (q - 10) * (q + 1)
    assert set(block) >= {"metric", "metric_z", "ablate", "expectation", "n_subpopulations",
                          "argmax"}
    assert set(block["argmax"]) == {"description", "size", "kuiper", "sigma"}


@pytest.fixture
def random_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    score = rng.random(n)
    frame = pd.DataFrame({
        "score": score,
        "label": (rng.random(n) < score**1.3).astype(int),
        "age": rng.integers(18, 90, n),
        "hours": rng.normal(40, 10, n).round(1),
        "occupation": rng.choice(["Sales", "Tech-support", "Exec-managerial"], n),
        "female": rng.random(n) < 0.4,
    })
    path = tmp_path / "random.csv"
    frame.to_csv(path, index=False)
    return path


def test_generated_subpopulations(cli, random_file):
    argv = ["metrics", str(random_file), "--score", "score", "--label", "label",
            "--covariates", "age,hours,occupation", "--subpopulations", "50", "--min-size", "20",
            "--seed", "3", "--json"]
    done = cli(*argv)
    assert done.status == 0, done.err
    block = json.loads(done.out)["multicalibration"]
    assert block["n_subpopulations"] == 50
    assert block["metric"] >= json.loads(done.out)["calibration"]["kuiper"]
    assert block["argmax"]["size"] >= 20
    assert block["metric_z"] == pytest.approx(
        block["metric"] / json.loads(done.out)["calibration"]["sigma"], rel=1e-12)
    # same seed, same result
    again = cli(*argv)
    assert json.loads(again.out)["multicalibration"] == block


def test_repeats_report_standard_errors(cli, random_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--covariates", "age,hours", "--subpopulations", "30", "--repeats", "3",
                 "--groups", "female", "--json"])
    assert done.status == 0, done.err
    block = json.loads(done.out)["multicalibration"]
    assert block["repeats"] == 3
    assert block["seeds"] == [0, 1, 2]
    assert block["metric_se"] >= 0
    assert block["n_subpopulations"] == 31  # 30 generated plus the group


def test_bad_group_column_exits_2(cli, random_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--groups", "nosuch", "--json"])
    assert done.status == 2
    assert "nosuch" in done.err


def test_bad_min_size_exits_2(cli, random_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--subpopulations", "10", "--min-size", "0", "--json"])
    assert done.status == 2
    assert "--min-size" in done.err


def test_repeats_edge_cases(cli, random_file, appendix_f_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--covariates", "age", "--subpopulations", "5", "--repeats", "1", "--json"])
    assert done.status == 0, done.err
    assert json.loads(done.out)["multicalibration"]["metric_se"] is None  # one seed
    done = cli(*["metrics", str(appendix_f_file), "--groups", "block1", "--repeats", "3",
                 "--json"])
    assert done.status == 0, done.err
    assert json.loads(done.out)["multicalibration"]["metric_se"] == 0.0  # nothing random


def test_table_output(cli, random_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--covariates", "age,occupation", "--subpopulations", "5"])
    assert done.status == 0, done.err
    assert "multicalibration:" in done.out
    assert "argmax:" in done.out


def test_constant_covariate_is_skipped_with_a_notice(cli, tmp_path, random_file):
    frame = pd.read_csv(random_file)
    frame["constant"] = 1  # dropped by the loader
    path = tmp_path / "constant.csv"
    frame.to_csv(path, index=False)
    done = cli(*["metrics", str(path), "--score", "score", "--label", "label",
                 "--covariates", "age,constant", "--subpopulations", "10", "--json"])
    assert done.status == 0, done.err
    block = json.loads(done.out)["multicalibration"]
    assert block["n_subpopulations"] == 10
    assert "not split on: 'constant'" in block["notice"]


def test_groups_only_say_that_generation_options_do_nothing(cli, random_file):
    done = cli(*["metrics", str(random_file), "--score", "score", "--label", "label",
                 "--groups", "occupation", "--subpopulations", "40", "--json"])
    assert done.status == 0, done.err
    block = json.loads(done.out)["multicalibration"]
    assert block["n_subpopulations"] == 3  # one group per level of the categorical column
    assert "--groups without --covariates" in block["notice"]


def test_repeats_mean_and_standard_error_match_single_seeds(cli, random_file):
    base = ["metrics", str(random_file), "--score", "score", "--label", "label",
            "--covariates", "age,hours", "--subpopulations", "20", "--json"]
    metrics = []
    for seed in (4, 5, 6):
        done = cli(*[*base, "--seed", str(seed)])
        assert done.status == 0, done.err
        metrics.append(json.loads(done.out)["multicalibration"]["metric"])
    done = cli(*[*base, "--seed", "4", "--repeats", "3"])
    block = json.loads(done.out)["multicalibration"]
    assert block["seeds"] == [4, 5, 6]
    assert block["metric"] == pytest.approx(np.mean(metrics), rel=1e-12)
    # Bessel: sample variance over r - 1 = 2, standard error over sqrt(r)
    se = np.sqrt(np.sum((np.array(metrics) - np.mean(metrics)) ** 2) / 2 / 3)
    assert block["metric_se"] == pytest.approx(se, rel=1e-9)


def test_subpopulations_over_the_budget_are_refused_before_any_other_measure(
        cli, appendix_f_file, monkeypatch):
    # 20,000 subpopulations x 5 repeats of 132 rows: about 0.04 s estimated, over a 0.01-s
    # budget; refused once the file is read, before the full population's measures
    import mcviz.cli.metrics as metrics

    def not_reached(*args, **kwargs):
        raise AssertionError("computed before the budget check")

    monkeypatch.setattr(metrics, "cumulative_differences", not_reached)
    monkeypatch.setattr(metrics, "classical_measures", not_reached)
    monkeypatch.setenv("MCVIZ_TIME_BUDGET", "0.01")
    done = cli("metrics", appendix_f_file, "--score", "score", "--label", "label",
               "--covariates", "block1,block2", "--subpopulations", "20000", "--repeats", "5",
               "--json")
    assert done.status == 2, done.err
    assert "refused before starting: multi-calibration over 20,000 random subpopulations" \
        in done.err
    assert "Traceback" not in done.err
    assert done.out == ""


@pytest.mark.parametrize(("cores", "budget", "beside"), [(2, "1GB", True), (1, "1GB", False),
                                                 (2, "2.5MB", False)])
def test_classical_measures_run_beside_the_block_only_when_cores_and_budget_hold_both(
        cli, random_file, monkeypatch, cores, budget, beside):
    # beside Algorithm 1 in a thread of their own with two cores and a budget for both at once
    # (3,000 rows, 2,000 subpopulations: ~2.2 MB for the block + ~0.51 MB for the measures,
    # so 2.5 MB holds the block alone); the same numbers wherever they ran
    import threading

    import mcviz.budget as budget_module
    import mcviz.cli.metrics as metrics

    ran_in = []
    measures = metrics.classical_measures

    def recorded(*args, **kwargs):
        ran_in.append(threading.current_thread().name)
        return measures(*args, **kwargs)

    monkeypatch.setattr(metrics, "classical_measures", recorded)
    monkeypatch.setattr(budget_module, "usable_cores", lambda: cores)
    monkeypatch.setenv("MCVIZ_MEMORY_BUDGET", budget)
    base = ["metrics", str(random_file), "--score", "score", "--label", "label", "--json"]
    done = cli(*base, "--covariates", "age,hours,occupation", "--subpopulations", "2000",
               "--min-size", "20")
    assert done.status == 0, done.err
    assert len(ran_in) == 1
    assert ran_in[0].startswith("mcviz-classical") is beside
    assert (ran_in[0] == threading.main_thread().name) is not beside
    plain = cli(*base)  # no block: the measures alone, in this thread
    assert json.loads(done.out)["classical"] == json.loads(plain.out)["classical"]
