"""The Python face for analysts (a notebook's way in; ``docs/api.md`` is its guide):
:class:`Metadata`, the column choices as one object saved to and read from a JSON file, and
:class:`Synthesizer`, fitted once and sampled at the audited w or another.

Example (the whole guide runs as a doctest in ``tests/test_api.py``)::

    meta = Metadata.detect(df)
    synth = Synthesizer(meta, seed=7).fit(df)
    synth.audit().w, synth.sample(w=0.3).head()
    synth.write("out")  # synthetic file, audit.json, report.pdf, README.txt

It sits above the pipeline, beside the command line (the import-linter layers in
pyproject.toml): glue around the pipeline's own steps, nothing re-implemented.
"""

from engine.api.metadata import METADATA_FORMAT, METADATA_VERSION, ColumnChoice, Metadata
from engine.api.synthesizer import AuditSummary, Synthesizer, refusal_words

__all__ = [
    "METADATA_FORMAT",
    "METADATA_VERSION",
    "AuditSummary",
    "ColumnChoice",
    "Metadata",
    "Synthesizer",
    "refusal_words",
]
