"""PyInstaller runtime hook: keep matplotlib's font cache in a per-user folder that survives
between starts (one-folder bundles are often read-only when an administrator installs them)."""

import os
import sys

if "MPLCONFIGDIR" not in os.environ:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "latent-synth", "matplotlib")
    try:
        os.makedirs(path, exist_ok=True)
        os.environ["MPLCONFIGDIR"] = path
    except OSError:
        pass  # matplotlib falls back to a temporary folder
