"""Which analyses accept which responses: one rule that the command line and the dashboard share.

The Local Calibration Score (Machado, Charpentier et al., paper 004) is defined for a binary
classifier: its local regression estimates P(D = 1 | score) for a 0/1 outcome D (paper 004,
"Calibration of a Binary Classifier (Schervish, 1989)"). Real-valued responses (paper 000
Appendix C) have cumulative statistics but no LCS, so it is refused for them everywhere.
"""

from __future__ import annotations

from mcviz.errors import ValidationError

__all__ = ["LCS_RESPONSE_KINDS", "check_lcs_response", "lcs_applies", "lcs_refusal"]

#: Response kinds (``Predictions.response_kind``) the Local Calibration Score is defined for.
LCS_RESPONSE_KINDS: frozenset[str] = frozenset({"binary"})


def lcs_applies(response_kind: str) -> bool:
    """Return whether the Local Calibration Score is defined for this kind of response.

    Examples
    --------
    >>> lcs_applies("binary"), lcs_applies("continuous")
    (True, False)
    """
    return response_kind in LCS_RESPONSE_KINDS


def check_lcs_response(response_kind: str) -> None:
    """Raise ValidationError unless the Local Calibration Score is defined for the response.

    Raises
    ------
    ValidationError
        For real-valued ("continuous") responses: the LCS of paper 004 needs 0/1 outcomes.
    """
    if not lcs_applies(response_kind):
        raise ValidationError(lcs_refusal(response_kind))


def lcs_refusal(response_kind: str) -> str:
    """Say why the Local Calibration Score is not computed for these responses.

    Examples
    --------
    >>> lcs_refusal("continuous")[:46]
    'the Local Calibration Score needs 0/1 response'
    """
    return (f"the Local Calibration Score needs 0/1 responses (paper 004 defines it for binary "
            f"classifiers); these are {response_kind!r} (real-valued). The cumulative "
            "statistics (mcviz metrics) accept real-valued responses.")
