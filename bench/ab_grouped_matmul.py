"""Two or more libfusedops builds' tile_grouped_matmul in one process, on the same inputs.

An A/B of a kernel change: each library is loaded once (its own copy of the kernels), every
one runs the same grouped products on the same tensors, checked against float64 rows (as
vs_torch.py checks ours), then timed by vs_torch.py's steady-state timer in rounds with the
libraries' order rotated, the SM clock and board power sampled (nvidia-smi) over each timed
window. Libraries timed in alternating processes see the card drift between them; here they
share it. Giving one library twice under two names (two copies of the file: the loader keeps
one mapping a path) is an A/A run, which measures what the harness resolves (within 0.2% on an
H200: docs/perf-notes.md, G31).

    PYTHONPATH=python python3 bench/ab_grouped_matmul.py base=OLD/libfusedops.so \\
        new=build/libfusedops.so [--shapes 8x16384x4096x14336,...] [--routing dirichlet] \\
        [--layouts kn,nk] [--dtype bf16] [--rounds 3]

Prints one line a shape and layout: each library's median TFLOP/s (its rounds), SM MHz and
board W, and its ratio to the first library's; exits 1 if any library gave wrong results.
"""
import argparse
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vs_torch  # noqa: E402  (the timer, the clock sampler, the grouped matmul case)
import gmm_routing  # noqa: E402


def parse_libraries(items):
    """{name: path} from NAME=PATH arguments, in order; names and paths distinct."""
    libs = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"{item!r}: give each library as NAME=PATH")
        if name in libs:
            raise SystemExit(f"library name {name!r} given twice")
        real = os.path.realpath(path)
        if any(os.path.realpath(p) == real for p in libs.values()):
            raise SystemExit(f"{path}: given twice (for an A/A run, copy the file: the loader "
                             "maps one path once)")
        libs[name] = os.path.abspath(path)  # a path, not a name for the loader's search
    if len(libs) < 2:
        raise SystemExit("give at least two libraries (NAME=PATH NAME=PATH ...)")
    return libs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libraries", nargs="+", help="NAME=PATH of each libfusedops.so")
    ap.add_argument("--shapes", default=",".join(vs_torch.gmm_shape_name(s)
                                                 for s in vs_torch.GROUPED_MATMUL_SHAPES))
    ap.add_argument("--routing", default="dirichlet",
                    help="group sizes: " + gmm_routing.ROUTINGS + " (default dirichlet)")
    ap.add_argument("--layouts", default="kn,nk", help="B layouts: kn, nk or both")
    ap.add_argument("--dtype", default="bf16", choices=sorted(vs_torch.GMM_TOL))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    layouts = [x.strip() for x in args.layouts.split(",") if x.strip()]
    if not layouts or any(x not in ("kn", "nk") for x in layouts):
        raise SystemExit(f"--layouts {args.layouts!r}: kn, nk or kn,nk")
    paths = parse_libraries(args.libraries)
    libs = {name: vs_torch.FusedOps(path) for name, path in paths.items()}
    for lib in libs.values():
        vs_torch.make_context_current(lib)
    timer = vs_torch.Timer(5)
    if shutil.which("nvidia-smi"):  # else no clocks, as vs_torch.py --clocks
        timer.sampler = vs_torch.ClockSampler(torch.cuda.current_device())
    try:
        return compare(args, layouts, libs, timer)
    finally:
        if timer.sampler is not None:
            timer.sampler.close()


def compare(args, layouts, libs, timer):
    """Times every shape and layout; returns the exit status (1: a library was wrong)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
    print(f"{props.name}; {args.dtype}; routing {gmm_routing.describe(args.routing)}; "
          f"{args.rounds} rounds; ratios to the first library given: {next(iter(libs))}",
          flush=True)
    wrong = 0
    for shape in vs_torch.parse_gmm_shapes(args.shapes):
        for layout in layouts:
            case = vs_torch.GroupedMatmulCase(args.dtype, shape, layout == "nk", args.routing)
            copies, batch = vs_torch.rotation(case.set_bytes, case.set_bytes, l2_bytes)
            case.setup(copies)
            structs = [case.args(i) for i in range(copies)]
            rows, want = case.reference_rows()
            launches, variants = {}, {}
            for name, lib in libs.items():
                variants[name], launches[name] = vs_torch.warm_ours(
                    lib, "tile_grouped_matmul", structs, case.cs)
                ok, err = vs_torch.gmm_close(case.cs[0][rows], want, case.tol)
                if not ok:
                    wrong += 1
                    print(f"  {name}: WRONG RESULTS on {case.name()} {layout} (max abs error "
                          f"{err:.3g} against float64)", flush=True)
            res = {"providers": {}}

            def tflops(ms):
                return case.flops / (ms * 1e-3) / 1e12

            def record(name, ms, **extra):
                res["providers"][name] = {"ms": ms, "tflops": tflops(ms), **extra}
            vs_torch.record_in_rounds(res, record, timer, launches, {n: {} for n in launches},
                                      copies, batch, rounds=args.rounds)
            first = res["providers"][next(iter(libs))].get("tflops")
            parts = []
            for name in libs:
                p = res["providers"][name]
                if p.get("ms") is None:
                    parts.append(f"{name} failed ({p.get('error')})")
                    continue
                rounds = " ".join(f"{tflops(t):.1f}" for t in p["rounds_ms"])
                ratio = f" {p['tflops'] / first:.3f}x" if first else ""
                parts.append(f"{name} {p['tflops']:.1f} ({rounds}) {p.get('sm_mhz', 0):.0f} MHz "
                             f"{p.get('board_w', 0):.0f} W{ratio}")
            names = sorted(set(variants.values()))
            print(f"{case.name()} {layout} | " + " | ".join(parts) + " | " + ", ".join(names),
                  flush=True)
            case.release()
            torch.cuda.empty_cache()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
