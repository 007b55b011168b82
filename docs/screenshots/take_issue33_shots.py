"""Issue 33's screenshots, taken offscreen with ``QWidget.grab()`` (no X display needed)::

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/take_issue33_shots.py docs/screenshots

* ``06-fidelity-lost-effect.png``: the Fidelity page of a trial table whose treatment effect
  (HR about 0.5, significant) is weaker and not significant in the synthetic copy (made by
  shuffling the treatment of 45 % of the rows): the verdict leads with the treatment.
* ``00-oneclick-refused.png``: the one-click summary after a refusal (400 rows of the demo's
  Framingham M study under an impossible privacy limit of 0.501), with its advice.

A fake run result carries the trial table (no flow is trained for the first shot); the second
runs the real one-click job (about a minute on a CPU).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")


def trial(n: int = 300, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A two-arm trial (treatment halves the hazard) and a copy with the effect washed out."""
    rng = np.random.default_rng(seed)
    treat = rng.integers(0, 2, n)
    age = rng.normal(60, 8, n).round()
    hazard = np.exp(np.log(0.5) * treat + 0.03 * (age - 60)) / 6
    event_time = rng.exponential(1 / hazard)
    censor = rng.uniform(2, 12, n)
    real = pd.DataFrame(
        {
            "time_years": np.minimum(event_time, censor).round(2),
            "died": (event_time <= censor).astype(int),
            "treat": treat,
            "age": age,
        }
    )
    synth = real.copy()
    mixed = rng.random(n) < 0.45
    synth.loc[mixed, "treat"] = rng.permutation(synth.loc[mixed, "treat"].to_numpy())
    synth["age"] = (synth["age"] + rng.normal(0, 2, n)).round()
    synth["time_years"] = (synth["time_years"] * rng.uniform(0.85, 1.15, n)).round(2)
    return real, synth


def fidelity_shot(app, win) -> None:
    from test_report import fake_result

    from engine.pipeline.results import Fidelity
    from engine.stats.models import ModelSpec, fidelity_report

    real, synth = trial()
    spec = ModelSpec("cox", time="time_years", event="died", covariates=("treat", "age"))
    fidelity = Fidelity(fidelity_report(real, synth, spec, list(real.columns)))
    r = fake_result()
    prepared = type(r.prepared)(**{**vars(r.prepared), "real": real})
    config = type(r.config)(
        **{**vars(r.config), "covariates": ("treat", "age"), "time": "time_years"}
    )
    result = replace(
        r, prepared=prepared, synthetic=synth, copies=(synth,), fidelity=fidelity, config=config
    )
    win.session.result = result
    win.go_to(5)
    save(app, win, "06-fidelity-lost-effect.png")
    print(fidelity.verdict.line if fidelity.verdict else "no verdict", flush=True)


def refusal_shot(app, win) -> None:
    from desktop import oneclick

    frame = pd.read_csv(oneclick_demo(), dtype={"participant_id": str})
    small = frame[frame["study"] == "Framingham M"].head(400).drop(columns="study")
    folder = Path(tempfile.mkdtemp())
    path = folder / "heart study.csv"
    small.to_csv(path, index=False)
    oneclick.documents_folder = lambda: folder / "Documents"
    win.go_to(0)
    page = win.pages[0]
    page.load_file(path, time="time_cvd_years", event="cvd")
    wait(app, lambda: page.is_complete())
    win.oneclick_settings = {
        "w_grid": (0.0, 0.3), "repeats": 2, "seed": 1, "device": "cpu", "budget": "fast",
        "auc_max": 0.501,
    }  # fmt: skip
    assert win.start_oneclick()
    wait(app, lambda: win.stack.currentWidget() is win.summary_page, seconds=600)
    save(app, win, "00-oneclick-refused.png")


def oneclick_demo() -> Path:
    from engine.pipeline.demo import demo_input

    return demo_input()


def wait(app, done, seconds: float = 60.0) -> None:
    import time

    end = time.monotonic() + seconds
    while not done():
        app.processEvents()
        time.sleep(0.05)
        if time.monotonic() > end:
            raise TimeoutError("the window did not get there in time")


def save(app, win, name: str) -> None:
    for _ in range(10):
        app.processEvents()
    win.grab().save(str(OUT / name))
    print("wrote", OUT / name, flush=True)


def main() -> int:
    from desktop.qt import QApplication
    from desktop.wizard import MainWindow

    app = QApplication(sys.argv[:1])
    app.setOrganizationName("latent-synth-screenshots")
    app.setApplicationName("latent-synth")
    win = MainWindow()
    win.resize(1280, 800)
    win.show()
    which = sys.argv[2:] or ["fidelity", "refusal"]
    if "fidelity" in which:
        fidelity_shot(app, win)
    if "refusal" in which:
        refusal_shot(app, win)
    win.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
