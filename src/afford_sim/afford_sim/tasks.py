"""Tasks: a scene to set up and the checks that say whether each stage succeeded.

Each task is a class, registered by name, whose docstring states the task, what is
randomized, and the success condition of every stage. Checks read the simulator's true
poses and joint values; the robot's own pipeline never sees them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from afford_perception.types import Intent, NextAction
from afford_sim.scene import CameraSpec, ObjectSpec, Relative, SceneSpec, Window
from afford_sim.world import FINGERS, BatchWorld

TASKS: dict[str, type[Task]] = {}


def register(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available by its ``name``."""
    if cls.name in TASKS:
        raise ValueError(f"task {cls.name!r} registered twice")
    TASKS[cls.name] = cls
    return cls


@dataclass(frozen=True)
class Check:
    """The outcome of one stage check, with the numbers it was decided on."""

    ok: bool
    detail: str = ""


def _lowest_z(world: BatchWorld, name: str) -> float:
    """Lowest point of an object's geometry in world z (from its pieces at the true pose)."""
    return float(min(s.world_vertices()[:, 2].min() for s in world.collision_shapes() if s.object == name))


def _held(world: BatchWorld, name: str) -> bool:
    """A finger touches the object and the gripper did not close on nothing.

    One finger suffices once lifted: a hanging object can rest on one pad for a moment while
    the other loses contact, and the lift check already asks that it rose with the hand.
    """
    touching = world.in_contact(FINGERS[0], name) or world.in_contact(FINGERS[1], name)
    return touching and world.gripper_width() > 0.004


class Task:
    """Base class. Subclasses set ``name``, ``actions`` and implement the scene and checks.

    The episode keeps a little state between checks (where the object started), so a task
    instance serves one episode.
    """

    name: ClassVar[str] = ""
    actions: ClassVar[tuple[NextAction, ...]] = ()
    targets: ClassVar[tuple[str, ...]] = ()
    destinations: ClassVar[tuple[str | None, ...]] = (None,)
    example: ClassVar[str] = ""

    def __init__(self, intent: Intent) -> None:
        self.intent = intent
        # Set by begin(), which every episode (and every restart) calls before any check.
        self.start_z = 0.0
        self._xyz0: np.ndarray = np.zeros(3)

    # Scene ------------------------------------------------------------------------------------

    @property
    def target_name(self) -> str:
        return self.intent.target

    @property
    def destination_name(self) -> str | None:
        return self.intent.destination

    def scene(self, seed: int) -> SceneSpec:
        raise NotImplementedError

    # Checks -----------------------------------------------------------------------------------

    def begin(self, world: BatchWorld) -> None:
        """Record what the checks compare against, at the episode's start (again for each
        execution from a restored state)."""
        self.start_z = float(world.object_pose(self.target_name)[2, 3])
        self._xyz0 = world.object_pose(self.target_name)[:3, 3].copy()

    def check(self, stage: str, world: BatchWorld) -> Check | None:
        """Check ``stage`` after it ran; ``None`` for stages this task does not judge."""
        fn: Callable[[BatchWorld], Check] | None = getattr(self, f"check_{stage}", None)
        return fn(world) if fn is not None else None

    def check_approach(self, world: BatchWorld) -> Check:
        # Reaching the pre-grasp pose must not have disturbed the target.
        moved = np.linalg.norm(world.object_pose(self.target_name)[:3, 3] - self._xyz0)
        return Check(bool(moved < 0.01), f"target moved {moved * 100:.1f} cm during the approach")

    def check_grasp(self, world: BatchWorld) -> Check:
        ok = (
            world.in_contact(FINGERS[0], self.target_name)
            and world.in_contact(FINGERS[1], self.target_name)
            and world.gripper_width() > 0.004
        )
        return Check(ok, f"fingers on {self.target_name}: {ok}, width {world.gripper_width() * 100:.1f} cm")

    def check_lift(self, world: BatchWorld) -> Check:
        dz = float(world.object_pose(self.target_name)[2, 3]) - self.start_z
        ok = dz > 0.05 and _held(world, self.target_name)
        return Check(ok, f"target raised {dz * 100:.1f} cm, held: {_held(world, self.target_name)}")


