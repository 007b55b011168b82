"""The search kernels: exact nearest neighbours (k-d trees, cells, float32 tiles with a float64
certificate), Gaussian kernel density sums, their torch blocks for a GPU, and the thread blocks
they run in. The membership audit, the release's measures and the disclosure check call them;
they know nothing of either (docs/architecture.md)."""
