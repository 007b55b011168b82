"""PyInstaller entry of the ``latent-synth-gui`` executable: the desktop wizard, no console."""

import multiprocessing
import os
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    os.environ.setdefault("MPLBACKEND", "Agg")
    from desktop.launch import gui_main  # start-up failures logged and shown, not lost

    sys.exit(gui_main())
