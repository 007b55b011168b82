"""Speed-ups that must not change what is computed: the hand-held fused Adam and plateau
schedule against torch.optim's, the batched audit repeats against one-at-a-time repeats, and
chunked generation against one pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.flows.adam import FusedAdam, PlateauSchedule


def _net(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def test_fused_adam_and_plateau_match_torch_optim_bit_for_bit() -> None:
    """40 steps with weight decay and a loss that plateaus (the rate is halved twice): every
    weight equals torch.optim.Adam(fused=True) + ReduceLROnPlateau's exactly."""
    x = torch.randn(64, 3, generator=torch.Generator().manual_seed(0))
    y = x.sum(1, keepdim=True)
    ours, theirs = _net(1), _net(1)
    opt_a = FusedAdam(list(ours.parameters()), lr=0.01, weight_decay=1e-3)
    opt_b = torch.optim.Adam(theirs.parameters(), lr=0.01, weight_decay=1e-3, fused=True)
    sched_a = PlateauSchedule(opt_a, factor=0.5, patience=2, min_lr=1e-4)
    sched_b = torch.optim.lr_scheduler.ReduceLROnPlateau(opt_b, factor=0.5, patience=2, min_lr=1e-4)
    lrs = []
    for step in range(40):
        for net, opt in ((ours, opt_a), (theirs, opt_b)):
            opt.zero_grad(set_to_none=True)
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
        plateau = 1.0 if step > 10 else 1.0 / (step + 1)  # stops improving after step 10
        sched_a.step(plateau)
        sched_b.step(plateau)
        assert opt_a.lr == opt_b.param_groups[0]["lr"]
        lrs.append(opt_a.lr)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    assert lrs[-1] <= 0.01 / 4  # the schedule did act (halved at least twice)


def test_fused_adam_skips_frozen_parameters() -> None:
    """A parameter without gradient (a MADE mask) is never moved."""
    mask = torch.nn.Parameter(torch.ones(3), requires_grad=False)
    w = torch.nn.Parameter(torch.ones(3))
    opt = FusedAdam([mask, w], lr=0.1)
    (w * mask).sum().backward()
    opt.step()
    assert torch.equal(mask, torch.ones(3))
    assert torch.allclose(w, torch.full((3,), 0.9))


def _audit_curve(batch_rows: int) -> tuple[list[tuple[float, ...]], list[int]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _audit_curve_patched(batch_rows, monkeypatch)


def _audit_curve_patched(
    batch_rows: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[float, ...]], list[int]]:
    from engine.flows.train import FlowConfig, train_flow
    from engine.privacy import audit
    from engine.privacy import book as crossfit

    monkeypatch.setattr(crossfit, "BATCH_ROWS", batch_rows)
    batches: list[int] = []
    draw = crossfit.draw_common

    def counted(split, points, *args):  # type: ignore[no-untyped-def]
        batches.append(len(points))
        return draw(split, points, *args)

    monkeypatch.setattr(crossfit, "draw_common", counted)
    X = np.random.default_rng(0).standard_normal((240, 3))
    X[:, 2] += X[:, 0] * X[:, 1]

    def fit(rows: np.ndarray) -> object:
        return train_flow(rows, FlowConfig(flows=2, hidden=8, max_epochs=3), seed=0)

    config = audit.AuditConfig(grid=(0.0, 0.4, 0.8), refine=False, splits=2)
    result = audit.run_audit(X, X, fit, config=config, rng=np.random.default_rng(5))
    return [(p.w, p.auc, p.density_auc, p.repeats) for p in result.curve], batches


def test_batched_audit_repeats_give_the_same_curve() -> None:
    """Several points (w, repeat) of a split decoded in one pass (up to 16,384 rows) or one per
    pass: the same AUCs to the last bit and the same number of repeats at every w (a trained
    flow; every draw is a function of the split and the repeat alone)."""
    batched, sizes = _audit_curve(16_384)
    one_by_one, ones = _audit_curve(1)
    assert batched == one_by_one
    assert set(ones) == {1} and sum(ones) == sum(p[3] for p in batched)
    assert len(sizes) < len(ones) and max(sizes) >= 2  # fewer decode passes: batching was used


@pytest.mark.parametrize("per_row_w", [False, True])
def test_chunked_generation_equals_one_pass(
    monkeypatch: pytest.MonkeyPatch, per_row_w: bool
) -> None:
    """2,500 rows through a trained flow in blocks of 1,024 (with the flow decoding 512 rows at a
    time) give bit-identical rows to one pass, and the non-finite count covers every block."""
    from engine.flows import generate, train
    from engine.flows.train import FlowConfig, train_flow

    monkeypatch.setattr(train, "CHUNK_ROWS", 512)
    X = np.random.default_rng(0).standard_normal((2_500, 4))
    flow = train_flow(X, FlowConfig(flows=2, hidden=8, max_epochs=2), seed=0)
    w = np.random.default_rng(1).uniform(0.2, 0.9, len(X)) if per_row_w else 0.6
    one_pass = generate.latent_noise_injection(flow, X, w, np.random.default_rng(3))
    monkeypatch.setattr(generate, "GENERATE_CHUNK_ROWS", 1_024)
    blocks: list[int] = []
    encode = flow.to_latent
    monkeypatch.setattr(flow, "to_latent", lambda rows: blocks.append(len(rows)) or encode(rows))
    chunked = generate.latent_noise_injection(flow, X, w, np.random.default_rng(3))
    assert blocks == [1_024, 1_024, 452]
    np.testing.assert_array_equal(chunked, one_pass)
    assert not np.allclose(chunked, X, atol=0.05)  # noise was injected
    assert flow.last_nonfinite == int((~np.isfinite(one_pass).all(axis=1)).sum())


