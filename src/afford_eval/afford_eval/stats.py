"""Statistics of a counterfactual run: Wilson intervals and scene-clustered paired bootstrap.

Success rates get 95% Wilson score intervals (well behaved at 0/n and n/n, unlike the normal
approximation). A difference between two methods is measured on the same scenes: the paired
bootstrap resamples scenes (clusters) with replacement, so scenes that share a task or an
object are not counted as independent evidence twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials; (0, 1) when n = 0 (nothing known)."""
    if n < 0 or not (0 <= k <= max(n, 0)):
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Any],
    n: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Mean difference a - b and its percentile bootstrap interval, resampling clusters.

    Args:
        a, b: Per-scene outcomes (1 success, 0 failure) of methods A and B on the same scenes.
        clusters: Cluster id of each scene (the scene id; or a task id to cluster scenes that
            share one). Each resample draws as many clusters as there are, with replacement,
            and takes every scene of each drawn cluster.
        n: Bootstrap resamples.
        seed: Seed of the resampling.
        confidence: Central coverage of the interval.

    Returns:
        (observed mean of a - b, lower bound, upper bound).
    """
    if len(a) != len(b) or len(a) != len(clusters):
        raise ValueError(
            f"a, b and clusters need one entry per scene, got {len(a)}, {len(b)}, {len(clusters)}"
        )
    x = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("no scenes to compare")
    if n < 1 or not (0.0 < confidence < 1.0):
        raise ValueError(f"need n >= 1 and 0 < confidence < 1, got {n}, {confidence}")
    ids, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    # Per cluster: sum of differences and scene count; a resample's mean is the ratio of sums.
    sums = np.bincount(inverse, weights=x, minlength=len(ids))
    counts = np.bincount(inverse, minlength=len(ids)).astype(np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(n, len(ids)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(x.mean()), float(lo), float(hi)


def method_outcomes(record: dict[str, Any], methods: Iterable[str]) -> dict[str, int]:
    """1/0 success of each method in one scene record (0 when it abstained)."""
    by_index = {c["index"]: c for c in record["candidates"]}
    out = {}
    for m in methods:
        idx = record["methods"].get(m)
        out[m] = int(idx is not None and bool(by_index[idx]["outcome"]["success"]))
    return out


def rates(records: Sequence[dict[str, Any]], z: float = 1.96) -> dict[str, dict[str, dict[str, float]]]:
    """Per suite, per method: successes ``k``, scenes ``n``, ``rate`` and Wilson ``lo``/``hi``."""
    table: dict[str, dict[str, list[int]]] = {}
    for r in records:
        per_suite = table.setdefault(r["suite"], {})
        for m, ok in method_outcomes(r, r["methods"]).items():
            per_suite.setdefault(m, []).append(ok)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for suite, per_method in table.items():
        out[suite] = {}
        for m, oks in per_method.items():
            k, n = sum(oks), len(oks)
            lo, hi = wilson(k, n, z)
            out[suite][m] = {"k": k, "n": n, "rate": k / n if n else 0.0, "lo": lo, "hi": hi}
    return out


def compare(
    records: Sequence[dict[str, Any]], method_a: str, method_b: str, n: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """Paired, scene-clustered bootstrap of success(A) - success(B) over ``records``."""
    outs = [method_outcomes(r, (method_a, method_b)) for r in records]
    clusters = [f"{r['suite']}/{r['scene']}" for r in records]
    a = [o[method_a] for o in outs]
    b = [o[method_b] for o in outs]
    return paired_bootstrap(a, b, clusters, n=n, seed=seed)
