"""One configuration system: typed dataclasses from YAML, overrides and flat (ROS) parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from afford_core import config as cfg


@dataclass(frozen=True)
class Inner:
    """Inner settings.

    Attributes:
        gain: How strong.
        box: A box corner (x, y, z).
    """

    gain: float = 1.0
    box: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if self.gain <= 0:
            raise ValueError("gain must be positive")


@dataclass
class Outer:
    """Outer settings.

    Attributes:
        mode: Which way.
        count: How many.
        names: What to run, in order.
        inner: The inner part.
        note: A remark, or None.
    """

    mode: Literal["fast", "slow"] = "fast"
    count: int = 3
    names: tuple[str, ...] = ("a", "b")
    inner: Inner = field(default_factory=Inner)
    note: str | None = None


def test_round_trip_through_dict_and_yaml(tmp_path: Path) -> None:
    c = Outer(mode="slow", names=("x",), inner=Inner(gain=2.5, box=(1.0, 2.0, 3.0)))
    assert cfg.from_dict(Outer, cfg.to_dict(c)) == c
    path = cfg.write_resolved(c, tmp_path / "run" / "config.yaml")
    assert path.read_text().startswith("# Resolved configuration (Outer)")
    assert cfg.load(Outer, path) == c


def test_overrides_use_the_dotted_names_and_validate_again() -> None:
    c = cfg.apply_overrides(Outer(), ["count=5", "inner.gain=0.5", "inner.box=[1, 2, 3]", "note=hi"])
    assert c == Outer(count=5, inner=Inner(gain=0.5, box=(1.0, 2.0, 3.0)), note="hi")
    assert isinstance(c.inner.box[0], float)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("cnt=1", "unknown setting 'cnt'; known here: count, inner, mode, names, note"),
        ("mode=turbo", "'turbo' is not one of 'fast', 'slow'"),
        ("inner.gain=-1", "gain must be positive"),
        ("inner.box=[1, 2]", "expected 3 values"),
        ("count=many", "expected an integer"),
        ("inner=3", "expected a mapping"),
        ("count", "must look like key.sub=value"),
    ],
)
def test_a_bad_setting_is_refused_with_where_and_why(override: str, message: str) -> None:
    with pytest.raises(cfg.ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        cfg.apply_overrides(Outer(), [override])


def test_flatten_and_unflatten_give_ros_style_parameters() -> None:
    flat = cfg.flatten(Outer())
    assert flat["inner.gain"] == 1.0 and flat["inner.box"] == [0.0, 0.0, 0.0] and flat["names"] == ["a", "b"]
    assert cfg.unflatten(Outer, {"inner.gain": 4.0, "mode": "slow"}) == Outer(
        mode="slow", inner=Inner(gain=4.0)
    )


def test_numpy_values_become_plain_data() -> None:
    @dataclass
    class WithArray:
        pose: np.ndarray = field(default_factory=lambda: np.eye(2))

    data = cfg.to_dict(WithArray())
    assert data == {"pose": [[1.0, 0.0], [0.0, 1.0]]}
    assert np.array_equal(cfg.from_dict(WithArray, data).pose, np.eye(2))


def test_field_docs_read_the_attributes_section() -> None:
    docs = cfg.field_docs(Outer)
    assert docs["mode"] == "Which way." and docs["note"] == "A remark, or None."
