"""Help and setup: the offline user guide, tooltips on every number, missing Qt libraries."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("MPLBACKEND", "Agg")

import sys  # noqa: E402

from desktop import launch  # noqa: E402


def test_launcher_names_the_missing_qt_library_and_the_apt_command(monkeypatch, capsys):
    import ctypes
    import ctypes.util

    def fake_cdll(name, *args, **kwargs):
        if name == "libxcb-icccm.so.4":
            raise OSError(f"{name}: cannot open shared object file")
        return object()

    monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(launch.sys, "platform", "linux")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    started: list[int] = []
    from desktop import app

    monkeypatch.setattr(app, "main", lambda: started.append(1) or 0)
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch") or object())

    assert launch.missing_qt_libraries() == ["libxcb-icccm4"]
    assert launch.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "libxcb-icccm4" in err[0] and "sudo apt-get install libxcb-icccm4" in err[0]
    assert "libxcb-cursor0" not in err[0]  # only the missing one is named
    assert started == []  # Qt was never asked to start (it would abort the process)

    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # no xcb plugin needed: no check
    assert launch.missing_libraries_message() is None
