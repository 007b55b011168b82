"""Drive the real wizard on the demo cohort and screenshot every page of a real X window.

Run under Xvfb (needs the Debian packages xvfb and imagemagick)::

    xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb \\
        .venv/bin/python docs/screenshots/take_screenshots.py docs/screenshots

Each shot is ``import -window root`` of the X screen (not a Qt grab), so it shows what a
user sees. Takes one to three minutes (the demo's Framingham M study is trained for real).

With a second argument ``oneclick`` it takes the one-click path's shots instead (``00-*.png``):
the Import page with its primary button, the progress view, and the summary after a release and
after a refusal (the same table under an impossible privacy limit), then the wizard's Privacy
page holding that refusal (``05-privacy-refused.png``). The main path ends with the Fidelity page
after the run is released again at w = 0, where effects wash out and the verdict flags them
(``06-fidelity-flagged.png``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from desktop.qt import QApplication, QTimer

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")


def shot(name: str) -> None:
    QApplication.processEvents()
    subprocess.run(["import", "-window", "root", str(OUT / name)], check=True)
    print("wrote", OUT / name, flush=True)


def main() -> int:
    from desktop.wizard import MainWindow

    app = QApplication(sys.argv)
    app.setOrganizationName("latent-synth-screenshots")
    app.setApplicationName("latent-synth")
    win = MainWindow()
    win.setGeometry(8, 8, 1260, 780)
    win.show()
    export_dir = Path(tempfile.mkdtemp()) / "demo-export"
    state = {"step": 0, "ticks": 0}

    def page(i: int):
        return win.pages[i]

    def settle(n: int = 3) -> bool:
        state["ticks"] += 1
        if state["ticks"] < n:
            return False
        state["ticks"] = 0
        return True

    def wait_gpu() -> bool:
        state["gpu"] = state.get("gpu", 0) + 1
        return state["gpu"] > 80

    def tick() -> None:
        s = state["step"]
        if s == 0:
            page(0).load_demo()
            state["step"] = 1
        elif s == 1 and page(0).is_complete() and settle():
            shot("01-import.png")
            win.next()
            state["step"] = 2
        elif s == 2 and settle():
            shot("02-columns.png")
            win.next()
            state["step"] = 3
        elif (
            s == 3
            and win.stack.currentIndex() == 2
            and (not page(2).gpu_label.text().startswith("checking") or wait_gpu())
            and settle(4)
        ):
            settings = page(2)
            settings.advanced_toggle.setChecked(True)
            settings.grid_edit.setText("0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9")
            settings.repeats.setValue(2)
            settings.seeded.setChecked(True)
            state["step"] = 4
        elif s == 4 and settle():
            shot("03-settings.png")
            win.next()
            state["step"] = 5
        elif s == 5 and len(page(3).audited) >= 4 and settle(1):
            shot("04-train-running.png")
            state["step"] = 6
        elif s == 6 and page(3).session.result is not None and not page(3).is_busy() and settle(4):
            shot("04-train.png")
            win.next()
            state["step"] = 7
        elif s == 7 and settle():
            privacy = page(4)
            selected = privacy.selected_w() or 0.0
            privacy.w_spin.setValue(min(selected + 0.1, 0.95))
            state["step"] = 8
        elif s == 8 and settle():
            shot("05-privacy.png")
            privacy = page(4)
            privacy.w_spin.setValue(privacy.session.result.release["w"])
            win.next()
            state["step"] = 9
        elif s == 9 and settle(4):
            shot("06-fidelity.png")
            win.next()
            page(6).folder.setText(str(export_dir))
            page(6).export()
            state["step"] = 10
        elif s == 10 and win.session.written is not None and settle():
            shot("07-export.png")
            meta = win.open_meta()
            meta.setGeometry(40, 30, 1200, 740)
            meta.use_demo()
            meta.pool()
            state["step"] = 11
        elif s == 11 and win.meta_window.run is not None and settle(4):
            shot("08-meta-analysis.png")
            win.meta_window.close()
            # the Fidelity page with a flagged coefficient: the same run released again at
            # w = 0 (pure noise, below the audited choice), which washes the effects out
            state["before"] = win.session.result
            win.go_to(4)
            page(4).w_spin.setValue(0.0)
            page(4).apply_w()
            state["step"] = 12
        elif (
            s == 12
            and win.session.result is not state["before"]
            and not page(4).is_busy()
            and settle(2)
        ):
            win.go_to(5)
            state["step"] = 13
        elif s == 13 and settle(4):
            verdict = win.session.result.fidelity.verdict
            print("fidelity verdict at w = 0:", verdict.line if verdict else None, flush=True)
            shot("06-fidelity-flagged.png")
            win.close()
            app.quit()

    timer = QTimer()
    timer.setInterval(250)
    timer.timeout.connect(tick)
    timer.start()
    code = app.exec()
    win.shutdown()
    return code


def oneclick_main() -> int:
    """The one-click path on the demo cohort: import, progress, released, refused."""
    from desktop.wizard import MainWindow

    app = QApplication(sys.argv)
    app.setOrganizationName("latent-synth-screenshots")
    app.setApplicationName("latent-synth")
    win = MainWindow()
    win.setGeometry(8, 8, 1260, 780)
    win.show()
    fast = dict(w_grid=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7), repeats=2, seed=1, device="cpu")
    state = {"step": 0, "ticks": 0}

    def settle(n: int = 3) -> bool:
        state["ticks"] += 1
        if state["ticks"] < n:
            return False
        state["ticks"] = 0
        return True

    def tick() -> None:
        s, view = state["step"], win.progress_view
        if s == 0:
            win.pages[0].load_demo()
            state["step"] = 1
        elif s == 1 and win.pages[0].is_complete() and settle():
            shot("00-oneclick-import.png")
            win.oneclick_settings = dict(fast)
            win.pages[0].oneclick_button.click()
            state["step"] = 2
        elif s == 2 and view.bar.value() > 350 and settle(1):
            shot("00-oneclick-progress.png")
            state["step"] = 3
        elif s == 3 and win.stack.currentWidget() is win.summary_page and settle():
            shot("00-oneclick-released.png")
            win.go_to(0)
            win.oneclick_settings = {**fast, "auc_max": 0.501, "w_grid": (0.0, 0.1, 0.2, 0.3)}
            win.pages[0].oneclick_button.click()
            state["step"] = 4
        elif s == 4 and win.stack.currentWidget() is win.summary_page and settle():
            shot("00-oneclick-refused.png")
            win.go_to(4)  # the wizard holds the refused run: its Privacy page
            state["step"] = 5
        elif s == 5 and settle(4):
            shot("05-privacy-refused.png")
            win.close()
            app.quit()

    timer = QTimer()
    timer.setInterval(250)
    timer.timeout.connect(tick)
    timer.start()
    code = app.exec()
    win.shutdown()
    return code


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    sys.exit(oneclick_main() if sys.argv[2:] == ["oneclick"] else main())
