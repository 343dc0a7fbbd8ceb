"""The public API: every name in mcviz.__all__ resolves, and unknown names fail clearly."""

import pytest

import mcviz


def test_every_public_name_resolves():
    for name in mcviz.__all__:
        assert getattr(mcviz, name) is not None, name
    assert set(mcviz.__all__) <= set(dir(mcviz))


def test_one_call_from_the_top_level():
    pred = mcviz.Predictions.from_arrays([0.1, 0.4, 0.6, 0.9], [0, 0, 1, 1])
    # No covariates: M is D_0. C_k = (-0.1, -0.5, -0.1, 0) / 4 with C_0 = 0, so D = 0.125.
    assert mcviz.multicalibration(pred).metric == pytest.approx(0.125, rel=1e-12)


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        _ = mcviz.nonexistent


def test_the_library_does_not_import_streamlit():
    # Streamlit is the dashboard's extra (mcviz[dashboard]); the library and the CLI never need it.
    import subprocess
    import sys

    code = ("import sys, mcviz; mcviz.multicalibration; import mcviz.cli, mcviz.present.report, "
            "mcviz.present.figures, mcviz.engines, mcviz.cli.screen; "
            "assert 'streamlit' not in sys.modules, 'streamlit was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
