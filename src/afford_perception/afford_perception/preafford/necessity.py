"""PreAfford's necessity check, calibrated: push only when a direct grasp is unlikely.

The seed grasps directly when the estimated grasp success c_2 exceeds theta_g = 0.8. Our c_2 is
the mean score of the grasping critic's top proposals (``TOP_FOR_C2`` in the Table II/III
runner); the critic is trained with weighted sampling (blocked tries drawn less often than
collected), so its scores rank grasps but are not probabilities, and 0.8 on them is an arbitrary
cut: with the shipped critic it pushed 55% of the easy training objects and 95% of the easy test
ones (``bench/results/preafford-table3``).

:class:`NecessityCheck` maps that raw score to a probability by Platt scaling (a logistic curve,
two numbers) fitted on *validation states*: scenes of the training categories, easy and hard, in
the four training scene kinds, on seeds no test uses, each labelled by whether any of the
proposals lifts the object as it lies (the ``direct_ceiling`` outcome: the object is
graspable). The check's c_2 is then "the chance this object can be grasped where it lies", and
theta_g = 0.8 keeps the seed's meaning. A logistic curve rather than an isotonic map: a few
hundred states, and the map must stay monotone between them.

A calibration belongs to one grasping critic (its sha256 is stored): another critic's scores
mean something else, so using it with one is refused.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from afford_core.files import write_atomic

FORMAT = 1
KIND = "preafford-necessity"
THETA_G = 0.8
"""The seed's threshold on the estimated grasp success."""


@dataclass(frozen=True)
class NecessityCheck:
    """``p(c2_raw) = 1 / (1 + exp(-(a * c2_raw + b)))``; push while ``p < theta_g``.

    Attributes:
        a, b: The fitted curve.
        critic_sha256: The grasping critic whose scores it calibrates.
        theta_g: The threshold on the calibrated probability.
        fitted_on: Where the curve comes from (run, states, counts, command).
    """

    a: float
    b: float
    critic_sha256: str
    theta_g: float = THETA_G
    fitted_on: dict[str, Any] = field(default_factory=dict)

    def probability(self, c2_raw: float) -> float:
        """The calibrated c_2: the chance a direct grasp exists, from the critic's raw score."""
        return float(1.0 / (1.0 + np.exp(-(self.a * c2_raw + self.b))))

    def push_needed(self, c2_raw: float) -> bool:
        return self.probability(c2_raw) < self.theta_g

    @property
    def raw_threshold(self) -> float:
        """The raw score at which the calibrated c_2 equals theta_g (the check pushes below it)."""
        return float((np.log(self.theta_g / (1.0 - self.theta_g)) - self.b) / self.a)

    def check_critic(self, critic_sha256: str) -> None:
        if critic_sha256 != self.critic_sha256:
            raise ValueError(
                f"the necessity check is calibrated for the grasping critic {self.critic_sha256[:12]}, "
                f"not {critic_sha256[:12]}: calibrate it for this critic (afford preafford calibrate)"
            )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        payload = {"format": FORMAT, "kind": KIND, **asdict(self), "raw_threshold": self.raw_threshold}
        write_atomic(path, (json.dumps(payload, indent=1) + "\n").encode())
        return path


def load(path: str | Path) -> NecessityCheck:
    """Read a calibration; another kind or format is refused."""
    data = json.loads(Path(path).read_text())
    if data.get("format") != FORMAT or data.get("kind") != KIND:
        raise ValueError(
            f"{path} is not a necessity calibration of format {FORMAT} "
            f"(kind {data.get('kind')!r}, format {data.get('format')!r})"
        )
    return NecessityCheck(
        a=float(data["a"]),
        b=float(data["b"]),
        critic_sha256=str(data["critic_sha256"]),
        theta_g=float(data["theta_g"]),
        fitted_on=dict(data.get("fitted_on", {})),
    )


MIN_STATES = 20
"""Fewer validation states than this, or only one outcome among them, cannot fit two numbers."""


def fit(
    c2_raw: np.ndarray,
    graspable: np.ndarray,
    critic_sha256: str,
    theta_g: float = THETA_G,
    fitted_on: dict[str, Any] | None = None,
) -> NecessityCheck:
    """Platt scaling: the logistic curve of maximum likelihood of ``graspable`` given ``c2_raw``.

    A weak Gaussian prior on the slope (1e-3) keeps it finite when the states happen to be
    separable. Raises ValueError when there is too little to fit, or the fitted curve does not
    rise with the critic's score (a critic whose scores say nothing about graspability)."""
    from scipy.optimize import minimize

    x = np.asarray(c2_raw, dtype=float)
    y = np.asarray(graspable, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("c2_raw and graspable must be 1-D and of one length")
    if len(x) < MIN_STATES or y.min() == y.max():
        raise ValueError(
            f"{len(x)} states, {int(y.sum())} graspable: a calibration needs at least {MIN_STATES} "
            "states with both outcomes"
        )

    def loss(ab: np.ndarray) -> tuple[float, np.ndarray]:
        z = ab[0] * x + ab[1]
        # -log-likelihood of a logistic model, in a form that does not overflow.
        nll = float(np.sum(np.logaddexp(0.0, z) - y * z)) + 1e-3 * ab[0] ** 2
        r = 1.0 / (1.0 + np.exp(-z)) - y
        return nll, np.array([float(r @ x) + 2e-3 * ab[0], float(r.sum())])

    res = minimize(loss, np.zeros(2), jac=True, method="L-BFGS-B")
    a, b = (float(v) for v in res.x)
    if not res.success or a <= 0.0:
        raise ValueError(
            f"the fitted curve does not rise with the critic's score (a = {a:.3g}, {res.message}): "
            "its scores do not tell graspable states from others"
        )
    info = {"states": len(x), "graspable": int(y.sum()), **(fitted_on or {})}
    return NecessityCheck(a=a, b=b, critic_sha256=critic_sha256, theta_g=theta_g, fitted_on=info)
