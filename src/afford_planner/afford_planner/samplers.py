"""Grasp samplers as plug-ins: each proposes candidates for one situation, by registry name.

A sampler looks at what perception found (:class:`SamplerContext`) and proposes grasps, or none
when its situation does not arise; the pipeline runs the configured samplers in order and numbers
their candidates as one set (``index_candidates``), so every method downstream ranks the same set.

* ``affordance``: AffordSim's Stage 1 on the grounded region (mean-shift peak, K approaches
  around its normal, the normal itself, top-down unless the region is a round body);
* ``enclosing``: top-down grasps around a round body that fits the hand (a cup held around its
  axis, not pinched by one wall);
* ``axis``: AffordSim's Regime A for objects without functional parts (a banana, a cube) or
  held by their whole body (a carrot with its leaves, a boxed lid), across the middle of the
  long axis;
* ``tilt``: for a pour from a spout, grasps on the handle approached along the pour's tilt axis,
  which hold the tipped container by the pads' normal forces rather than their torsional friction
  (``sample_tilt_grasps``); none for other actions or a container poured over its rim;
* ``push``: for a push onto a goal, contacts low on the back of the pushed region, the hand
  pitched with its fingertips leading (:mod:`afford_planner.push`); none without a goal;
* ``antipodal``: a generic antipodal sampler over the whole cloud, blind to affordances (the
  evaluation's baseline candidates; not in the default list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from afford_core.grasp import GraspCandidate
from afford_core.ontology import category
from afford_core.registry import Registry
from afford_core.robots import GripperDescription
from afford_core.types import Intent, ObjectCloud
from afford_planner.antipodal import AntipodalConfig, sample_antipodal_grasps
from afford_planner.candidates import (
    AxisGraspConfig,
    EnclosingGraspConfig,
    Stage1Config,
    index_candidates,
    sample_affordance_grasps,
    sample_axis_grasps,
    sample_enclosing_grasps,
    sample_tilt_grasps,
)
from afford_planner.push import push_contacts_towards

DEFAULT_SAMPLERS: tuple[str, ...] = ("affordance", "enclosing", "axis", "tilt")
"""What the pipeline runs, in this order (the order numbers the candidates)."""


@dataclass(frozen=True)
class SamplerContext:
    """What a sampler may use.

    Attributes:
        intent: The parsed task (target, grasp region).
        region: The grounded grasp region's points (world).
        cloud: The target's observed cloud.
        gripper: The hand: its stroke and pad length bound every grasp.
        pull_axis: A furniture front's outward normal, if any (the handle is approached along it).
        push_goal: Where a pushed object's centre must go (world), if the task pushes.
        tilt_axis: The horizontal axis a pour from a spout tips about (world), if the task pours
            from one (``Episode.tilt_axis``).
        seed: Seed of any random draw.
    """

    intent: Intent
    region: np.ndarray
    cloud: ObjectCloud
    gripper: GripperDescription
    pull_axis: np.ndarray | None = None
    push_goal: np.ndarray | None = None
    tilt_axis: np.ndarray | None = None
    seed: int = 0

    @property
    def round_body(self) -> bool:
        """The grasp region is a body to hold (a cup's), so an enclosing grasp may fit."""
        return "grasp_body" in category(self.intent.target).affordances.get(self.intent.grasp_region, ())


class GraspSampler:
    """Base class: ``sample`` proposes candidates (possibly none) for a context."""

    name: ClassVar[str] = ""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        raise NotImplementedError


def _stamp(name: str, cls: type[GraspSampler]) -> None:
    if not (isinstance(cls, type) and issubclass(cls, GraspSampler)):
        raise TypeError(f"grasp sampler {name!r} must be a GraspSampler subclass")
    cls.name = name


SAMPLERS: Registry[type[GraspSampler]] = Registry("grasp sampler", on_load=_stamp)


@SAMPLERS.register("affordance")
class AffordanceSampler(GraspSampler):
    """AffordSim Stage 1 on the grounded region (module docstring)."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        # A round body that fits the hand is held around its axis by the enclosing sampler; its
        # top-down grasp is that one, not a pinch of one wall (whose inner finger lands on the rim).
        topdown = not (ctx.round_body and bool(EnclosingSampler().sample(ctx)))
        # One mean-shift mode per part: a 14 cm drawer pull must not split into its standoffs.
        extent = float(np.max(np.ptp(ctx.region, axis=0)))
        config = Stage1Config(
            include_topdown=topdown,
            num_topdown_yaws=1,
            include_normal=True,
            center_on_part=True,
            bandwidth=float(np.clip(0.3 * extent, 0.02, 0.06)),
            max_width=ctx.gripper.max_width,
            max_depth=ctx.gripper.pad_length,
        )
        return sample_affordance_grasps(ctx.region, ctx.cloud, config, normal=ctx.pull_axis)


@SAMPLERS.register("enclosing")
class EnclosingSampler(GraspSampler):
    """Top-down grasps around a round body that fits the hand; none for other regions."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        if not ctx.round_body:
            return []
        return sample_enclosing_grasps(ctx.region, EnclosingGraspConfig(max_width=ctx.gripper.max_width))


@SAMPLERS.register("axis")
class AxisSampler(GraspSampler):
    """Grasps across the long axis of an object without functional parts; none for others."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        if len(ctx.cloud.part_names) != 1 and not self.whole_body(ctx):
            return []
        config = AxisGraspConfig(max_width=ctx.gripper.max_width, max_depth=ctx.gripper.pad_length)
        return sample_axis_grasps(ctx.cloud, config)


    @staticmethod
    def whole_body(ctx: SamplerContext) -> bool:
        """The object has parts but is held by its whole body: a body to hold, no handle, and not
        round (a round body is held around its axis). A carrot with its leaves, a chocolate box
        with its lid band: the grasp closes across the whole object, lid and all."""
        cat = category(ctx.intent.target)
        holds_body = "grasp_body" in cat.affordances.get(ctx.intent.grasp_region, ())
        return holds_body and not cat.parts_with("grasp_handle") and not EnclosingSampler().sample(ctx)


@SAMPLERS.register("tilt")
class TiltSampler(GraspSampler):
    """Handle grasps that hold a pour from a spout (approach along the tilt axis); none else."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        if ctx.tilt_axis is None:
            return []
        config = Stage1Config(center_on_part=True, max_width=ctx.gripper.max_width,
                              max_depth=ctx.gripper.pad_length)
        return sample_tilt_grasps(ctx.region, ctx.tilt_axis, ctx.cloud.center, config,
                                  obstacles=ctx.cloud.points, finger_length=ctx.gripper.finger_length)


@SAMPLERS.register("push")
class PushSampler(GraspSampler):
    """Push contacts on the region's back face, towards the goal; none without a goal."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        if ctx.push_goal is None:
            return []
        # From the bounding box's middle, not the cloud's own centre, which may be the centroid
        # leaning towards the side the camera saw.
        return push_contacts_towards(ctx.region, ctx.cloud.points, ctx.push_goal, ctx.gripper.max_width)


@SAMPLERS.register("antipodal")
class AntipodalSampler(GraspSampler):
    """Generic antipodal grasps over the whole cloud, blind to the task (a baseline)."""

    def sample(self, ctx: SamplerContext) -> list[GraspCandidate]:
        config = AntipodalConfig(max_width=ctx.gripper.max_width, seed=ctx.seed)
        return sample_antipodal_grasps(ctx.cloud.points, config)


def propose(ctx: SamplerContext, samplers: Sequence[str] = DEFAULT_SAMPLERS) -> list[GraspCandidate]:
    """Every named sampler's candidates, numbered as one set in the order of ``samplers``."""
    return index_candidates(*(SAMPLERS.get(name)().sample(ctx) for name in samplers))
