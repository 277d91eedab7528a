#!/usr/bin/env python3
"""bench/kt_compare.py's scoring on made-up spaces (no Kernel Tuner, no GPU): the autotuning
methodology's aggregate performance score, the budgets, and the best-so-far curves it reads; and its
evo runs on a recorded landscape (from=FILE: transfer)."""
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import kt_compare  # noqa: E402


class MethodologyScore(unittest.TestCase):
    def test_random_search_expected_best_is_the_methodologys_index(self):
        # Nine times and no failure: worst first 9 .. 1; one draw is index round(1 * 10 / 2) = 5.
        m = kt_compare.MethodologyScore([float(t) for t in range(1, 10)], 0)
        self.assertEqual(m.random_best(1), 4.0)
        self.assertEqual(m.random_best(2), 2.0)     # round(2 * 10 / 3) = 7
        self.assertEqual(m.random_best(3), 1.0)     # round(3 * 10 / 4) = round(7.5) = 8 (half to even)
        self.assertEqual(m.random_best(100), 1.0)   # past the end: the optimum
        # Failures are the worst of all: with five of them, one draw is expected to fail.
        f = kt_compare.MethodologyScore([1.0, 2.0, 3.0], 5)
        self.assertIsNone(f.random_best(1))

    def test_the_optimum_scores_one_and_random_search_zero(self):
        times = [float(t) for t in range(1, 101)]
        m = kt_compare.MethodologyScore(times, 0)
        top = m.end
        optimal = [[1.0] * top for _ in range(3)]
        self.assertAlmostEqual(m.score(optimal), 1.0)
        as_random = [[m.random_best(k) for k in range(1, top + 1)]]
        self.assertAlmostEqual(m.score(as_random), 0.0)
        # Halfway between random search and the optimum at every budget: 0.5.
        half = [[(m.random_best(k) + 1.0) / 2 for k in range(1, top + 1)]]
        self.assertAlmostEqual(m.score(half), 0.5)
        # Worse than random search is below 0.
        worse = [[100.0] * top]
        self.assertLess(m.score(worse), 0.0)

    def test_the_rank_best_is_the_time_at_the_runs_average_rank(self):
        m = kt_compare.MethodologyScore([float(t) for t in range(1, 10)], 0)
        # Ranks 0, 2, 8: the mean 3.33 rounds to 3 (time 4); the median is rank 2 (time 3).
        self.assertEqual(m.rank_best([1.0, 3.0, 9.0]), 4.0)
        self.assertEqual(m.rank_best([1.0, 3.0, 9.0], "median"), 3.0)
        # Rounded half to even, as np.round: ranks 0, 1 -> 0.5 -> 0; ranks 1, 2 -> 1.5 -> 2.
        self.assertEqual(m.rank_best([1.0, 2.0]), 1.0)
        self.assertEqual(m.rank_best([2.0, 3.0]), 3.0)
        # A run with nothing valid yet is left out; none valid: no value.
        self.assertEqual(m.rank_best([math.inf, 5.0]), 5.0)
        self.assertIsNone(m.rank_best([math.inf, math.inf]))

    def test_the_rank_score_counts_configurations_faster_where_the_mean_counts_microseconds(self):
        # 99 times close to the optimum and one far slower: a run stuck at that one is one rank
        # behind a run stuck at the next slowest, where the mean of times sees it 50 times farther.
        times = [1.0 + 0.01 * t for t in range(99)] + [100.0]
        m = kt_compare.MethodologyScore(times, 0)
        top = m.end
        optimal, stuck, next_slowest = [1.0] * top, [100.0] * top, [1.98] * top
        self.assertLess(m.score([optimal] * 9 + [stuck]), m.score([optimal] * 9 + [next_slowest]) - 1.0)
        self.assertAlmostEqual(m.score_ranks([optimal] * 9 + [stuck]),
                               m.score_ranks([optimal] * 9 + [next_slowest]), delta=0.05)
        # Every run at the optimum: 1; a run as random search expects: 0, under either average.
        self.assertAlmostEqual(m.score_ranks([optimal] * 3), 1.0)
        as_random = [[m.random_best(k) for k in range(1, top + 1)]]
        self.assertAlmostEqual(m.score_ranks(as_random), 0.0)
        self.assertAlmostEqual(m.score_ranks(as_random, "median"), 0.0)
        # The median reads the typical run: three at the optimum, two stuck, still 1.
        self.assertAlmostEqual(m.score_ranks([optimal] * 3 + [stuck] * 2, "median"), 1.0)
        self.assertLess(m.score_ranks([optimal] * 2 + [stuck] * 3, "median"), 0.0)
        # A run that never finds a valid configuration is left out at each budget by the ranks,
        # while the mean of times leaves out every budget (no score).
        never = [math.inf] * top
        self.assertAlmostEqual(m.score_ranks([optimal, optimal, never]), 1.0)
        self.assertTrue(math.isnan(m.score([optimal, optimal, never])))

    def test_the_scores_standard_error_is_zero_for_identical_seeds_and_grows_with_their_spread(self):
        m = kt_compare.MethodologyScore([float(t) for t in range(1, 101)], 0)
        top = m.end
        same = [[1.0] * top for _ in range(10)]
        self.assertEqual(m.score_se(same), 0.0)
        # Half the seeds at the optimum, half as random search: the score 0.5, and 10 seeds leave
        # it uncertain by about 0.5 / sqrt(10) = 0.16.
        as_random = [m.random_best(k) for k in range(1, top + 1)]
        mixed = [[1.0] * top] * 5 + [as_random] * 5
        self.assertAlmostEqual(m.score(mixed), 0.5)
        self.assertGreater(m.score_se(mixed), 0.1)
        self.assertLess(m.score_se(mixed), 0.25)
        # Forty seeds of the same mixture: half the uncertainty.
        self.assertLess(m.score_se(mixed * 4), 0.6 * m.score_se(mixed))

    def test_budgets_where_a_seed_has_nothing_valid_are_left_out(self):
        m = kt_compare.MethodologyScore([float(t) for t in range(1, 101)], 0)
        # Nothing valid at the range's first budget: that budget is left out, the rest count.
        curve = [math.inf] * m.start + [1.0] * (m.end - m.start)
        worse_first = [math.inf] * (m.start - 1) + [50.0] + [1.0] * (m.end - m.start)
        self.assertAlmostEqual(m.score([curve]), 1.0)
        self.assertLess(m.score([worse_first]), 1.0)
        self.assertTrue(math.isnan(m.score([[math.inf] * m.end])))

    def test_the_range_is_the_papers_half_way_to_ninety_six_percent(self):
        # 1 .. 100: median 50.5. Half way: 25.75, the first at or below it worst first is 25, at
        # index 75: ceil(75 / 26) = 3; at 96 %: 1 + 49.5 * 0.04 = 2.98, 2 at index 98: ceil(98 / 3) = 33.
        m = kt_compare.MethodologyScore([float(t) for t in range(1, 101)], 0)
        self.assertEqual(m.cutoff_fevals(0.5), 3)
        self.assertEqual(m.cutoff_fevals(0.96), 33)
        self.assertEqual((m.start, m.end), (3, 33))
        # A space where all but two configurations sit far from the best: the range moves out.
        skewed = kt_compare.MethodologyScore([1.0, 2.0] + [1000.0] * 98, 0)
        self.assertEqual(skewed.start, math.ceil(98 / (101 - 98)))


