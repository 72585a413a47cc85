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
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

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
    #: Whether the source itself tells alike parts stacked one above the other apart (the
    #: ontology's ``stacked``: a chest's drawer handles). One that scores them alike (a model
    #: that decodes a part from what it affords) has :func:`pick_stacked` choose by height.
    tells_stacked_apart: bool = True

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
        if not self.tells_stacked_apart:
            scores = pick_stacked(cloud, part, scores)
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


#: Two alike stacked parts (a chest's handles, a drawer height apart) are separate clusters at
#: this linking radius (m); a bar handle's own points are far closer together.
STACK_LINK_M = 0.02
#: A cluster smaller than this share of the region is noise, not one of the stacked parts.
STACK_MIN_SHARE = 0.05
#: Clusters whose middles are closer in height than this (m) are one part in pieces: stacked
#: parts are a drawer apart (11 cm or more on the chest).
STACK_LEVEL_M = 0.04


def clusters(points: np.ndarray, radius: float) -> np.ndarray:
    """Connected-component label per point, linking points closer than ``radius``."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64)
    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    n = len(points)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def pick_stacked(cloud: ObjectCloud, part: str, scores: np.ndarray) -> np.ndarray:
    """``scores`` kept only on ``part`` itself when it is one of a stack of alike parts (the
    ontology's ``stacked``) that the scores do not tell apart: the region (scores >= 0.5)
    splits into clusters (:data:`STACK_LINK_M`; specks under :data:`STACK_MIN_SHARE` of it
    dropped; pieces at one height, :data:`STACK_LEVEL_M`, are one part); with as many levels
    as the stack has parts, the one at ``part``'s place (0: the top) is kept. With any other
    number (a part hidden, or two found as one) which is which is unknown: nothing is kept,
    the part counts as not seen, and the episode abstains rather than open the wrong drawer."""
    found = category(cloud.category).stack_of(part)
    if found is None:
        return scores
    group, place = found
    member = np.flatnonzero(scores >= 0.5)
    if len(member) == 0:
        return scores
    points = np.asarray(cloud.points)
    labels = clusters(points[member], STACK_LINK_M)
    runs = [member[labels == k] for k in np.unique(labels)]
    runs = [r for r in runs if len(r) >= STACK_MIN_SHARE * len(member)]
    z = points[:, 2]
    runs.sort(key=lambda r: -float(np.median(z[r])))  # top first
    # Pieces at one height are one part found in pieces (a bar with its middle missed), not two.
    levels: list[np.ndarray] = []
    for r in runs:
        if levels and float(np.median(z[levels[-1]])) - float(np.median(z[r])) < STACK_LEVEL_M:
            levels[-1] = np.concatenate([levels[-1], r])
        else:
            levels.append(r)
    out = np.zeros_like(scores)
    if len(levels) == len(group):
        keep = levels[place]
        out[keep] = scores[keep]
    return out


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
