"""The ``latent-synth`` console script: no arguments open the wizard, anything else is the
command line (``engine.cli``). Lives in ``desktop`` because the engine may not import Qt or
``desktop``; nothing here imports Qt until the wizard is asked for, so the command line works
without PySide6 installed."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Open the wizard when called without arguments, else run the command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        from engine.cli import main as cli_main

        return cli_main(args)
    try:
        from desktop.app import main as desktop_main
    except ImportError as err:
        print(
            f"latent-synth: error: the desktop wizard needs PySide6 ({err}); install it with "
            "'pip install \"latent-synth[gui]\"', or use the command line: 'latent-synth run --help'",
            file=sys.stderr,
        )
        return 2
    return int(desktop_main())


if __name__ == "__main__":
    sys.exit(main())
