"""Errors a user can cause, as one small hierarchy.

::

    LatentSynthError            base; ``exit_code`` tells the CLI what to return
    ├── InputError              bad file, column, row or option (exit 2)
    ├── PrivacyRefused          no w meets the AUC limit and no override (exit 3)
    └── Cancelled               the user pressed Cancel / Ctrl-C (exit 130)

Every message is one line that names the file, column or row and says what to do.
Model: httpx ``_exceptions.py``.
"""

from __future__ import annotations


class LatentSynthError(Exception):
    """Base of all errors a user can cause; never shown with a traceback."""

    exit_code: int = 1


class InputError(LatentSynthError):
    """Bad input file, column, row or option. Example: ``InputError("data.csv: column 'event'
    ...")``."""

    exit_code = 2


class TooFewRows(InputError):
    """The file was read, but it holds too few (complete) rows to model and audit: the wizard says
    "too small", not "could not be read" (issue 33)."""


class PrivacyRefused(LatentSynthError):
    """No perturbation weight met the membership-AUC limit and no override was given."""

    exit_code = 3


class Cancelled(LatentSynthError):
    """Work stopped on the user's request between two steps."""

    exit_code = 130

    def __init__(self, message: str = "cancelled by the user; nothing was written") -> None:
        super().__init__(message)
