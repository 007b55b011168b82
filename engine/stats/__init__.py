"""Statistics: one model on one table (``regression``: Cox / OLS / logistic; ``fits``: what a fit
returns), combining rules for synthetic copies (``combine``), real versus synthetic (``compare``,
``fidelity``), all re-exported by ``models``; and the pooling maths of a
meta-analysis (``meta``)."""
