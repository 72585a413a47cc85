"""The grounding interface: a source scores how much each observed point belongs to a named part.

Every source (the simulator's exact labels, the geometric partition, the learned model)
answers the same question, ``ground(cloud, part) -> scores``, so the planner, the benchmark and
the ROS node never know which one they talk to. Sources are created by name through a small
registry; a new source is one decorator on its class.

Input checks live here, once, in :meth:`GroundingSource.ground`, so every source fails the
same way on bad input: an unknown category or part, an empty or non-finite cloud.
"""

from __future__ import annotations

import importlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from afford_core.ontology import category
from afford_core.types import ObjectCloud


class GroundingError(ValueError):
    """A grounding source cannot answer for this cloud (e.g. the oracle without labels)."""


@dataclass(frozen=True)
class GroundingResult:
    """One grounded region with how it was obtained.

    Attributes:
        scores: (N,) per-point membership of ``part`` in [0, 1], aligned with the cloud's points.
        mask: (N,) bool, ``scores >= threshold``: the region the planner samples grasps in.
        part: The ontology part that was grounded.
        source: Name of the source that produced the scores.
        threshold: Score threshold that made ``mask``.
        seconds: Wall time of the ``ground`` call (the latency budget of the perception loop).
    """

    scores: np.ndarray
    mask: np.ndarray
    part: str
    source: str
    threshold: float
    seconds: float

    @property
    def count(self) -> int:
        """Number of points in the region; zero means the part was not found in this view."""
        return int(self.mask.sum())


def region_mask(scores: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Boolean region of the points whose score reaches ``threshold`` (in (0, 1])."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be a 1-D per-point array, got shape {scores.shape}")
    return scores >= threshold


class GroundingSource(ABC):
    """Scores the points of an object cloud by membership of a named ontology part.

    Subclasses implement :meth:`_ground`; callers use :meth:`ground` (validated) or
    :meth:`region` (validated, thresholded and timed).
    """

    #: Registry name; set by :func:`register_source`.
    name: str = ""

    def ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        """Per-point scores in [0, 1], shape (N,), for ``part`` of ``cloud.category``.

        Raises:
            KeyError: the category is unknown, or it has no part called ``part`` (the
                message lists the category's parts).
            ValueError: the cloud is empty or holds non-finite points.
            GroundingError: this source cannot ground this cloud (see the source).
        """
        check_query(cloud, part)
        scores = np.asarray(self._ground(cloud, part), dtype=np.float64)
        if scores.shape != (len(cloud),):
            raise RuntimeError(
                f"source {self.name!r} returned scores of shape {scores.shape} for {len(cloud)} points"
            )
        # Clip, not assert: a soft score a hair outside [0, 1] from float arithmetic is harmless.
        return np.clip(scores, 0.0, 1.0)

    def region(self, cloud: ObjectCloud, part: str, threshold: float = 0.5) -> GroundingResult:
        """Ground ``part`` and threshold it into a region, timing the call."""
        t0 = time.perf_counter()
        scores = self.ground(cloud, part)
        seconds = time.perf_counter() - t0
        return GroundingResult(
            scores=scores, mask=region_mask(scores, threshold), part=part, source=self.name,
            threshold=threshold, seconds=seconds,
        )

    @abstractmethod
    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        """Scores for an already validated query; may return values slightly outside [0, 1]."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def check_query(cloud: ObjectCloud, part: str) -> None:
    """Raise a clear error when ``part`` cannot be asked of ``cloud``."""
    info = category(cloud.category)  # KeyError listing the known categories
    if part not in info.parts:
        raise KeyError(f"{info.name} has no part {part!r}; its parts are: {', '.join(info.parts)}")
    points = np.asarray(cloud.points)
    if points.ndim != 2 or points.shape[1] != 3 or len(points) == 0:
        raise ValueError(f"empty cloud for {info.name!r}: nothing of the object was observed")
    if not np.all(np.isfinite(points)):
        raise ValueError(f"cloud for {info.name!r} contains NaN or infinite points")


# --- registry --------------------------------------------------------------------------------

SourceT = TypeVar("SourceT", bound=type[GroundingSource])

# name -> the class, or "module:attr" for a source whose module is imported on first use (so a
# learned model with heavy dependencies costs nothing until someone asks for it).
_REGISTRY: dict[str, type[GroundingSource] | str] = {}


def register_source(name: str) -> Callable[[SourceT], SourceT]:
    """Class decorator that makes a source available to :func:`make_source` under ``name``.

    Usage: ``@register_source("learned")`` above ``class LearnedSource(GroundingSource)``.
    """
    if not name or not name.isidentifier():
        raise ValueError(f"source name must be a non-empty identifier, got {name!r}")

    def decorate(cls: SourceT) -> SourceT:
        if not (isinstance(cls, type) and issubclass(cls, GroundingSource)):
            raise TypeError(f"@register_source({name!r}) must decorate a GroundingSource subclass")
        known = _REGISTRY.get(name)
        if isinstance(known, type) and known is not cls:
            raise ValueError(f"grounding source {name!r} is already registered by {known.__name__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def register_lazy_source(name: str, target: str) -> None:
    """Register ``name`` as ``"package.module:ClassName"``, imported on the first ``make_source``.

    Meant for sources with heavy imports (torch); the module must apply ``@register_source``
    with the same name or at least define the class named in ``target``.
    """
    if ":" not in target:
        raise ValueError(f"lazy source target must be 'module:ClassName', got {target!r}")
    _REGISTRY.setdefault(name, target)


def available_sources() -> list[str]:
    """Names accepted by :func:`make_source`, sorted."""
    return sorted(_REGISTRY)


def make_source(name: str, **kwargs: Any) -> GroundingSource:
    """A new grounding source by registry name; ``kwargs`` go to its constructor.

    Raises:
        KeyError: ``name`` is not registered (the message lists the known names).
    """
    try:
        entry = _REGISTRY[name]
    except KeyError:
        raise KeyError(
            f"unknown grounding source {name!r}; known: {', '.join(available_sources()) or 'none'}"
        ) from None
    if isinstance(entry, str):
        module_name, attr = entry.split(":", 1)
        cls = getattr(importlib.import_module(module_name), attr)
        cls.name = name
        _REGISTRY[name] = cls
        entry = cls
    return entry(**kwargs)
