"""How tight the stated bound of the curves drawn from fine bins is (mcviz.stats.variable_bound).

For each data shape of ``tests/engines/test_variable_bound_engines.py`` (20,000 weighted rows,
DuckDB's fine bins), prints over the supported grid points the largest and median bound of the
error, predicted-error and gap curves, the largest distance of the original rows' curve from
the drawn one, and their largest ratio; then VECE's and D/sigma's distance against their bounds.

    PYTHONPATH=. python benchmarks/bench_variable_bound.py
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "engines"))
import test_variable_bound_engines as shapes  # noqa: E402

CASES = (("smooth", 2000, None), ("step", 2000, 0.3), ("ties", 600, None),
         ("skewed", 2000, None), ("adversarial", 200, 0.5))


def main() -> None:
    """Print one line per data shape."""
    for shape, limit, span in CASES:
        frame = (shapes._adversarial(20_000, 200) if shape == "adversarial"
                 else shapes._shaped(shape, 20_000))
        drawn = shapes._binned(Path(tempfile.mkdtemp()), frame, limit, span=span)
        rows = shapes._rows_at(frame, drawn)
        ratios = shapes._ratios(drawn, rows)
        within, supported = drawn.within, drawn.within.supported
        line = [f"{shape}: {within.bins} bins, span {drawn.span}"]
        for name in ("error", "predicted", "gap"):
            bound = getattr(within, name)[supported]
            distance = np.abs(rows[name] - getattr(drawn, name).fit)[supported]
            line.append(f"{name} bound max {bound.max():.2e} median {np.median(bound):.2e}, "
                        f"measured max {distance.max():.2e}, ratio max "
                        f"{ratios[name][supported].max():.3f}")
        line.append(f"VECE {abs(drawn.vece - rows['whole'].vece):.1e} of {within.vece:.1e}, "
                    f"D/sigma {rows['whole'].kuiper_z - drawn.kuiper_z:.3f} of "
                    f"{within.kuiper_z:.2f}")
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()
