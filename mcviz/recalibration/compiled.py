r"""A saved fix map compiled to SQL: ``score_recalibrated`` computed inside DuckDB or Spark.

``mcviz apply --engine duckdb|spark`` scores a table that never leaves the engine: the map
(read and checked by :func:`mcviz.io.read_map`) becomes one ``SELECT`` that keeps every column
of the files and adds ``score_recalibrated``, row by row, with the same arithmetic as the
in-memory :meth:`~mcviz.recalibration.Recalibrator.transform`:

* the logit :math:`\operatorname{logit} s = \ln c - \ln(1 - c)`, :math:`c` the score clipped to
  :math:`[10^{-12}, 1 - 10^{-12}]` (:func:`~mcviz.recalibration._logistic.logit`; SQL has no
  ``log1p``: :math:`\ln(1 - c)` differs from ``log1p(-c)`` by at most one rounding of
  :math:`1 - c`, below :math:`2 \cdot 10^{-16}` in absolute terms);
* :math:`\sigma(x)` as :math:`1/(1 + e^{-x})` for :math:`x \ge 0` and :math:`e^x/(1 + e^x)`
  below (no overflow);
* **platt** :math:`\sigma(c + a \operatorname{logit} s)`; **beta**
  :math:`\sigma(c + a \ln s - b \ln(1 - s))`, :math:`s` clipped as above;
* **isotonic**: ``np.interp`` over the knots, as a balanced tree of ``CASE`` tests
  (:math:`\lceil \log_2 K \rceil` comparisons per row for :math:`K` knots) and the same
  slope :math:`(y_{j+1} - y_j)/(x_{j+1} - x_j)`, computed once here, times :math:`s - x_j`,
  plus :math:`y_j`; below the first knot :math:`y_1`, from the last on :math:`y_K`;
* **findings**: the Platt base, then each term on the rows of its finding in order (the
  description parsed by :func:`~mcviz.subpopulations.parse_filter`, translated by
  :func:`~mcviz.subpopulations.sql.predicate_sql`, which follows the missing-value rule of the
  in-memory masks), one nested ``SELECT`` per term so that no expression is repeated;
* **boost**: the Platt start, then per round :math:`f \leftarrow \alpha (f + \sum_t h_t(x, f))`,
  each LightGBM tree (``Booster.dump_model``) a nested ``CASE`` with LightGBM's decision rules:
  a numerical split sends a missing value (NULL or NaN) to its default side when its
  ``missing_type`` is ``NaN``, treats it as 0 when ``None``, and sends 0 and missing values to
  the default side when ``Zero``; a categorical split sends the listed category codes left
  and everything else (missing included) right. Covariates are coded as in
  :func:`~mcviz.recalibration._boost.encode_covariates`: nominal ones by their category's
  position in the map's list (text compared as text; anything else missing), ordinal ones
  as numbers (timestamps as nanoseconds).

Every number of the map is a bound parameter and every column a quoted identifier; nothing a
user wrote is spliced into the statement (a finding's description is parsed, and its values
bound). ``tests/engines/test_apply_engines.py`` checks every method's map against the in-memory
``apply`` to 1e-9 on DuckDB and Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mcviz.engines.sql import Query, predicate_sql
from mcviz.errors import ValidationError
from mcviz.recalibration._findings import ADDITIVE_CLIP
from mcviz.recalibration._logistic import EPSILON

__all__ = ["OUT_COLUMN", "check_columns", "compile_map", "score_checks_sql"]

OUT_COLUMN = "score_recalibrated"
_PREFIX = "__mcviz_"
ZERO_THRESHOLD = 1e-35
"""LightGBM's ``kZeroThreshold``: a value this close to 0 is zero for ``missing_type`` Zero."""


def _expit(x: str) -> str:
    return (f"(CASE WHEN {x} >= 0.0 THEN 1.0 / (1.0 + EXP(-({x}))) "
            f"ELSE EXP({x}) / (1.0 + EXP({x})) END)")


def _clipped(x: str, q: Query, low: float, high: float) -> str:
    return f"LEAST(GREATEST({x}, {q.bind(low)}), {q.bind(high)})"


class _Layers:
    """Nested SELECTs, each adding one derived column to all the columns before it."""

    def __init__(self, source: str) -> None:
        self.text = f"SELECT * FROM {source}"
        self.count = 0

    def add(self, expression: str) -> str:
        name = f"{_PREFIX}v{self.count}"
        self.text = f"SELECT *, {expression} AS {name} FROM ({self.text}) AS {_PREFIX}t{self.count}"
        self.count += 1
        return name