# The perception camera stands across the table facing the robot; the video camera watches
# the workspace from the robot's right, closer in, for people to look at.
PERCEPTION_CAMERA = CameraSpec(name="front")
VIDEO_CAMERA = CameraSpec(
    name="video", width=640, height=480, fovy=50.0, position=(0.35, -0.85, 0.6), target=(0.5, 0.0, 0.15)
)
# Furniture fronts face the robot, so their handles are seen from the robot's side.
SHOULDER_CAMERA = CameraSpec(name="front", position=(0.05, -0.45, 0.75), target=(0.6, 0.0, 0.15))


def _scene(*objects: ObjectSpec, camera: CameraSpec = PERCEPTION_CAMERA) -> SceneSpec:
    return SceneSpec(objects=objects, cameras=(camera, VIDEO_CAMERA))


def _seeds(seed: int, k: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, 10_000, size=k)]


# AffordSim randomizes in a 30 cm window with 60 deg of yaw (15 cm / 30 deg for its policy
# benchmark); ours is 16 cm with +-30 deg, centred where the FR3 reaches comfortably and the
# receiver still fits on the table beside it.
_FRONT = Window(center=(0.5, -0.12), size=(0.16, 0.16), yaw=(-math.pi / 6, math.pi / 6))


@register
class PickTask(Task):
    """Pick up an object by the region the sentence names and lift it 15 cm.

    Example: "pick up the scoop" (by its handle), "grab the hammer by the handle".
    Randomized: object shape (asset seed), position in a 16 x 16 cm window, yaw +-30 deg.
    Success: approach leaves the object in place; grasp: both fingers on the object;
    lift: object 5 cm above its start and still held.
    """

    name = "pick"
    actions = (NextAction.PICK,)
    targets = ("hammer", "pan", "scoop", "mug", "banana", "cube", "box", "bottle", "paper_cup", "kettle")
    example = "pick up the scoop"

    def scene(self, seed: int) -> SceneSpec:
        (s,) = _seeds(seed, 1)
        yaw = (-math.pi / 6, math.pi / 6)
        # Tools lie with the handle towards the robot's right so the arm meets it first.
        if self.target_name in ("hammer", "pan", "scoop"):
            yaw = (math.pi / 2 - math.pi / 6, math.pi / 2 + math.pi / 6)
        return _scene(
            ObjectSpec(
                self.target_name, self.target_name, s, Window(center=(0.5, 0.0), size=(0.16, 0.16), yaw=yaw)
            )
        )


@register
class PlaceTask(Task):
    """Pick an object and place it on or in a receiver.

    Example: "put the banana on the plate", "place the cube in the bowl".
    Randomized: both shapes; the object in a 16 x 16 cm window on the robot's right with
    +-30 deg yaw; the receiver to its left, 8 cm (+-2 cm) between their footprints, any yaw.
    Success: grasp and lift as for picking; place: after release and retreat, the object rests
    (not held, at rest) with its centre over the receiver's footprint (within 70% of the
    receiver's radius) and above the table.
    """

    name = "place"
    actions = (NextAction.PLACE, NextAction.STACK)
    targets = ("banana", "cube", "box", "bottle", "paper_cup", "mug")
    destinations = ("plate", "tray", "bowl", "box")
    example = "put the banana on the plate"

    def scene(self, seed: int) -> SceneSpec:
        s1, s2 = _seeds(seed, 2)
        dest = self.destination_name
        assert dest is not None
        return _scene(
            ObjectSpec(self.target_name, self.target_name, s1, _FRONT),
            ObjectSpec(
                dest,
                dest,
                s2,
                Relative("left_of", self.target_name, distance=0.08, jitter=0.02, yaw=(-math.pi, math.pi)),
            ),
        )

    def check_place(self, world: BatchWorld) -> Check:
        dest = self.destination_name
        assert dest is not None
        shapes = [s for s in world.collision_shapes() if s.object == dest]
        verts = np.vstack([s.world_vertices() for s in shapes])
        centre = 0.5 * (verts[:, :2].min(0) + verts[:, :2].max(0))
        radius = 0.5 * float(np.min(verts[:, :2].max(0) - verts[:, :2].min(0)))
        obj = world.object_center(self.target_name)
        off = float(np.linalg.norm(obj[:2] - centre))
        held = world.in_contact(FINGERS[0], self.target_name) or world.in_contact(
            FINGERS[1], self.target_name
        )
        on_table = world.in_contact("table", self.target_name)
        ok = off < 0.7 * radius and not held and not on_table
        return Check(
            ok,
            f"{off * 100:.1f} cm from the {dest}'s centre (radius {radius * 100:.1f} cm), "
            f"still touching the fingers: {held}, on the table: {on_table}",
        )


