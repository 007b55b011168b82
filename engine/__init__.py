"""latent-synth engine: from a local table to a privacy-audited synthetic copy.

Pure Python + numpy/pandas/torch/scipy/lifelines/statsmodels/matplotlib (Agg). The engine
never imports Qt or the ``desktop`` package (an import-linter contract enforces this).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
