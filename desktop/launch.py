"""Entry points of the installed program.

``latent-synth`` (console script): no arguments open the wizard, one table file opens the wizard
with that file loaded (``latent-synth cohort.csv``, the desktop entry's "Open with"), anything else
is the command line (``engine.cli``). ``latent-synth-gui`` (GUI script, no console window on
Windows; the Start-menu shortcut points at it): the wizard, with any start-up failure written to a
log file in the user's local app-data folder and shown in a message box, since a windowed program
has no console to print to.

Lives in ``desktop`` because the engine may not import Qt or ``desktop``; nothing here imports
Qt until the wizard is asked for, so the command line works without PySide6 installed.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

# The system libraries Qt's xcb platform plugin needs on Linux beyond a bare X11 client: the
# Debian/Ubuntu package name and the shared library it provides (README.md lists the apt line).
QT_XCB_LIBRARIES = (
    ("libxcb-cursor0", "libxcb-cursor.so.0"),
    ("libxcb-icccm4", "libxcb-icccm.so.4"),
    ("libxcb-keysyms1", "libxcb-keysyms.so.1"),
    ("libxcb-image0", "libxcb-image.so.0"),
    ("libxcb-render-util0", "libxcb-render-util.so.0"),
    ("libxcb-shape0", "libxcb-shape.so.0"),
    ("libxcb-xkb1", "libxcb-xkb.so.1"),
    ("libxkbcommon-x11-0", "libxkbcommon-x11.so.0"),
)


COMMANDS = ("run", "demo", "meta")
# What the program reads (engine.files.read.FORMATS), for "Open with" and the file dialog.
TABLE_SUFFIXES = tuple(
    ".csv .tsv .tab .txt .xlsx .xlsm .xls .parquet .pq .sas7bdat .xpt .sav .zsav .dta".split()
)


def table_to_open(args: Sequence[str]) -> str | None:
    """The file of ``latent-synth FILE``: one argument, not a command, naming an existing file
    with a table extension (the desktop entry's "Open with" passes it this way).

    Example:
        >>> table_to_open(["run", "cohort.csv"]) is None
        True
        >>> table_to_open(["run"]) is None
        True
    """
    if len(args) != 1 or args[0] in COMMANDS or args[0].startswith("-"):
        return None
    return args[0] if is_table_path(args[0]) else None


def is_table_path(text: str) -> bool:
    """Whether ``text`` names an existing file with an extension the program reads."""
    path = Path(text)
    return path.suffix.lower() in TABLE_SUFFIXES and path.is_file()


def _missing_table(args: Sequence[str]) -> str | None:
    """One line for ``latent-synth FILE`` when FILE looks like a table but is not a file."""
    if len(args) != 1 or Path(args[0]).suffix.lower() not in TABLE_SUFFIXES:
        return None
    if Path(args[0]).is_file():
        return None
    return (
        f"{args[0]}: no such file; check the name and folder "
        "(or see 'latent-synth --help' for the commands)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Open the wizard when called without arguments or with one table file, else run the
    command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = table_to_open(args)
    missing = _missing_table(args)
    if missing:
        print(f"latent-synth: error: {missing}", file=sys.stderr)
        return 2
    if args and path is None:
        from engine.cli import main as cli_main
        from engine.cli import program

        if argv is None:  # the program itself: one run, then no teardown once files are written
            program(args)
        return cli_main(args)
    try:
        _load_torch_before_qt()
        from desktop.app import main as desktop_main
    except ImportError as err:
        print(
            f"latent-synth: error: the desktop wizard needs PySide6 ({err}); install it with "
            "'pip install \"latent-synth[gui]\"', or use the command line: "
            "'latent-synth run --help'",
            file=sys.stderr,
        )
        return 2
    hint = missing_libraries_message()
    if hint:
        print(f"latent-synth: error: {hint}", file=sys.stderr)
        return 2
    return int(desktop_main(path) if path else desktop_main())


def missing_qt_libraries() -> list[str]:
    """The packages of :data:`QT_XCB_LIBRARIES` whose library the system loader cannot open.

    Qt aborts the whole process when its xcb plugin cannot load ("Could not load the Qt platform
    plugin "xcb""), naming none of the culprits, so the launcher asks the loader itself first.
    """
    import ctypes
    import ctypes.util

    missing = []
    for package, soname in QT_XCB_LIBRARIES:
        try:
            ctypes.CDLL(soname)
        except OSError:
            short = soname.removeprefix("lib").split(".so")[0]
            if ctypes.util.find_library(short) is None:
                missing.append(package)
    return missing


def _uses_xcb() -> bool:
    """Whether Qt will try its xcb plugin: Linux, with no other platform asked for."""
    if not sys.platform.startswith("linux"):
        return False
    asked = os.environ.get("QT_QPA_PLATFORM", "")
    if asked:
        return asked.startswith("xcb")
    return not os.environ.get("WAYLAND_DISPLAY")


def missing_libraries_message() -> str | None:
    """One line naming the missing system libraries and the command that installs them."""
    if not _uses_xcb():
        return None
    missing = missing_qt_libraries()
    if not missing:
        return None
    names = " ".join(missing)
    return (
        f"the desktop window needs system libraries that are missing: {', '.join(missing)}; "
        f"install them with 'sudo apt-get install {names}' (or your system's equivalent), "
        "or use the command line: 'latent-synth run --help'"
    )


def _load_torch_before_qt() -> None:
    """On Windows, import torch before Qt: the Visual C++ runtime that torch needs (14.40 or
    newer, placed beside torch's DLLs by the installer) must be the one loaded, not an older
    msvcp140.dll that Qt brings (WinError 1114)."""
    if sys.platform == "win32":
        import torch  # noqa: F401


def log_folder() -> Path:
    """Where start-up failures are logged: %LOCALAPPDATA%\\latent-synth\\logs on Windows,
    $XDG_STATE_HOME (or ~/.local/state)/latent-synth/logs elsewhere."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "latent-synth" / "logs"


def _write_startup_log(text: str) -> Path | None:
    """Append ``text`` to startup.log; None when even that is impossible."""
    try:
        folder = log_folder()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "startup.log"
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return path
    except OSError:
        return None


def _show_startup_error(message: str) -> None:
    """Show ``message`` in a message box (Qt if it loads, else Windows' own), else on stderr."""
    try:
        from PySide6.QtWidgets import QApplication, QMessageBox

        _app = QApplication.instance() or QApplication([])
        QMessageBox.critical(None, "latent-synth could not start", message)
        return
    except Exception:  # noqa: BLE001 - Qt itself may be what failed to load
        pass
    if sys.platform == "win32":
        import ctypes

        ctypes.windll.user32.MessageBoxW(None, message, "latent-synth could not start", 0x10)
    elif sys.stderr is not None:
        print(message, file=sys.stderr)


def _prefer_installed_modules() -> None:
    """Drop the working folder from the import path: a ``pandas.py`` in Documents must never
    be imported instead of the installed package."""
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]


def gui_main(argv: Sequence[str] | None = None) -> int:
    """The wizard for the Start-menu shortcut (a table dropped on it, or opened with it, is
    loaded); start-up failures are logged and shown."""
    path = table_to_open(list(sys.argv[1:] if argv is None else argv))
    _prefer_installed_modules()
    try:
        _load_torch_before_qt()
        from desktop.app import main as desktop_main

        hint = missing_libraries_message()
        if hint:
            # No Qt message box: Qt itself would abort on the missing libraries.
            log = _write_startup_log(f"--- latent-synth could not start: {hint}\n")
            if sys.stderr is not None:
                print(f"latent-synth could not start: {hint} (also in {log})", file=sys.stderr)
            return 1
        return int(desktop_main(path) if path else desktop_main())
    except Exception as err:  # noqa: BLE001 - a windowed program has no console to print to
        return _startup_failed(err)


def _startup_failed(err: BaseException) -> int:
    """Log ``err`` with its traceback, tell the user where the log is, return exit code 1."""
    stamp = _dt.datetime.now().isoformat(timespec="seconds")
    detail = "".join(traceback.format_exception(err))
    log = _write_startup_log(f"--- {stamp} latent-synth could not start\n{detail}\n")
    where = f"The details were saved in {log}." if log else "The details could not be saved."
    _show_startup_error(
        f"latent-synth could not start: {err}\n\n{where}\n"
        "Please send that file to whoever installed the program."
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
