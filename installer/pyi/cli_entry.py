"""PyInstaller entry of the ``latent-synth`` executable: no arguments open the wizard, anything
else is the command line (the same ``desktop.launch.main`` as the installed console script)."""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()  # worker processes of a frozen app re-enter here
    from desktop.launch import main

    sys.exit(main())