def check_columns(data: Mapping, kinds: Mapping[str, str], score: str) -> None:
    """Refuse a table without the map's columns, or with text where the map expects numbers."""
    if score not in kinds:
        listed = ", ".join(list(kinds)[:20])
        raise ValidationError(f"column {score!r} (the score the map was fitted on) is not in the "
                              f"file; columns: {listed}.", column=score)
    if kinds[score] not in ("float", "int"):
        raise ValidationError(f"column {score!r} holds {kinds[score]} values, not scores.",
                              column=score)
    covariates = data.get("covariates", {})
    missing = [name for name in covariates if name not in kinds]
    if missing:
        raise ValidationError(f"the recalibration map needs column(s) "
                              f"{', '.join(map(repr, missing))}, missing in the file.",
                              column=missing[0])
    for name, kind in covariates.items():
        if kind == "ordinal" and kinds[name] not in ("float", "int", "bool", "timestamp"):
            raise ValidationError(f"column {name!r} holds {kinds[name]} values; the map treats "
                                  "it as a number.", column=name)
    if OUT_COLUMN in kinds:
        raise ValidationError(f"column {OUT_COLUMN!r} is already in the file; rename it first.",
                              column=OUT_COLUMN)


def score_checks_sql(score: str, kinds: Mapping[str, str], q: Query, source: str) -> str:
    """One row: the rows, those whose score is missing, NaN or outside [0, 1], the mean score."""
    ident = q.dialect.ident(score)
    value = f"CAST({ident} AS DOUBLE)"
    missing = f"{ident} IS NULL" + (f" OR isnan({ident})" if kinds[score] == "float" else "")
    return (f"SELECT COUNT(*) AS n, SUM(CASE WHEN {missing} THEN 1 ELSE 0 END) AS missing, "
            f"SUM(CASE WHEN {value} < 0.0 OR {value} > 1.0 THEN 1 ELSE 0 END) AS outside, "
            f"AVG({value}) AS mean FROM {source}")


def compile_map(data: Mapping, *, score: str, kinds: Mapping[str, str], q: Query,
                source: str) -> str:
    """Return the ``SELECT`` of every column of ``source`` plus ``score_recalibrated``.

    ``data`` is a map as :func:`mcviz.io.read_map` returns it; ``kinds`` the table's column
    kinds in column order (:class:`mcviz.engines.tables.Table`).
    """
    method = data["method"]
    builder = _BUILDERS.get(method)
    if builder is None:
        raise ValidationError(f"a {method!r} map cannot be compiled to SQL (the engines apply "
                              f"{', '.join(sorted(_BUILDERS))} maps); apply it with --engine "
                              "numpy.")
    ident = q.dialect.ident
    layers = _Layers(source)
    s = layers.add(f"CAST({ident(score)} AS DOUBLE)")
    p = builder(data, layers, s, q, kinds)
    columns = ", ".join(ident(name) for name in kinds)
    return f"SELECT {columns}, {p} AS {OUT_COLUMN} FROM ({layers.text}) AS {_PREFIX}out"


def _logit(layers: _Layers, s: str, q: Query) -> str:
    c = layers.add(_clipped(s, q, EPSILON, 1.0 - EPSILON))
    return layers.add(f"LN({c}) - LN(1.0 - {c})")


def _platt_logit(params: Mapping, layers: _Layers, s: str, q: Query) -> str:
    z = _logit(layers, s, q)
    return layers.add(f"{q.bind(float(params['intercept']))} + "
                      f"{q.bind(float(params['slope']))} * {z}")


def _platt(data, layers, s, q, kinds) -> str:
    return _expit(_platt_logit(data["params"], layers, s, q))


def _beta(data, layers, s, q, kinds) -> str:
    params = data["params"]
    c = layers.add(_clipped(s, q, EPSILON, 1.0 - EPSILON))
    eta = layers.add(f"{q.bind(float(params['c']))} + {q.bind(float(params['a']))} * LN({c}) "
                     f"- {q.bind(float(params['b']))} * LN(1.0 - {c})")
    return _expit(eta)


def _isotonic(data, layers, s, q, kinds) -> str:
    x = [float(v) for v in data["params"]["x"]]
    y = [float(v) for v in data["params"]["y"]]

    def piece(j: int) -> str:  # s in [x_j, x_{j+1}): np.interp's slope * (s - x_j) + y_j
        slope = (y[j + 1] - y[j]) / (x[j + 1] - x[j])
        return f"({q.bind(slope)} * ({s} - {q.bind(x[j])}) + {q.bind(y[j])})"

    def tree(low: int, high: int) -> str:  # pieces low..high-1
        if high - low == 1:
            return piece(low)
        middle = (low + high) // 2
        return f"(CASE WHEN {s} < {q.bind(x[middle])} THEN {tree(low, middle)} " \
               f"ELSE {tree(middle, high)} END)"

    inner = tree(0, len(x) - 1) if len(x) > 1 else q.bind(y[0])
    return (f"(CASE WHEN {s} < {q.bind(x[0])} THEN {q.bind(y[0])} "
            f"WHEN {s} >= {q.bind(x[-1])} THEN {q.bind(y[-1])} ELSE {inner} END)")


