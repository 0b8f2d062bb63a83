"""bench/gmm_routing.py (no GPU, no PyTorch): the Dirichlet draw matches support/support.c's,
and each --gmm-routing spec of bench/vs_torch.py gives the sizes it promises or a ValueError."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import gmm_routing  # noqa: E402
from gmm_routing import group_ends  # noqa: E402


def sizes(ends):
    return [e - s for s, e in zip([0] + ends[:-1], ends)]


class Routing(unittest.TestCase):
    def test_draw_matches_support(self):
        # pinned in tests/host/test_grouped_matmul_reference.c for support_skewed_group_ends
        self.assertEqual(gmm_routing.skewed_group_ends(8, 4096, 1.0, 7),
                         [1260, 1330, 1478, 2457, 2921, 3698, 4050, 4096])
        self.assertEqual(group_ends("dirichlet", 8, 4096), gmm_routing.skewed_group_ends(8, 4096))

    def test_bench_shape_draw(self):
        # the large shape as every bench routes it (perf-notes, forty-ninth session)
        self.assertEqual(sizes(group_ends("dirichlet", 8, 16384)),
                         [5038, 281, 592, 3916, 1857, 3107, 1409, 184])

    def test_whole(self):
        got = sizes(group_ends("whole:128", 8, 16384))
        self.assertEqual(got, [4992, 256, 640, 3968, 1920, 3072, 1408, 128])
        self.assertEqual(sum(got), 16384)
        self.assertTrue(all(x % 128 == 0 for x in got))
        self.assertEqual(group_ends("whole:1", 8, 16384), group_ends("dirichlet", 8, 16384))
        # a remainder that is no multiple of R lands on the largest group, the rest stay whole
        got = sizes(group_ends("whole:128", 8, 16390))
        self.assertEqual(sum(got), 16390)
        self.assertEqual(sum(1 for x in got if x % 128), 1)
        # many groups under R rows: some round to empty, none goes negative, the total holds
        for g, m, r in ((128, 896, 8), (64, 16384, 128), (128, 32768, 128), (8, 512, 128)):
            got = sizes(group_ends(f"whole:{r}", g, m))
            largest = got.index(max(got))
            self.assertEqual(sum(got), m)
            self.assertTrue(all(x >= 0 for x in got))
            self.assertTrue(all(x % r == 0 for i, x in enumerate(got) if i != largest))
        self.assertIn(0, sizes(group_ends("whole:128", 8, 512)))

    def test_equal(self):
        self.assertEqual(sizes(group_ends("equal", 8, 16384)), [2048] * 8)
        self.assertEqual(sizes(group_ends("equal", 3, 10)), [4, 3, 3])
        self.assertEqual(sizes(group_ends("equal", 4, 2)), [1, 1, 0, 0])

    def test_list(self):
        self.assertEqual(group_ends("3,0,5", 3, 8), [3, 3, 8])
        self.assertEqual(group_ends(" 8 ", 1, 8), [8])

    def test_bad_specs(self):
        for spec, g, m in (("3,4", 3, 7), ("3,4", 2, 8), ("-1,9", 2, 8), ("x", 2, 8),
                           ("whole:", 2, 8), ("whole:0", 2, 8), ("whole:y", 2, 8), ("", 2, 8)):
            with self.assertRaises(ValueError, msg=spec):
                group_ends(spec, g, m)


if __name__ == "__main__":
    unittest.main()
