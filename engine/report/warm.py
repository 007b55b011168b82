"""The report's libraries loaded on a thread while the audit runs (issue 31).

A fresh process paid, at the start of its first PDF, about 1.0-1.3 s that do not depend on the
run: matplotlib's figure and Agg modules (0.5 s), reportlab and the TrueType fonts the report
embeds (0.54 s, :func:`engine.report.layout.register_fonts`) and the first figure's font set-up
(0.2-0.3 s). On a large table that time came after the audit, one core working and the other
idle. The pipeline starts the loading on the final model's thread once that model is trained
beside the audit's grid (tables of 2,001 to 200,000 rows, :mod:`engine.pipeline.final_model`),
so it overlaps work that has to be done anyway. Not with the audit's start: beside a small
table's audit, whose Python steps need the interpreter lock, it slowed the first flows from
0.3 to 1.7 s (300 rows, a fresh command) and cost more than the 1.0 s it saved. The PDF waits
for a warm-up still running (:func:`wait`) before it draws, so matplotlib's style settings
never change under a figure.

Why a thread: the libraries must end up in this process; the loading is mostly the interpreter
executing module code, which interleaves with the audit's numpy and torch work (they release
the interpreter lock). Best effort: a library that fails to load here is loaded again, and its
error reported, by the PDF step itself.

Example:
    >>> start(); wait()
    >>> import sys
    >>> "matplotlib.backends.backend_agg" in sys.modules, "reportlab.platypus" in sys.modules
    (True, True)
"""

from __future__ import annotations

import threading

_LOCK = threading.Lock()
_THREAD: list[threading.Thread] = []


def start() -> None:
    """Begin loading on a daemon thread (once per process); returns at once."""
    with _LOCK:
        if not _THREAD:
            _THREAD.append(threading.Thread(target=_load, name="report-warm-up", daemon=True))
            _THREAD[0].start()


def wait() -> None:
    """Return when no warm-up is running (at once when none was started)."""
    if _THREAD:
        _THREAD[0].join()


# Loaded inside the PDF step itself (the sections' modules, reportlab's page layout): 0.37-0.39
# s of a 100,000-row run's PDF before they joined the warm-up (cProfile of render_report).
MODULES = (
    "reportlab.platypus",
    "reportlab.pdfgen.canvas",
    "engine.report.regression",
    "engine.report.curve_plot",
    "engine.report.estimates",
    "engine.report.sections.utility",
    "engine.report.sections.privacy",
    "engine.report.sections.audit_method",
)


def _load() -> None:
    try:
        import importlib

        from engine.report.figures import figure_png
        from engine.report.layout import register_fonts

        register_fonts()
        figure_png(lambda fig: fig.suptitle("warm-up"), 1.0, 0.5)  # loads the figure font once
        for name in MODULES:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001, S110 (best effort: the PDF step loads and reports itself)
        pass