def _findings(data, layers, s, q, kinds) -> str:
    from mcviz.subpopulations import parse_filter

    params = data["params"]
    parse_kinds = dict(data.get("covariates", {}))
    parse_kinds.setdefault(data.get("score_column") or "", "ordinal")
    eta = _platt_logit(params, layers, s, q)
    for k, term in enumerate(params["terms"]):
        try:
            conditions = parse_filter(term["description"], parse_kinds)
        except ValidationError as error:
            raise ValidationError(f"map: term {k + 1} ({term['description'][:80]!r}): "
                                  f"{error}") from None
        where = predicate_sql(conditions, kinds, q)
        if term["shape"] == "additive":
            p = _clipped(f"{_expit(eta)} + {q.bind(float(term['b']))}", q, ADDITIVE_CLIP,
                         1.0 - ADDITIVE_CLIP)
            c = _clipped(p, q, EPSILON, 1.0 - EPSILON)
            changed = f"LN({c}) - LN(1.0 - {c})"
        else:
            changed = f"{q.bind(float(term['a']))} * {eta} + {q.bind(float(term['b']))}"
        eta = layers.add(f"CASE WHEN {where} THEN {changed} ELSE {eta} END")
    return _expit(eta)


def _feature(item: Mapping, kinds: Mapping[str, str], q: Query) -> str:
    """Return a covariate as LightGBM sees it: a DOUBLE, NULL where missing (NaN included)."""
    ident = q.dialect.ident(item["name"])
    kind = kinds[item["name"]]
    if item["kind"] == "nominal":
        text = f"CAST({ident} AS {q.dialect.string_type})"
        cases = " ".join(f"WHEN {q.bind(str(c))} THEN {float(k)!r}"
                         for k, c in enumerate(item["categories"]))
        return f"(CASE {text} {cases} ELSE NULL END)" if cases else "CAST(NULL AS DOUBLE)"
    if kind == "timestamp":
        nanos = (f"CAST(epoch_ns({ident}) AS DOUBLE)" if q.dialect.name == "duckdb"
                 else f"CAST(unix_micros(CAST({ident} AS TIMESTAMP)) AS DOUBLE) * 1000.0")
        return nanos
    value = f"CAST({ident} AS DOUBLE)"
    if kind == "float":
        return f"(CASE WHEN isnan({value}) THEN NULL ELSE {value} END)"
    return value


def _node(node: Mapping, names: Sequence[str], q: Query) -> str:
    if "leaf_value" in node:
        return q.bind(float(node["leaf_value"]))
    v = names[int(node["split_feature"])]
    left, right = _node(node["left_child"], names, q), _node(node["right_child"], names, q)
    default_left = bool(node.get("default_left", True))
    if node["decision_type"] == "==":
        codes = ", ".join(q.bind(float(c)) for c in str(node["threshold"]).split("||"))
        return f"(CASE WHEN {v} IN ({codes}) THEN {left} ELSE {right} END)"
    if node["decision_type"] != "<=":
        raise ValidationError(f"map: a boosted tree has a split LightGBM calls "
                              f"{str(node['decision_type'])[:10]!r}, which cannot be compiled.")
    threshold = q.bind(float(node["threshold"]))
    side = left if default_left else right
    missing = node.get("missing_type", "None")
    if missing == "NaN":
        return (f"(CASE WHEN {v} IS NULL THEN {side} WHEN {v} <= {threshold} THEN {left} "
                f"ELSE {right} END)")
    if missing == "Zero":
        zero = q.bind(ZERO_THRESHOLD)
        return (f"(CASE WHEN {v} IS NULL OR ({v} >= -{zero} AND {v} <= {zero}) THEN {side} "
                f"WHEN {v} <= {threshold} THEN {left} ELSE {right} END)")
    return f"(CASE WHEN COALESCE({v}, 0.0) <= {threshold} THEN {left} ELSE {right} END)"


def _boost(data, layers, s, q, kinds) -> str:
    params = data["params"]
    f = _platt_logit(params["init"], layers, s, q)
    if not params["rounds"]:
        return _expit(f)
    from mcviz.recalibration._boost import _lightgbm

    lgb = _lightgbm()
    features = [layers.add(_feature(item, kinds, q)) for item in params["features"]]
    for k, item in enumerate(params["rounds"]):
        try:
            trees = lgb.Booster(model_str=item["model"]).dump_model()["tree_info"]
        except lgb.basic.LightGBMError:
            raise ValidationError(f"recalibration map: round {k + 1} of the boosted map cannot "
                                  "be read by LightGBM; fit the map again with mcviz fix "
                                  "--map.") from None
        names = [*features, f]
        raw = " + ".join(_node(t["tree_structure"], names, q) for t in trees) or "0.0"
        f = layers.add(f"{q.bind(float(item['alpha']))} * ({f} + ({raw}))")
    return _expit(f)


_BUILDERS = {"platt": _platt, "beta": _beta, "isotonic": _isotonic, "findings": _findings,
             "boost": _boost}
