"""A stand-in for MiniLM in tests that only need distinct, repeatable text vectors."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def hashed_unit_vectors(texts: Sequence[str], dim: int = 16) -> np.ndarray:
    """One unit vector per text, seeded by the text's SHA-256: the same text, the same vector."""
    rows = []
    for t in texts:
        seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).normal(size=dim)
        rows.append(v / np.linalg.norm(v))
    return np.array(rows)
