"""Statistics the benchmark scripts share (imported by the Python their
reports run): a one-sided Mann-Whitney U test on the rounds of two
programs, and the verdicts built on it."""

import math

# The significance below which a difference counts (one-sided).
ALPHA = 0.01


def p_greater(x, y):
    """One-sided p-value of the Mann-Whitney U test that values of x tend
    to be greater than values of y (normal approximation, ties averaged,
    continuity correction); 1 when either sample is too small."""
    n1, n2 = len(x), len(y)
    if n1 < 4 or n2 < 4:
        return 1.0
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    n = n1 + n2
    ranks, ties, i = [0.0] * n, 0.0, 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, pooled) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (u1 - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def verdict(ox, peers, worse_is_greater):
    """'slower' when oxmpi's rounds are significantly worse than either
    peer's, 'faster' when significantly better than both, else 'level';
    '-' without samples."""
    if not ox or not peers:
        return "-"
    sign = 1 if worse_is_greater else -1
    mine = [sign * v for v in ox]
    theirs = [[sign * v for v in p] for p in peers]
    if any(p_greater(mine, p) < ALPHA for p in theirs):
        return "slower"
    if all(p_greater(p, mine) < ALPHA for p in theirs):
        return "faster"
    return "level"


def target(ox, floor, factor, worse_is_greater):
    """Whether oxmpi's rounds meet a target set relative to a floor's
    rounds: each floor round times `factor` (1.10: within 10% of a time;
    0.95: within 5% of a bandwidth). 'met' when oxmpi is significantly on
    the good side of that line, 'missed' when significantly on the bad
    side, 'unclear' otherwise; '-' without samples."""
    if not ox or not floor:
        return "-"
    line = [factor * v for v in floor]
    sign = 1 if worse_is_greater else -1
    mine, theirs = [sign * v for v in ox], [sign * v for v in line]
    if p_greater(mine, theirs) < ALPHA:
        return "missed"
    if p_greater(theirs, mine) < ALPHA:
        return "met"
    return "unclear"
