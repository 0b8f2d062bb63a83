#!/usr/bin/env python3
"""Benchmark regression gate: compare a bench_softmax run with the committed baseline.

  python3 bench/regress.py --bench build/bench/bench_softmax [--arch sm_90] [--threshold 0.05]
  python3 bench/regress.py --current run.json --baseline bench/baselines/sm_90.json
  python3 bench/regress.py --bench ... --write-baseline   (records a new baseline, deliberately)

A benchmark regresses when its median time is slower than the baseline's median by more than
the threshold (default 5%) AND the repetitions say the difference is real: a two-sided
Mann-Whitney U test over the per-repetition times at p < 0.05 (the statistics Google
Benchmark's compare.py uses). Prints a table of changes; exits 1 when anything regressed and
names it, 0 otherwise, 2 on usage errors, 77 when the bench reports no GPU.
Only the standard library is needed.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def per_repetition_times(report):
    """{benchmark name: [real_time per repetition]} from a Google Benchmark JSON report."""
    times = {}
    for b in report.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name") or b["name"]
        times.setdefault(name, []).append(float(b["real_time"]))
    return times


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def mann_whitney_p(a, b):
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    i = 0
    tie_term = 0.0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2.0 + 1.0
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    n = n1 + n2
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))))
    if sigma == 0:
        return 1.0
    z = (abs(u1 - mu) - 0.5) / sigma
    return math.erfc(max(z, 0.0) / math.sqrt(2.0))


def compare(baseline, current, threshold, alpha=0.05):
    """Rows (name, base ms, current ms, change, p, verdict) and the list of regressions."""
    rows, regressions = [], []
    for name in sorted(set(baseline) | set(current)):
        if name not in current:
            rows.append((name, median(baseline[name]), None, None, None, "missing now"))
            continue
        if name not in baseline:
            rows.append((name, None, median(current[name]), None, None, "new"))
            continue
        b, c = median(baseline[name]), median(current[name])
        change = c / b - 1.0
        p = mann_whitney_p(baseline[name], current[name])
        if change > threshold and p < alpha:
            verdict = "REGRESSED"
            regressions.append(name)
        elif change < -threshold and p < alpha:
            verdict = "faster"
        else:
            verdict = "same"
        rows.append((name, b, c, change, p, verdict))
    return rows, regressions


def run_bench(binary, repetitions, extra):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [binary, f"--benchmark_repetitions={repetitions}", "--benchmark_out_format=json",
           f"--benchmark_out={out}", "--benchmark_report_aggregates_only=false"] + extra
    rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
    if rc == 77:
        print("SKIP: the bench found no GPU")
        sys.exit(77)
    if rc != 0:
        print(f"error: {' '.join(cmd)} exited {rc}", file=sys.stderr)
        sys.exit(2)
    with open(out) as f:
        report = json.load(f)
    os.unlink(out)
    return report


def print_table(rows):
    print(f"{'benchmark':58} {'base':>10} {'now':>10} {'change':>8} {'p':>7}  verdict")
    fmt = lambda v, f: "-" if v is None else format(v, f)
    for name, b, c, change, p, verdict in rows:
        ch = "-" if change is None else f"{100 * change:+.1f}%"
        print(f"{name[:58]:58} {fmt(b, '10.4f')} {fmt(c, '10.4f')} {ch:>8} {fmt(p, '7.3f')}  {verdict}")


def self_test():
    """Checks the gate on synthetic runs (no GPU): run by tests/python/test_regress.py."""
    base = {"a": [1.00, 1.01, 0.99, 1.00, 1.02], "b": [2.0, 2.01, 1.99, 2.0, 2.02]}
    same = {"a": [1.01, 1.00, 0.99, 1.01, 1.00], "b": [2.01, 2.0, 1.98, 2.02, 2.0]}
    slow = {"a": [1.10, 1.11, 1.09, 1.12, 1.10], "b": [2.0, 2.01, 1.99, 2.0, 2.02]}
    noisy = {"a": [1.0, 1.3, 0.8, 1.2, 0.9], "b": [2.0, 2.01, 1.99, 2.0, 2.02]}
    assert compare(base, same, 0.05)[1] == []
    assert compare(base, slow, 0.05)[1] == ["a"]
    assert compare(base, noisy, 0.05)[1] == []  # slower median, but not significant
    assert mann_whitney_p([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) > 0.5
    assert mann_whitney_p([1, 2, 3, 4, 5], [10, 11, 12, 13, 14]) < 0.05
    print("regress.py self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", help="bench binary to run (bench_softmax)")
    ap.add_argument("--current", help="a JSON report instead of running the bench")
    ap.add_argument("--baseline", help="baseline JSON (default bench/baselines/ARCH.json)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--repetitions", type=int, default=7)
    ap.add_argument("--filter", default=None, help="--benchmark_filter for the bench")
    ap.add_argument("--write-baseline", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    baseline_path = args.baseline or os.path.join(here, "baselines", f"{args.arch}.json")
    extra = [f"--benchmark_filter={args.filter}"] if args.filter else []
    if args.current:
        with open(args.current) as f:
            report = json.load(f)
    elif args.bench:
        report = run_bench(args.bench, args.repetitions, extra)
    else:
        ap.error("give --bench or --current")
    if args.write_baseline:
        with open(baseline_path, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {baseline_path}")
        return 0
    if not os.path.exists(baseline_path):
        print(f"error: no baseline {baseline_path}; record one with --write-baseline", file=sys.stderr)
        return 2
    with open(baseline_path) as f:
        baseline = json.load(f)
    rows, regressions = compare(per_repetition_times(baseline), per_repetition_times(report),
                                args.threshold)
    print_table(rows)
    if regressions:
        print(f"\n{len(regressions)} regressed by more than {100 * args.threshold:.0f}%: "
              + ", ".join(regressions))
        return 1
    print(f"\nno regression beyond {100 * args.threshold:.0f}% against {baseline_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