@register
class HangTask(Task):
    """Hang a mug on a rack's hook by its handle ring, holding the mug by its body.

    Example: "hang the mug on the rack".
    Randomized: mug and rack shapes (one to four hooks); the mug in a 12 x 12 cm window on the
    robot's right with yaw -90 deg +-30 deg; the rack in a 6 x 6 cm window on the left, its first
    hook pointing at the mug's side (roughly 26-44 cm between the two).
    Success: grasp and lift as for picking, with the fingers on the body; hang: after release
    and retreat and 1.5 s of settling, the mug touches the rack, not the table nor the fingers,
    and its lowest point is at least 5 cm above the table.
    """

    name = "hang"
    actions = (NextAction.HANG,)
    targets = ("mug",)
    destinations = ("rack",)
    example = "hang the mug on the rack"

    def scene(self, seed: int) -> SceneSpec:
        s1, s2 = _seeds(seed, 2)
        return _scene(
            ObjectSpec(
                "mug",
                "mug",
                s1,
                Window(
                    center=(0.45, -0.15),
                    size=(0.12, 0.12),
                    yaw=(-math.pi / 2 - math.pi / 6, -math.pi / 2 + math.pi / 6),
                ),
            ),
            ObjectSpec(
                "rack",
                "rack",
                s2,
                Window(center=(0.5, 0.2), size=(0.06, 0.06), yaw=(-math.pi / 2, -math.pi / 2)),
            ),
        )

    def check_hang(self, world: BatchWorld) -> Check:
        world.advance(1.5)
        low = _lowest_z(world, "mug")
        on_rack = world.in_contact("rack", "mug")
        on_table = world.in_contact("table", "mug")
        held = world.in_contact(FINGERS[0], "mug") or world.in_contact(FINGERS[1], "mug")
        ok = on_rack and not on_table and not held and low > 0.05
        return Check(
            ok, f"mug lowest point {low * 100:.1f} cm, on rack: {on_rack}, on table: {on_table}, held: {held}"
        )


