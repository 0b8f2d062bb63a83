"""How bench/vs_torch.py routes a grouped matmul shape's rows to its groups, without PyTorch
(tests/python/test_gmm_routing.py runs it on CI). The default is one Dirichlet draw,
skewed_group_ends, the same numbers as support_skewed_group_ends (support/support.c), so
bench_grouped_matmul, `fusedops bench grouped_matmul` and vs_torch route a shape alike;
--gmm-routing picks another (group_ends)."""
import itertools
import math

GMM_ALPHA, GMM_SEED = 1.0, 7  # the routing draw, as bench_grouped_matmul.cc's kAlpha, kSeed

_U64 = (1 << 64) - 1


def _splitmix64(seed, i):
    """splitmix64's output of the i-th (from 1) state after seed, as support/support.c's."""
    z = (seed + 0x9E3779B97F4A7C15 * i) & _U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
    return z ^ (z >> 31)


def skewed_group_ends(groups, rows, alpha=GMM_ALPHA, seed=GMM_SEED):
    """support_skewed_group_ends in Python, step for step (the same doubles, the same libm
    calls), so every tool routes a shape the same way: rows split over groups in proportions
    of a symmetric Dirichlet(alpha) draw (gamma samples by Marsaglia and Tsang, normalized),
    rounded to whole rows by largest remainder. Returns the cumulative ends."""
    count = [0]

    def uniform():  # in (0, 1)
        count[0] += 1
        return ((_splitmix64(seed, count[0]) >> 11) + 0.5) / 9007199254740992.0

    def gamma(a):
        if a < 1.0:
            g = gamma(a + 1.0)
            return g * math.pow(uniform(), 1.0 / a)
        d = a - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            u1 = uniform()
            u2 = uniform()
            x = math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)
            v = 1.0 + c * x
            if v <= 0.0:
                continue
            v = v * v * v
            if math.log(uniform()) < 0.5 * x * x + d - d * v + d * math.log(v):
                return d * v

    w = [gamma(alpha) for _ in range(groups)]
    total = 0.0
    for x in w:
        total += x
    sizes, rest = [], []
    for g in range(groups):
        exact = w[g] / total * rows if total > 0.0 else rows / groups
        whole = math.floor(exact)
        sizes.append(whole)
        rest.append((-(exact - whole), g))  # largest fraction first, ties to the lower group
    rest.sort()
    for r in range(rows - sum(sizes)):
        sizes[rest[r % groups][1]] += 1
    return list(itertools.accumulate(sizes))


ROUTINGS = ("dirichlet, equal, whole:R (the draw's sizes rounded to multiples of R), or G "
            "sizes")


def group_ends(spec, groups, rows):
    """Cumulative ends of `rows` over `groups` by a routing spec (--gmm-routing):
    "dirichlet": skewed_group_ends; "equal": rows // groups each, the first rows % groups one
    more; "whole:R": the draw's sizes rounded to multiples of R by largest remainder (a
    group's tail then fills whole row tiles; groups drawn under R rows may round to empty),
    the largest group also taking rows % R; or an explicit list "s0,s1,...", groups sizes
    summing to rows. ValueError on a bad spec."""
    spec = spec.strip()
    if spec == "dirichlet":
        return skewed_group_ends(groups, rows)
    if spec == "equal":
        sizes = [rows // groups + (1 if g < rows % groups else 0) for g in range(groups)]
    elif spec.startswith("whole:"):
        try:
            unit = int(spec[len("whole:"):])
        except ValueError:
            raise ValueError(f"routing {spec!r}: whole:R takes a whole number R") from None
        if unit < 1:
            raise ValueError(f"routing {spec!r}: R must be at least 1")
        ends = skewed_group_ends(groups, rows)
        drawn = [e - s for s, e in zip([0] + ends[:-1], ends)]
        # largest remainder in units of R: each size down to a multiple of R, then R more to
        # the groups of the largest remainders while whole units are left (ties to the lower
        # group), the last rows % R to the largest group
        sizes = [x // unit * unit for x in drawn]
        order = sorted(range(groups), key=lambda g: (-(drawn[g] - sizes[g]), g))
        for g in order[:(rows - sum(sizes)) // unit]:
            sizes[g] += unit
        sizes[max(range(groups), key=lambda g: sizes[g])] += rows - sum(sizes)
    else:
        try:
            sizes = [int(x) for x in spec.split(",")]
        except ValueError:
            raise ValueError(f"routing {spec!r}: not one of {ROUTINGS}") from None
        if len(sizes) != groups or sum(sizes) != rows or min(sizes) < 0:
            raise ValueError(f"routing {spec!r}: {len(sizes)} sizes summing to {sum(sizes)}, "
                             f"where the shape has {groups} groups of {rows} rows in all "
                             "(none negative)")
    return list(itertools.accumulate(sizes))


def uses_draw(spec):
    """Whether the routing's sizes come from the Dirichlet draw (GMM_ALPHA, GMM_SEED)."""
    spec = spec.strip()
    return spec == "dirichlet" or spec.startswith("whole:")


def describe(spec):
    """How a log names the routing: the draw, or the spec."""
    if spec.strip() == "dirichlet":
        return f"from a Dirichlet({GMM_ALPHA:g}) draw (seed {GMM_SEED})"
    return f"routed by {spec!r}"
