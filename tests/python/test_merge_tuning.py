"""scripts/merge_tuning.py on small tables (no GPU): which lines a merge replaces, where new
buckets go, device tags, header notes, idempotence."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import merge_tuning  # noqa: E402

TABLE = """# Tuned winners (docs/tuning.md). Columns: arch, op, dtype, bucket, winner.
# A bucket may have several lines.
# part one: measured somewhere.
sm_90\tsoftmax\tbf16\t1x32\tA\t1.0\tB\t1.1
sm_90\tsoftmax\tbf16\t1x32\tA1\t1.2\t-\t0
sm_90\tsoftmax\tbf16\t2x32\tC\t1.0\t-\t0
sm_90\tnorm\tbf16\t1x32\tN\t1.0\t-\t0
""".splitlines()

TUNE_OUT = """# NVIDIA H200: sm_90, 132 SMs, peak memory bandwidth 4814 GB/s (tag: sm_90@4814)
arch\top\tdtype\tbucket\tvariant\ttime_us\trunner_up\trunner_up_us
sm_90\tsoftmax\tbf16\t1x32\tX\t0.9\t-\t0
sm_90\tsoftmax\tbf16\t4x32\tY\t0.9\t-\t0
"""


def entries(lines):
    return [line for line in lines if not line.startswith("#")]


class MergeTest(unittest.TestCase):
    def new_file(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_replaces_a_buckets_lines_and_places_new_buckets(self):
        new = merge_tuning.read_new(self.new_file(TUNE_OUT), tag=False)
        merged, replaced, added = merge_tuning.merge(TABLE, new)
        self.assertEqual((replaced, added), (2, 1))
        self.assertEqual([line.split("\t")[4] for line in entries(merged)], ["X", "C", "Y", "N"])
        self.assertEqual(merged[:3], TABLE[:3])  # comments kept

    def test_tag_keeps_lines_to_the_device_beside_the_plain_ones(self):
        new = merge_tuning.read_new(self.new_file(TUNE_OUT), tag=True)
        self.assertTrue(all(line.startswith("sm_90@4814\t") for line in new))
        merged, replaced, added = merge_tuning.merge(TABLE, new)
        self.assertEqual((replaced, added), (0, 2))
        self.assertEqual(entries(merged)[:4], entries(TABLE))  # plain lines untouched
        self.assertEqual([line.split("\t")[4] for line in entries(merged)[4:]], ["X", "Y"])
        # merging the same measurement again changes nothing
        again, replaced, added = merge_tuning.merge(merged, new)
        self.assertEqual((again, replaced, added), (merged, 2, 0))

    def test_tag_needs_the_device_line(self):
        path = self.new_file(TUNE_OUT.split("\n", 1)[1])
        with self.assertRaises(SystemExit):
            merge_tuning.read_new(path, tag=True)

    def test_rejects_short_lines(self):
        with self.assertRaises(SystemExit):
            merge_tuning.read_new(self.new_file("sm_90\tsoftmax\tbf16\n"), tag=False)

    def test_note_after_the_first_sentence(self):
        merged, _, _ = merge_tuning.merge(TABLE, [], note="new part: measured here.")
        self.assertEqual(merged[1], "# new part: measured here.")
        self.assertEqual(merged[0], TABLE[0])
        self.assertEqual(entries(merged), entries(TABLE))

    def test_main_writes_the_table(self):
        table = self.new_file("\n".join(TABLE) + "\n")
        new = self.new_file(TUNE_OUT)
        self.assertEqual(merge_tuning.main([table, new, "--check"]), 0)
        with open(table) as f:
            self.assertEqual(f.read().splitlines(), TABLE)  # --check writes nothing
        self.assertEqual(merge_tuning.main([table, new, "--tag"]), 0)
        with open(table) as f:
            self.assertEqual(len(entries(f.read().splitlines())), 6)


if __name__ == "__main__":
    unittest.main()
