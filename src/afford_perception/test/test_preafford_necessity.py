"""PreAfford's necessity check, calibrated (issue 13): a logistic curve from the critic's raw
score to the chance the object can be grasped where it lies, fitted on validation states."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from afford_perception.preafford import necessity, weights_dir
from afford_perception.preafford.necessity import fit, load


def _states(n: int, a: float, b: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    return x, rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(a * x + b)))


def test_fit_recovers_the_curve_the_states_were_drawn_from() -> None:
    x, y = _states(4000, 10.0, -6.0)
    check = fit(x, y, "c" * 64)
    assert check.a == pytest.approx(10.0, rel=0.15) and check.b == pytest.approx(-6.0, rel=0.15)
    # theta_g is met exactly at the raw threshold; the check pushes below it and not above.
    assert check.probability(check.raw_threshold) == pytest.approx(necessity.THETA_G)
    assert check.push_needed(check.raw_threshold - 0.01) and not check.push_needed(check.raw_threshold + 0.01)
    assert check.fitted_on == {"states": 4000, "graspable": int(y.sum())}


def test_a_calibration_reloads_the_same_and_refuses_another_critic(tmp_path: Path) -> None:
    x, y = _states(200, 8.0, -4.0)
    check = fit(x, y, "a" * 64, fitted_on={"run": "val"})
    back = load(check.save(tmp_path / "n.json"))
    assert back == check
    stored = json.loads((tmp_path / "n.json").read_text())
    assert stored["raw_threshold"] == pytest.approx(check.raw_threshold)
    back.check_critic("a" * 64)
    with pytest.raises(ValueError, match="calibrated for the grasping critic aaaa"):
        back.check_critic("b" * 64)
    (tmp_path / "other.json").write_text(json.dumps({"format": 1, "kind": "something else"}))
    with pytest.raises(ValueError, match="not a necessity calibration"):
        load(tmp_path / "other.json")


def test_too_little_or_uninformative_data_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 20 states"):
        fit(np.linspace(0, 1, 10), np.arange(10) > 4, "c")
    with pytest.raises(ValueError, match="both outcomes"):
        fit(np.linspace(0, 1, 50), np.ones(50, bool), "c")
    # Graspable exactly when the critic scores low: the score says the opposite of graspability.
    x = np.linspace(0, 1, 60)
    with pytest.raises(ValueError, match="does not rise with the critic's score"):
        fit(x, x < 0.5, "c")


def test_separable_states_give_a_finite_curve() -> None:
    x = np.linspace(0, 1, 40)
    check = fit(x, x > 0.5, "c")
    assert np.isfinite(check.a) and 0.3 < check.raw_threshold < 0.8


def test_the_shipped_calibration_is_for_the_shipped_critic() -> None:
    """The shipped ``necessity.json`` was fitted for the shipped grasping critic, on training
    categories only, and its curve pushes the lowest scores and grasps directly at the highest."""
    from afford_eval.runs import sha256_file

    check = load(weights_dir() / "necessity.json")
    check.check_critic(sha256_file(weights_dir() / "grasp_critic.pt"))
    assert check.theta_g == necessity.THETA_G
    assert check.push_needed(0.0) and not check.push_needed(1.0)
    assert check.fitted_on["states"] >= 100
    assert not set(check.fitted_on["categories"]) & {"phone", "pliers", "switch", "window", "cup", "jar",
                                                     "remote", "soap"}