@register
class PourTask(Task):
    """Pour from a held container into a bowl: tilt it so its spout or rim is over the bowl.

    Example: "pour water from the kettle into the bowl", "pour the cup into the bowl".
    Randomized: both shapes; the container in a 16 x 16 cm window with +-30 deg yaw; the bowl to
    its left, 10 cm (+-2 cm) between their footprints.
    Success: grasp and lift as for picking; pour (judged at the end of the pour stage, which
    holds the largest tilt; the untilt stage follows): the container is
    still held, tilted at least 45 deg from upright, and the lowest point of its pouring part is
    above the bowl's opening (inside 80% of the rim radius) and above the rim's height.
    """

    name = "pour"
    actions = (NextAction.POUR,)
    targets = ("kettle", "paper_cup", "mug")
    destinations = ("bowl",)
    example = "pour water from the kettle into the bowl"

    def scene(self, seed: int) -> SceneSpec:
        s1, s2 = _seeds(seed, 2)
        return _scene(
            ObjectSpec(self.target_name, self.target_name, s1, _FRONT),
            ObjectSpec("bowl", "bowl", s2, Relative("left_of", self.target_name, distance=0.10, jitter=0.02)),
        )

    def check_pour(self, world: BatchWorld) -> Check:
        pose = world.object_pose(self.target_name)
        tilt = math.degrees(math.acos(float(np.clip(pose[2, 2], -1, 1))))
        part = self.intent.use_region or "rim"
        pts = np.vstack(
            [
                s.world_vertices()
                for s in world.collision_shapes()
                if s.object == self.target_name and s.part == part
            ]
        )
        lip = pts[np.argmin(pts[:, 2])]
        rim = np.vstack(
            [s.world_vertices() for s in world.collision_shapes() if s.object == "bowl" and s.part == "rim"]
        )
        c = 0.5 * (rim[:, :2].min(0) + rim[:, :2].max(0))
        r = 0.5 * float(np.min(rim[:, :2].max(0) - rim[:, :2].min(0)))
        off = float(np.linalg.norm(lip[:2] - c))
        held = _held(world, self.target_name)
        ok = held and tilt >= 45 and off < 0.8 * r and lip[2] > rim[:, 2].max()
        return Check(
            ok,
            f"tilt {tilt:.0f} deg, {part} {off * 100:.1f} cm from the bowl's centre (rim radius "
            f"{r * 100:.1f} cm), {(lip[2] - rim[:, 2].max()) * 100:.1f} cm above the rim, held: {held}",
        )


@register
class OpenDrawerTask(Task):
    """Open a cabinet's drawer by pulling its handle.

    Example: "open the drawer".
    Randomized: cabinet shape; its position in an 8 x 10 cm window 80 cm in front of the
    robot, facing it, with +-10 deg of yaw.
    Success: grasp: both fingers on the drawer handle; pull: the drawer is open at least 8 cm.
    """

    name = "open_drawer"
    actions = (NextAction.OPEN, NextAction.PULL)
    targets = ("cabinet",)
    example = "open the drawer"

    def scene(self, seed: int) -> SceneSpec:
        (s,) = _seeds(seed, 1)
        return _scene(
            ObjectSpec(
                "cabinet",
                "cabinet",
                s,
                Window(
                    center=(0.8, 0.0), size=(0.08, 0.1), yaw=(math.pi - math.pi / 18, math.pi + math.pi / 18)
                ),
            ),
            camera=SHOULDER_CAMERA,
        )

    def check_approach(self, world: BatchWorld) -> Check:
        q = world.object_joint("cabinet", "drawer")
        return Check(abs(q) < 0.01, f"drawer at {q * 100:.1f} cm before the grasp")

    def check_grasp(self, world: BatchWorld) -> Check:
        ok = world.in_contact(FINGERS[0], "cabinet/drawer_handle") and world.in_contact(
            FINGERS[1], "cabinet/drawer_handle"
        )
        return Check(ok, f"both fingers on the drawer handle: {ok}")

    def check_pull(self, world: BatchWorld) -> Check:
        q = world.object_joint("cabinet", "drawer")
        return Check(q >= 0.08, f"drawer open {q * 100:.1f} cm")


def task_for(intent: Intent) -> Task:
    """The task that runs ``intent``; a clear error when no skill covers it yet."""
    for cls in TASKS.values():
        if (
            intent.next_action in cls.actions
            and intent.target in cls.targets
            and (intent.destination in cls.destinations)
        ):
            return cls(intent)
    supported = "; ".join(
        f"{c.name}: {', '.join(a.value for a in c.actions)} the "
        f"{'/'.join(c.targets)}"
        + (f" -> {'/'.join(d for d in c.destinations if d)}" if any(c.destinations) else "")
        for c in TASKS.values()
    )
    raise ValueError(
        f"no skill yet for {intent.next_action.value} {intent.target}"
        + (f" -> {intent.destination}" if intent.destination else "")
        + f" (supported: {supported})"
    )