class ValueOrder(unittest.TestCase):
    def test_a_reversed_landscape_lists_each_knobs_values_backwards_and_keeps_every_point(self):
        import tempfile
        landscape = os.path.join(ROOT, "tests", "data", "landscape_kt_stencil_h100.json")
        with tempfile.TemporaryDirectory() as d:
            out = kt_compare.reversed_landscape(landscape, d)
            _, names, knobs, points, best = kt_compare.load_landscape(landscape)
            _, r_names, r_knobs, r_points, r_best = kt_compare.load_landscape(out)
        self.assertEqual(r_names, names)
        self.assertTrue(any(len(v) > 1 for v in knobs.values()))
        for n in names:
            self.assertEqual(r_knobs[n], knobs[n][::-1])
        self.assertEqual(r_points, points)
        self.assertEqual(r_best, best)


class Budgets(unittest.TestCase):
    def test_small_spaces_take_shares_and_large_ones_counts(self):
        self.assertEqual(kt_compare.default_budgets(525), [27, 53, 105, 158])
        self.assertEqual(kt_compare.default_budgets(1999), [100, 200, 400, 600])
        self.assertEqual(kt_compare.default_budgets(11130), [25, 50, 100, 200])

    def test_best_curve_counts_distinct_configurations_and_failures(self):
        points = {("a",): 5.0, ("b",): None, ("c",): 3.0}
        curve = kt_compare.best_curve([("b",), ("a",), ("a",), ("c",)], 4, points.get)
        self.assertEqual(curve[:3], [math.inf, 5.0, 3.0])
        self.assertEqual(curve[3], 3.0)  # stopped after three distinct: what it had


class EvoRuns(unittest.TestCase):
    def test_from_a_landscape_is_evos_transfer_its_fastest_first(self):
        evo = os.environ.get("EVO_BINARY")
        if not evo:
            self.skipTest("EVO_BINARY is not set (ctest sets it to the evo this build made)")
        landscape = os.path.join(ROOT, "tests", "data", "landscape_synthetic.json")
        _, names, _, points, _ = kt_compare.load_landscape(landscape)
        fastest = sorted((t, k) for k, t in points.items() if t is not None)
        plain = kt_compare.run_evo(evo, landscape, "evo", 6, 0, names)
        moved = kt_compare.run_evo(evo, landscape, "evo:from=" + landscape, 6, 0, names)
        # After the baseline, the landscape's two fastest (the same space: mapped onto themselves).
        self.assertEqual(moved[1:3], [fastest[0][1], fastest[1][1]])
        self.assertNotEqual(plain[1:3], moved[1:3])
        self.assertEqual(plain[0], moved[0])  # the baseline first either way


if __name__ == "__main__":
    unittest.main()
