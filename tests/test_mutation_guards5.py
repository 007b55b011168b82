"""Hand-computed cases for latent noise injection in row blocks (issue 18; docs/mutation.md).

``latent_noise_injection`` now works in blocks of ``GENERATE_CHUNK_ROWS`` rows. These tests
kill the mutants of that block loop. The map is affine (``to_latent: x -> x - 1``,
``from_latent: z -> z + 1``) and records the size of every block it decodes; the noise source
hands out 0, 1, 2, ... in order, so with w = 0.36 (sqrt 0.6, sqrt(1 - w) 0.8) every released
value is ``0.6 (x - 1) + 0.8 noise + 1`` and can be checked by eye:

    X (5 x 2)  = 0 1 / 2 3 / 4 5 / 6 7 / 8 9      noise = the same numbers, in the same order
    released   = 0.6 (x - 1) + 0.8 x + 1 = 1.4 x + 0.4
               = 0.4 1.8 / 3.2 4.6 / 6.0 7.4 / 8.8 10.2 / 11.6 13.0

The block size is lowered to 2 (blocks of 2, 2 and 1 rows) with ``monkeypatch``; one test
keeps the real 65,536.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine.flows.generate as generate
from engine.flows.generate import latent_noise_injection

X5 = np.arange(10).reshape(5, 2)  # integers on purpose: the result must still be float
RELEASED_036 = np.array([[0.4, 1.8], [3.2, 4.6], [6.0, 7.4], [8.8, 10.2], [11.6, 13.0]])


class _Recorder:
    """An affine latent map that records the rows of every block it decodes and, like a
    ``TrainedFlow``, keeps a ``last_nonfinite`` count (here a sentinel -1 per call)."""

    def __init__(self) -> None:
        self.blocks: list[int] = []
        self.last_nonfinite = -5

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) - 1.0

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        self.blocks.append(len(Z))
        self.last_nonfinite = -1
        return np.asarray(Z, dtype=float) + 1.0


class _Plain:
    """The same map without a ``last_nonfinite`` attribute (the exact Gaussian map of tests)."""

    def to_latent(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=float) - 1.0

    def from_latent(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float) + 1.0


class _CountingNoise:
    """A noise source that hands out 0, 1, 2, ... in row order (one pass or in blocks alike)."""

    def __init__(self) -> None:
        self.next = 0

    def standard_normal(self, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        out = np.arange(self.next, self.next + n, dtype=float).reshape(shape)
        self.next += n
        return out


@pytest.fixture
def blocks_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "GENERATE_CHUNK_ROWS", 2)


def test_five_integer_rows_in_blocks_of_two_by_hand(blocks_of_two: None) -> None:
    flow, noise = _Recorder(), _CountingNoise()
    out = latent_noise_injection(flow, X5, 0.36, noise)  # type: ignore[arg-type]
    assert flow.blocks == [2, 2, 1]
    assert noise.next == 10  # every noise number drawn once, none twice
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert flow.last_nonfinite == 0  # counted over the whole output, not the flow's -1


def test_a_plain_list_of_rows_is_released_in_blocks_too(blocks_of_two: None) -> None:
    out = latent_noise_injection(_Recorder(), X5.tolist(), 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)


def test_one_w_per_row_is_cut_into_the_same_blocks(blocks_of_two: None) -> None:
    """w = 1, 0, 0.36, 1, 0: rows at w = 1 come back exactly, rows at w = 0 are pure noise
    (noise + 1), row 2 is 1.4 x + 0.4 = 6.0, 7.4."""
    w = np.array([1.0, 0.0, 0.36, 1.0, 0.0])
    flow = _Recorder()
    out = latent_noise_injection(flow, X5, w, _CountingNoise())  # type: ignore[arg-type]
    expected = [[0.0, 1.0], [3.0, 4.0], [6.0, 7.4], [6.0, 7.0], [9.0, 10.0]]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    assert flow.blocks == [2, 2, 1]


def test_exactly_one_block_of_rows_is_decoded_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 rows with blocks of 4: one pass, and the flow's own count is left alone; 5 rows: two
    blocks (4 + 1) and the count is taken over the whole output."""
    monkeypatch.setattr(generate, "GENERATE_CHUNK_ROWS", 4)
    flow = _Recorder()
    out = latent_noise_injection(flow, X5[:4], 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036[:4], rtol=0, atol=1e-12)
    assert flow.blocks == [4]
    assert flow.last_nonfinite == -1
    flow = _Recorder()
    out = latent_noise_injection(flow, X5, 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert flow.blocks == [4, 1]
    assert flow.last_nonfinite == 0


def test_rows_that_decode_to_inf_or_nan_are_counted_across_blocks(blocks_of_two: None) -> None:
    """Row 0 (inf in one column, block 1), row 3 (inf in both, block 2) and row 4 (nan, block
    3) are not finite: 3 rows, not 4 cells, not 1 block's count."""
    X = X5.astype(float)
    X[0, 1] = np.inf
    X[3, :] = np.inf
    X[4, 0] = np.nan
    flow = _Recorder()
    out = latent_noise_injection(flow, X, 0.36, _CountingNoise())  # type: ignore[arg-type]
    assert flow.last_nonfinite == 3
    np.testing.assert_allclose(out[1:3], RELEASED_036[1:3], rtol=0, atol=1e-12)
    assert out[4, 1] == pytest.approx(13.0)


def test_a_map_without_a_nonfinite_count_is_not_given_one(blocks_of_two: None) -> None:
    flow = _Plain()
    out = latent_noise_injection(flow, X5, 0.36, _CountingNoise())  # type: ignore[arg-type]
    np.testing.assert_allclose(out, RELEASED_036, rtol=0, atol=1e-12)
    assert not hasattr(flow, "last_nonfinite")


def test_blocks_give_the_bits_of_one_pass_with_a_real_generator(blocks_of_two: None) -> None:
    X = np.random.default_rng(1).normal(size=(7, 3))
    w = np.linspace(0.0, 1.0, 7)
    blocked = latent_noise_injection(_Plain(), X, w, np.random.default_rng(9))
    noise = np.random.default_rng(9).standard_normal((7, 3))
    one_pass = np.sqrt(w)[:, None] * (X - 1.0) + np.sqrt(1.0 - w)[:, None] * noise + 1.0
    np.testing.assert_array_equal(blocked, one_pass)


def test_the_real_block_is_65536_rows() -> None:
    """65,536 rows go in one pass; 65,537 in a block of 65,536 and one of 1 row."""
    assert generate.GENERATE_CHUNK_ROWS == 65_536
    flow = _Recorder()
    X = np.zeros((65_537, 1))
    out = latent_noise_injection(flow, X[:65_536], 0.36, np.random.default_rng(0))
    assert flow.blocks == [65_536] and out.shape == (65_536, 1)
    flow = _Recorder()
    out = latent_noise_injection(flow, X, 0.36, np.random.default_rng(0))
    assert flow.blocks == [65_536, 1] and out.shape == (65_537, 1)
    expected = 0.6 * -1.0 + 0.8 * np.random.default_rng(0).standard_normal((65_537, 1)) + 1.0
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
