r"""Calibration over time: per-period views of segments and alarms with family-wise control.

================================  ===============================================================
what                              where
================================  ===============================================================
time role, periods, reference     :mod:`mcviz.monitor.periods`
segments, membership patterns     :mod:`mcviz.monitor.segments`
the alarm rule (derivation)       :mod:`mcviz.monitor.alarm`
per-period views, alarms          :mod:`mcviz.monitor.monitor` (:func:`monitor_calibration`)
================================  ===============================================================
"""

from mcviz.monitor.monitor import MonitorResult, MonitorSettings, SeriesMonitor, monitor_calibration
from mcviz.monitor.periods import CALENDAR_PERIODS, Periods, infer_time_column, make_periods

__all__ = [
    "CALENDAR_PERIODS",
    "MonitorResult",
    "MonitorSettings",
    "Periods",
    "SeriesMonitor",
    "infer_time_column",
    "make_periods",
    "monitor_calibration",
]
