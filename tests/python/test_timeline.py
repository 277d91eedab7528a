#!/usr/bin/env python3
"""bench/timeline.py's arithmetic on stamps made up here (no GPU): segment medians, the softmax concurrency
shares, the producer's figures, which steps count as steady, and an item's boundary event by event."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import timeline  # noqa: E402


def stamps(n_steps, offsets, period=1000, softmax=(300, 900)):
    """One block; consumer warpgroup w starts each step at period * g + offsets[w]."""
    tr = [[[[0] * 8 for _ in range(64)] for _ in range(4)]]
    for w, off in enumerate(offsets):
        for g in range(1, n_steps):
            b = period * g + off + 10
            tr[0][w][g][:7] = [b, b + 5, b + 50, b + softmax[0], b + softmax[1], b + 950, b + 990]
    pw = len(offsets)  # the producer warpgroup follows the consumers
    for g in range(n_steps):
        tr[0][pw][g][:3] = [period * g, period * g + 100, period * g + 400]
    return tr


class Timeline(unittest.TestCase):
    def test_segments_are_the_gaps_between_stamps(self):
        med, share, n = timeline.analyse(stamps(22, (0, 500)), 2, {"WG_PIPE": 1}, 22, 1)
        self.assertEqual(med["operands"], 10)   # previous END (+990) to READY (+1010)
        self.assertEqual(med["turn"], 5)
        self.assertEqual(med["issue"], 45)
        self.assertEqual(med["S wait"], 250)
        self.assertEqual(med["softmax"], 600)
        self.assertEqual(med["PV wait"], 50)
        self.assertEqual(med["tail"], 40)
        self.assertEqual(med["step"], 1000)
        self.assertEqual(n, 2 * 18)  # steps 2 .. 19 of 22 (two at each end of the item left out), both warpgroups

    def test_without_wg_pipe_the_s_wait_covers_both_products(self):
        med, _, _ = timeline.analyse(stamps(22, (0, 500)), 2, {"WG_PIPE": 0}, 22, 1)
        self.assertEqual(med["S wait"], 950 - 50)     # ISSUED to the P·V stamp
        self.assertEqual(med["softmax"], 900 - 950)   # (the made-up order is WG_PIPE=1's)
        self.assertEqual(med["PV wait"], 0)

    def test_concurrency_shares(self):
        # softmax [310, 910) and [810, 1410) a step: 200 of 1000 clocks both, never none
        _, share, _ = timeline.analyse(stamps(22, (0, 500)), 2, {"WG_PIPE": 1}, 22, 1)
        self.assertAlmostEqual(share[2], 0.2, places=2)
        self.assertAlmostEqual(share[0], 0.0, places=2)
        self.assertAlmostEqual(sum(share), 1.0, places=6)
        # in step: both softmaxes together 60 % of the time, none 40 %
        _, share, _ = timeline.analyse(stamps(22, (0, 0)), 2, {"WG_PIPE": 1}, 22, 1)
        self.assertAlmostEqual(share[2], 0.6, places=2)
        self.assertAlmostEqual(share[0], 0.4, places=2)

    def test_producer(self):
        prod = timeline.producer(stamps(22, (0, 500)), 2, 22)
        self.assertEqual(prod, {"stage wait": 100, "rewrite": 300, "tile": 1000})

    def test_item_gap(self):
        # two items of 10 tiles a block (PERSIST): the second item's steps start 3000 clocks later
        tr = stamps(20, (0, 500))
        for w in range(2):
            for g in range(11, 20):
                tr[0][w][g] = [x + 3000 if x else 0 for x in tr[0][w][g]]
        # item 0's last step is 9 (END 9000 + 10 + 990), item 1's first traced step is 11 (READY 11000 + 10 + 3000)
        self.assertEqual(timeline.item_gap(tr, 10, 2), (11000 + 10 + 3000) - (9000 + 10 + 990))
        self.assertNotEqual(timeline.item_gap(tr, 10, 1), timeline.item_gap(tr, 10, 1))  # one item: NaN

    def test_boundary_events_after_the_last_step(self):
        # two items of 10 tiles (PERSIST): the boundary's stamps sit at ring position 10, the next item's first tile
        tr = stamps(20, (0, 500))
        for w in range(2):
            end = tr[0][w][9][6]  # the finished item's last step packed its P
            tr[0][w][10] = [end + 100 * (i + 1) for i in range(8)]  # TB_END .. TB_P, 100 clocks apart
            tr[0][w][10][4] = 0  # no Q stamp (waited for at the item's top, say)
        tr[0][2][10][3:5] = [tr[0][0][9][6] - 900, tr[0][0][9][6] - 400]  # the producer's Q: before the step ended
        b = timeline.boundary(tr, 2, 10, 2)
        self.assertEqual(b["last P·V issued"], 200)
        self.assertEqual(b["O stored"], 400)
        self.assertEqual(b["P_0 packed"], 800)
        self.assertNotIn("next Q in", b)  # a missing stamp is left out, not a zero
        self.assertEqual(b["next step"], (11000 + 10) - (9000 + 10 + 990))
        self.assertEqual(b["producer: Q buffer wait from"], -900)
        self.assertEqual(b["producer: Q copies issued"], -400)
        self.assertEqual(timeline.boundary(tr, 2, 10, 1), {})  # one item a block: no boundary

    def test_no_stamps_gives_nan_not_zero(self):
        med, share, n = timeline.analyse(stamps(1, (0, 0)), 2, {"WG_PIPE": 1}, 22, 1)
        self.assertEqual(n, 0)
        self.assertNotEqual(med["step"], med["step"])  # NaN


if __name__ == "__main__":
    unittest.main()
