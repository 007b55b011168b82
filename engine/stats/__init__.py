"""Statistics: Cox / OLS / logistic models, combining rules and fidelity (models) and the
pooling maths of a meta-analysis (meta)."""
