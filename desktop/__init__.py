"""latent-synth desktop wizard (PySide6). Thin over ``engine``: pages collect settings,
start engine work on a worker thread and render its results."""
