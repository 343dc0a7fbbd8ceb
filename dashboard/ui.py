"""What the pages import: the dashboard's Streamlit plumbing, one module per concern.

Pages call ``ui.<name>``; this module only gathers the names from where they live:

- :mod:`dashboard.caching`: the one bounded cache (uploads, predictions, results, figures keyed
  on the upload's SHA-256, the mapping and the parameters) and long work with a progress bar
  and a Stop button (:func:`~dashboard.caching.compute_with_progress`);
- :mod:`dashboard.analysis`: the current analysis (:class:`~dashboard.analysis.Current`), the
  data source, a link's subpopulations checked against the budget, the runs and null draws;
- :mod:`dashboard.navigation`: the session, a shared link restored, every page address
  working on a fresh server (:func:`~dashboard.navigation.setup_page`), the URL kept in sync;
- :mod:`dashboard.widgets`: escaped text, charts, tables and downloads the pages share.

The link codec, the mapping and the subpopulation runs are plain Python in
:mod:`dashboard.links`, :mod:`dashboard.state` and :mod:`dashboard.runs`.
"""

from __future__ import annotations

from dashboard.analysis import (
    Current,
    adopt_upload,
    apply_pending,
    current,
    full_cumulative,
    null_estimate,
    null_of,
    require_covariates,
    require_current,
    set_source,
    subpopulation_runs,
    use_demo,
    void_p_values_notice,
)
from dashboard.caching import (
    CACHE,
    compute,
    compute_with_progress,
    cumulative_fig,
    figure,
    predictions_for,
    read_demo,
    read_upload,
    run_with_progress,
)
from dashboard.navigation import (
    init_session,
    page_path,
    run_page,
    setup_page,
    sync,
    sync_query_params,
)
from dashboard.state import DEMOS, NO_SCORE, ColumnMapping, default_mapping, score_candidates
from dashboard.widgets import (
    bin_counts,
    caption,
    chart_slots,
    csv_download,
    cumulative_metrics,
    presentation,
    selectbox_state,
    show_error,
    show_figure,
    show_info,
    show_success,
    show_table,
    show_text,
    show_warning,
)

__all__ = [
    "CACHE", "DEMOS", "NO_SCORE", "ColumnMapping", "Current", "adopt_upload", "apply_pending",
    "bin_counts", "caption", "chart_slots", "compute", "compute_with_progress", "csv_download",
    "cumulative_fig", "cumulative_metrics", "current", "default_mapping", "figure",
    "full_cumulative", "init_session", "null_estimate", "null_of", "page_path", "predictions_for",
    "presentation", "read_demo", "read_upload", "require_covariates", "require_current",
    "run_page", "run_with_progress", "score_candidates", "selectbox_state", "set_source",
    "setup_page", "show_error", "show_figure", "show_info", "show_success", "show_table", "show_text",
    "show_warning", "subpopulation_runs", "sync", "sync_query_params", "use_demo",
    "void_p_values_notice",
]
