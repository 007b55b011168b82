"""Differential privacy: the accountant (accountant), public bounds (bounds), DP-SGD training
of the flow (train) and the DP release and its audit (release)."""
