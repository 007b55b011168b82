"""PyInstaller entry of the ``latent-synth`` executable: the command line (no arguments: the wizard)."""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()  # worker processes of a frozen app re-enter here
    from engine.cli import main

    sys.exit(main())
