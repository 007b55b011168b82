"""Flows: the Masked Autoregressive Flow (maf), its training (train), the choice of size by
validation likelihood (select) and generation / latent noise injection (generate)."""
