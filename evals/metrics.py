"""The statistics of a benchmark: intervals, pass@k, and tests for differences.

Plain functions over counts, no scipy: Wilson score intervals (they stay inside [0, 1]
and behave at 0/n and n/n, unlike the normal approximation), the unbiased pass@k
estimator of Chen et al. (2021), and Fisher's exact test for two proportions (exact
at the small counts a per-quirk comparison has).
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of successes / n (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k audits drawn from n succeeds), with c of the n successes."""
    if k <= 0 or n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def fisher_exact(a_successes: int, a_n: int, b_successes: int, b_n: int) -> float:
    """Two-sided p-value of Fisher's exact test that two proportions are equal.

    Sums the hypergeometric probabilities of every table with the same margins that
    is no more likely than the observed one (the usual two-sided definition).
    """
    total_successes = a_successes + b_successes
    total = a_n + b_n
    if a_n == 0 or b_n == 0 or total_successes in (0, total):
        return 1.0
    denominator = math.comb(total, total_successes)

    def probability(x: int) -> float:
        return math.comb(a_n, x) * math.comb(b_n, total_successes - x) / denominator

    observed = probability(a_successes)
    low, high = max(0, total_successes - b_n), min(a_n, total_successes)
    p = sum(q for x in range(low, high + 1) if (q := probability(x)) <= observed * (1 + 1e-9))
    return min(1.0, p)
