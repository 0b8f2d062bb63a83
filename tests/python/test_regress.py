"""The benchmark regression gate (bench/regress.py) on synthetic runs: no GPU needed."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REGRESS = os.path.join(HERE, "..", "..", "bench", "regress.py")
sys.path.insert(0, os.path.dirname(REGRESS))
import regress  # noqa: E402


def report(times):
    return {"benchmarks": [{"name": f"{n}/repeats:{len(ts)}", "run_name": n, "run_type": "iteration",
                            "real_time": t} for n, ts in times.items() for t in ts]}


class RegressTest(unittest.TestCase):
    def run_gate(self, base, now):
        with tempfile.TemporaryDirectory() as d:
            b, c = os.path.join(d, "base.json"), os.path.join(d, "now.json")
            json.dump(report(base), open(b, "w"))
            json.dump(report(now), open(c, "w"))
            p = subprocess.run([sys.executable, REGRESS, "--baseline", b, "--current", c],
                               capture_output=True, text=True)
            return p.returncode, p.stdout

    def test_same_run_passes(self):
        base = {"softmax/bf16/8192x8192": [78.1, 78.6, 78.3, 78.9, 78.2]}
        rc, out = self.run_gate(base, base)
        self.assertEqual(rc, 0, out)

    def test_slowed_variant_fails_and_is_named(self):
        base = {"softmax/bf16/8192x8192": [78.1, 78.6, 78.3, 78.9, 78.2],
                "softmax/f32/4096x4096": [36.0, 36.2, 36.1, 36.3, 35.9]}
        now = {"softmax/bf16/8192x8192": [88.0, 88.4, 87.9, 88.8, 88.1],
               "softmax/f32/4096x4096": [36.1, 36.0, 36.2, 36.1, 36.0]}
        rc, out = self.run_gate(base, now)
        self.assertEqual(rc, 1, out)
        self.assertIn("REGRESSED", out)
        self.assertIn("softmax/bf16/8192x8192", out.split("regressed by")[1])
        self.assertNotIn("softmax/f32/4096x4096", out.split("regressed by")[1])

    def test_noise_is_not_a_regression(self):
        base = {"x": [1.0, 1.01, 0.99, 1.0, 1.02]}
        now = {"x": [1.0, 1.3, 0.8, 1.2, 0.9]}
        self.assertEqual(regress.compare(base, now, 0.05)[1], [])


if __name__ == "__main__":
    unittest.main()
