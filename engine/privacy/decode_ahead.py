"""Decoding an audit's next repeat on a second thread while one is scored (issue 31).

Why by hand: the audit's repeats are a sequence with a stopping rule (the SE target), and each
(split, w) draws from its own generator in a fixed order; a general executor map would decode
repeats that are never scored or draw them out of order. Measured (100,000 x 10 survival
table, 2 shared cores, seed 1, the final model not trained beside; one run each): the grid
33.8 -> 31.0 s. Beside the final model's training the two cores are full and it gains less.
"""

from __future__ import annotations

import numpy as np

from engine.privacy.attacks import _draw_repeats
from engine.privacy.audit_result import repeats_wanted


def _wanted(done: int, scored) -> bool:
    """Whether the spread of the repeats scored before repeat ``done`` (at least two) says the
    SE target will need more than ``done`` repeats, at most the maximum: n = (SD / 0.01)^2,
    the stopping rule's own estimate, one repeat early. A guess about what to decode next;
    the rule itself, and so every curve point, is unchanged."""
    if scored is None or len(scored[0]) < 2 or done >= scored[2]:
        return False
    return repeats_wanted(scored[0], scored[1]) > done


class DecodeAhead:
    """One decode thread for an audit's large synthetic sets (each repeat a decode of its own,
    16,384 rows or more): while one repeat is scored (the neighbour search and the density
    sums, numpy and both cores part of the time), the next is decoded (the flow in torch on
    one core, then the table's columns).

    Which repeats: the rest of the ``minimum`` every w needs, and, during a w's last minimum
    repeat, the first repeat of the w the caller audits next on that split (every w of the
    grid is audited at least once). A repeat beyond the minimum (the SE target not met yet) is
    decoded when asked for, so nothing is decoded for nothing. Each (split, w) keeps its own
    generator, seeded from the caller's ``rng`` in the same order as without this (the next
    w's seed is drawn early, but after this w's and before anything else is drawn from
    ``rng``), and its repeats are drawn in turn from it: every curve point is the same, bit
    for bit (``tests/test_audit_speed.py``).

    Use as a context (the thread ends with it); outside one, nothing is decoded ahead.
    """

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(1, thread_name_prefix="audit-decode")
        self.primed: dict[tuple[int, float], tuple[np.random.Generator, object]] = {}

    def __enter__(self) -> DecodeAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def generator(self, split, w, rng) -> np.random.Generator:
        """The (split, w) generator: primed earlier, else seeded from ``rng`` now."""
        primed = self.primed.get((id(split), w))
        return primed[0] if primed else np.random.default_rng(rng.integers(2**63))

    def submit(self, split, w, to_dist, config, local):
        """The next repeat of (split, w), decoding on the thread (a primed first one: taken)."""
        primed = self.primed.pop((id(split), w), None)
        if primed is not None:
            return primed[1]
        return self.pool.submit(lambda: _draw_repeats(split, w, 1, to_dist, config, local)[0])

    def after(self, split, w, to_dist, config, local, done, minimum, next_w, rng, scored=None):
        """What to decode while repeat ``done`` of (split, w) is scored: the next of the
        ``minimum`` repeats (returned), or at the last of them the first of ``next_w``; from
        the minimum on, first the next repeat of this w when the repeats ``scored`` so far
        (their AUCs, density AUCs, and the most allowed) say the SE target will want it."""
        if done < minimum:
            return self.submit(split, w, to_dist, config, local)
        ahead = self.submit(split, w, to_dist, config, local) if _wanted(done, scored) else None
        if done == minimum and next_w is not None:
            self.prime(split, next_w, to_dist, config, rng)
        return ahead

    def drop(self, future) -> bool:
        """A repeat decoded ahead and not needed: not started, it is not decoded; either way
        nothing else draws from its generator (its (split, w)'s own). Returns False (the w's
        loop returns it: the SE target is met)."""
        future.cancel()
        return False

    def prime(self, split, w, to_dist, config, rng) -> None:
        """Start the first repeat of (split, w), seeding its generator from ``rng`` now."""
        if (id(split), w) in self.primed:
            return
        local = np.random.default_rng(rng.integers(2**63))
        future = self.pool.submit(lambda: _draw_repeats(split, w, 1, to_dist, config, local)[0])
        self.primed[(id(split), w)] = (local, future)
