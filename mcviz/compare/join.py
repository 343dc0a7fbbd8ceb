"""Join a challenger's scores (a second file) to the labelled rows on an id column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcviz.errors import ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["JoinReport", "join_challenger"]


@dataclass(frozen=True, slots=True, eq=False)
class JoinReport:
    """How the challenger's file was joined.

    Attributes
    ----------
    id_column : str
    score_column : str
        B's score column in the joined table (renamed ``<name>_b`` when the first file has a
        column of that name).
    n_a, n_b : int
        Rows of each file.
    matched : int
        Rows of the first file with an id in the second (the rows compared).
    unmatched_a, unmatched_b : int
        Rows of each file whose id is not in the other (left out, counted here).
    """

    id_column: str
    score_column: str
    n_a: int
    n_b: int
    matched: int
    unmatched_a: int
    unmatched_b: int

    def sentence(self) -> str:
        """Return the join in words."""
        return (f"Joined on {self.id_column!r}: {self.matched:,} rows matched; "
                f"{self.unmatched_a:,} of {self.n_a:,} rows of the first file and "
                f"{self.unmatched_b:,} of {self.n_b:,} of the challenger's have no partner and "
                "are left out.")

    def as_json(self) -> dict:
        """Return the ``"join"`` object of ``mcviz compare --json``."""
        return {"id": self.id_column, "score_b": self.score_column, "n_a": self.n_a,
                "n_b": self.n_b, "matched": self.matched, "unmatched_a": self.unmatched_a,
                "unmatched_b": self.unmatched_b}


def _require(frame: pd.DataFrame, column: str, flag: str, which: str) -> None:
    if column not in frame.columns:
        listed = ", ".join(map(repr, list(frame.columns)[:20]))
        raise ValidationError(f"{flag} {column!r}: no such column in the {which} "
                              f"(columns: {listed}).", column=column)


def _unique(frame: pd.DataFrame, column: str, which: str) -> None:
    ids = frame[column]
    missing = int(ids.isna().sum())
    if missing:
        raise ValidationError(f"--id {column!r}: {missing:,} rows of the {which} have no id.",
                              column=column)
    repeated = ids.duplicated(keep=False)
    if repeated.any():
        first = ", ".join(map(str, ids[repeated].drop_duplicates().head(3).tolist()))
        raise ValidationError(f"--id {column!r}: {int(repeated.sum()):,} rows of the {which} "
                              f"share an id with another row (e.g. {first}); each id must name "
                              "one row.", column=column)


def join_challenger(frame_a: pd.DataFrame, frame_b: pd.DataFrame, *, id_column: str,
                    score_b: str) -> tuple[pd.DataFrame, JoinReport]:
    """Return ``frame_a``'s rows that have an id in ``frame_b``, with B's score column added.

    Parameters
    ----------
    frame_a : DataFrame
        The labelled rows with model A's scores (and covariates).
    frame_b : DataFrame
        The challenger's file: the id and B's scores.
    id_column : str
        The id column, in both files; each id names one row in each.
    score_b : str
        B's score column in ``frame_b``.

    Returns
    -------
    joined : DataFrame
        ``frame_a``'s matched rows in their order, plus B's scores (column
        ``report.score_column``).
    report : JoinReport

    Raises
    ------
    ValidationError
        A missing column, missing or repeated ids, or no id in common.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"id": [1, 2, 3], "score": [0.1, 0.5, 0.9], "y": [0, 1, 1]})
    >>> b = pd.DataFrame({"id": [3, 1, 7], "score": [0.8, 0.2, 0.4]})
    >>> joined, report = join_challenger(a, b, id_column="id", score_b="score")
    >>> joined["score_b"].tolist(), report.unmatched_a, report.unmatched_b
    ([0.2, 0.8], 1, 1)
    """
    _require(frame_a, id_column, "--id", "first file")
    _require(frame_b, id_column, "--id", "challenger's file")
    _require(frame_b, score_b, "--score-b", "challenger's file")
    _unique(frame_a, id_column, "first file")
    _unique(frame_b, id_column, "challenger's file")
    name = score_b if score_b not in frame_a.columns else f"{score_b}_b"
    while name in frame_a.columns:
        name += "_b"
    scores = frame_b[[id_column, score_b]].rename(columns={score_b: name})
    joined = frame_a.merge(scores, on=id_column, how="inner", sort=False, validate="1:1")
    if joined.empty:
        raise ValidationError(f"--id {id_column!r}: no id of the first file is in the "
                              f"challenger's file ({len(frame_a):,} and {len(frame_b):,} rows; "
                              "nothing to compare).", column=id_column)
    matched = len(joined)
    report = JoinReport(id_column=id_column, score_column=name, n_a=len(frame_a),
                        n_b=len(frame_b), matched=matched, unmatched_a=len(frame_a) - matched,
                        unmatched_b=len(frame_b) - matched)
    return joined.reset_index(drop=True), report