def test_numeric_codes_match_the_object_index() -> None:
    """A column's codes by sorted search (numbers against numeric labels) equal the object
    index's, 1 == 1.0 included; an unknown value is refused as before; text and booleans keep
    the object index."""
    import pandas as pd

    from engine.encoding.lookup import label_codes as _codes
    from engine.encoding.lookup import numeric_codes as _numeric_codes
    from engine.errors import InputError

    labels = (3, 0, 1.5, -2)
    s = pd.Series([0.0, 3, 1.5, -2, 3, 0])
    index = pd.Index(list(labels), dtype=object)
    want = index.get_indexer(pd.Index(s.astype(object).to_numpy(), dtype=object))
    assert np.array_equal(_codes(s, labels), want)
    assert np.array_equal(_codes(pd.Series([1, 0, 1], dtype="int64"), (0.0, 1.0)), [1, 0, 1])
    with pytest.raises(InputError, match="not one of its categories"):
        _codes(pd.Series([0.5]), labels)
    assert _numeric_codes(pd.Series(["a"]), ("a",)) is None
    assert _numeric_codes(pd.Series([1, 0]), (True, False)) is None


def test_the_incremental_inverse_takes_each_relu_once_with_the_same_numbers() -> None:
    """The generating pass keeps each hidden unit's ReLU from its first use (issue 31): every
    decoded value equals, bit for bit, the pass that took the ReLU of all the units an output
    reads at every output (written out here), and matches the flow's density pass."""
    from engine.flows.maf import MAF

    torch.manual_seed(0)
    model = MAF(7, hidden=24, flows=3, layers=1).eval()
    with torch.no_grad():
        for p in (model.W1, model.W2, model.b1, model.b2):
            p.normal_(0.0, 0.3)
    z = torch.randn(500, 7, generator=torch.Generator().manual_seed(1))

    def every_output(self, z, k, weights):  # type: ignore[no-untyped-def]
        W1, _, W2 = weights
        d, c = self.features, self.log_scale_bound
        w2 = torch.stack([W2[k, :d], W2[k, d:]], dim=1)
        b2 = torch.stack([self.b2[k, :d], self.b2[k, d:]], dim=1)
        zt = z.T.contiguous()
        a = self.b1[k][:, None].expand(-1, zt.shape[1]).contiguous()
        xt = torch.empty_like(zt)
        for i in range(d):
            e = self._ends[i]
            if e > 0:
                out = torch.addmm(b2[i][:, None], w2[i, :, :e], torch.relu(a[:e]))
                mu, s = out[0], out[1]
            else:
                mu, s = b2[i, 0], b2[i, 1]
            xt[i] = mu + zt[i] * torch.exp(c * torch.tanh(s / c))
            if i < d - 1 and e < a.shape[0]:
                a[e:].addr_(W1[k][e:, i], xt[i])
        return xt.T

    with torch.no_grad():
        x = model.from_latent(z)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(MAF, "_inverse_incremental", every_output)
            reference = model.from_latent(z)
        back = model.to_latent(x)[0]
    assert torch.equal(x, reference)
    assert float((back - z).abs().max()) < 1e-3  # float32 round trip


def test_the_report_warm_up_leaves_figures_and_settings_as_they_were() -> None:
    """The report's libraries loaded beside the audit (engine.report.warm): matplotlib's
    settings are the same after it, and a figure drawn after it has the same pixels."""
    import matplotlib

    from engine.report import warm
    from engine.report.figures import figure_png

    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot(1, 1, 1)
        ax.plot([0, 1, 2], [1, 0, 2])
        ax.set_title("w = 0.5")

    before, settings = figure_png(draw, 2.0, 1.5), dict(matplotlib.rcParams)
    warm.start()
    warm.wait()
    assert dict(matplotlib.rcParams) == settings
    assert figure_png(draw, 2.0, 1.5) == before


def test_the_report_warm_up_loads_what_the_pdf_would_load_first() -> None:
    """In a fresh process nothing of the report is loaded; after the warm-up the Agg backend,
    the report's TrueType fonts, reportlab's page layout and the sections' modules are (what
    the first PDF paid about a second and a half for)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from engine.report import warm\n"
        "before = 'matplotlib.backends.backend_agg' in sys.modules\n"
        "unloaded = [m for m in warm.MODULES if m in sys.modules]\n"
        "warm.start(); warm.wait()\n"
        "from reportlab.pdfbase import pdfmetrics\n"
        "from engine.report.layout import FONT, FONT_BOLD\n"
        "names = pdfmetrics.getRegisteredFontNames()\n"
        "print(before, 'matplotlib.backends.backend_agg' in sys.modules, FONT in names,\n"
        "      FONT_BOLD in names)\n"
        "print(unloaded == [], all(m in sys.modules for m in warm.MODULES))\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert out.stdout.split() == ["False", "True", "True", "True", "True", "True"]


def test_release_metrics_with_the_neighbours_found_before_are_the_same() -> None:
    """The release metrics given the real rows' neighbour distances found beside the audit
    (engine.privacy.release.real_neighbours) equal those that search themselves."""
    from engine.privacy.release import real_neighbours, release_metrics

    rng = np.random.default_rng(4)
    real = np.c_[rng.standard_normal((3_000, 3)), rng.integers(0, 2, 3_000)]
    synth = real + rng.normal(0.0, 0.4, real.shape)
    alone = release_metrics(real, synth, rng=np.random.default_rng(1))
    given = release_metrics(real, synth, rng=np.random.default_rng(1), near=real_neighbours(real))
    assert alone.to_dict() == given.to_dict() and alone.at_risk > 0
