"""Tasks by id: a scene to set up, the skill that runs, and the checks that judge each stage.

Every task is a class registered under an id (``hang-mug-v1``) in :data:`TASKS`, as
ManiSkill registers its environments. A task fixes its objects, its tier (AffordSim's Easy /
Medium / Hard), the skill that runs it (a name in the planner's skill registry), several
instruction phrasings, the robots it is validated on, and a scene sampler whose randomization is
declared (:meth:`Task.randomization`) and recorded (:meth:`Task.drawn`). Its docstring states
what is randomized and what counts as success at each stage (a test enforces it). Checks read the
simulator's true poses and joint values; the robot's own pipeline never sees them.

Task families (:class:`PickTask`, :class:`PlaceTask` ...) hold the scene and the checks; each
id is a family with its objects filled in, registered by :func:`register_task`. Turning a
sentence into a task id is not the simulator's job: the CLI and the task server parse the
sentence and call :func:`find_task` with the parsed intent.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import numpy as np

from afford_core.ontology import category
from afford_core.registry import Registry
from afford_core.types import Intent, NextAction
from afford_sim.scene import CameraSpec, ObjectSpec, PlacedScene, Relative, SceneSpec, TableSpec, Window
from afford_sim.world import FINGERS, BatchWorld

Tier = Literal["easy", "medium", "hard"]
#: AffordSim's tiers: generic grasps; affordance-critical grasps; composite or tight-tolerance.
TIERS: tuple[Tier, ...] = ("easy", "medium", "hard")

TASKS: Registry[type[Task]] = Registry("task")
"""Every task class by id (``afford tasks`` lists them)."""


@dataclass(frozen=True)
class Check:
    """The outcome of one stage check, with the numbers it was decided on."""

    ok: bool
    detail: str = ""

    def __post_init__(self) -> None:
        # Checks compute with numpy; a numpy.bool_ would leak into every JSON record and report.
        object.__setattr__(self, "ok", bool(self.ok))


def _lowest_z(world: BatchWorld, name: str) -> float:
    """Lowest point of an object's geometry in world z (from its pieces at the true pose)."""
    return float(min(s.world_vertices()[:, 2].min() for s in world.collision_shapes() if s.object == name))


def _both_fingers_on(world: BatchWorld, geom: str) -> bool:
    """Both finger pads touch ``geom`` (an object, or one of its parts as "object/part")."""
    return world.in_contact(FINGERS[0], geom) and world.in_contact(FINGERS[1], geom)


def _held(world: BatchWorld, name: str) -> bool:
    """A finger touches the object and the gripper did not close on nothing.

    One finger suffices once lifted: a hanging object can rest on one pad for a moment while
    the other loses contact, and the lift check already asks that it rose with the hand.
    """
    touching = world.in_contact(FINGERS[0], name) or world.in_contact(FINGERS[1], name)
    return touching and world.gripper_width() > 0.004


class Task:
    """Base class of every task; a family subclasses it, :func:`register_task` fills the objects.

    A task instance serves one episode: :meth:`begin` records where the object started, which
    the checks compare against.
    """

    task_id: ClassVar[str] = ""
    tier: ClassVar[Tier] = "medium"
    skill: ClassVar[str] = ""
    """Name of the skill (``afford_planner.skills.SKILLS``) that runs this task."""
    actions: ClassVar[tuple[NextAction, ...]] = ()
    """The parsed next actions this family serves (what :func:`find_task` matches on)."""
    instructions: ClassVar[tuple[str, ...]] = ()
    """Ways a person asks for the task; the first is the canonical one."""
    robots: ClassVar[tuple[str, ...]] = ("fr3",)
    """Robots the task has been validated on (names in ``afford_core.robots.ROBOTS``)."""
    target: ClassVar[str] = ""
    destination: ClassVar[str | None] = None
    use_region: ClassVar[str | None] = None
    """The target's part the action works, where the target has several alike (a chest's
    drawers): a sentence asks for this task only when it names that part. None: any."""
    unchecked_stages: ClassVar[tuple[str, ...]] = ()
    """Stages of the skill this task does not judge (a pour's untilt)."""
    keeps_hold: ClassVar[bool] = False
    """The skill ends with the object still in the hand (a pick, a pour), as its
    ``Skill.keeps_hold`` says (a test keeps the two in step)."""
    shapes: ClassVar[dict[str, dict[str, tuple[float, float]]]] = {}
    """Shape parameters the task draws itself instead of the generator's everyday range, per
    object name: ``{"cube": {"size": (0.028, 0.034)}}`` (within the generator's limits)."""

    def __init__(self) -> None:
        if not self.task_id:
            raise TypeError(f"{type(self).__name__} is a task family; make a task with register_task")
        # Set by begin(), which every episode (and every restart) calls before any check.
        self.start_z = 0.0
        self._xyz0: np.ndarray = np.zeros(3)

    # Scene ------------------------------------------------------------------------------------

    @property
    def target_name(self) -> str:
        return self.target

    @property
    def destination_name(self) -> str | None:
        return self.destination

    @property
    def instruction(self) -> str:
        """The canonical instruction (the first phrasing)."""
        return self.instructions[0]

    def scene(self, seed: int) -> SceneSpec:
        raise NotImplementedError

    def randomization(self) -> dict[str, Any]:
        """What the scene sampler varies, declared: per object, its shape (a seeded asset draw)
        and its placement rule (window and yaw range, or a relation to another object)."""
        spec = self.scene(0)
        out: dict[str, Any] = {}
        for o in spec.objects:
            shape = "asset seed drawn from the scene seed"
            pinned = self.shapes.get(o.name, {})
            if pinned:
                shape += "; " + ", ".join(f"{k} drawn in [{lo:g}, {hi:g}]"
                                          for k, (lo, hi) in sorted(pinned.items()))
            out[o.name] = {"category": o.category, "shape": shape,
                           "placement": _describe_placement(o.placement)}
        return out

    @staticmethod
    def drawn(placed: PlacedScene) -> dict[str, Any]:
        """The values the sampler drew for one scene (recorded with every rollout)."""
        out: dict[str, Any] = {}
        for o in placed.objects:
            yaw = math.atan2(float(o.pose[1, 0]), float(o.pose[0, 0]))
            out[o.name] = {"asset_seed": int(o.spec.seed),
                           "xyz": [round(float(v), 4) for v in o.pose[:3, 3]],
                           "yaw_deg": round(math.degrees(yaw), 2), "support": o.support}
            if o.spec.params:
                out[o.name]["params"] = {k: round(v, 4) for k, v in o.spec.params}
            if o.spec.joints:  # an articulated object that starts open
                out[o.name]["joints"] = {k: round(v, 4) for k, v in o.spec.joints}
        return out

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

    def check_set_down(self, world: BatchWorld) -> Check:
        """The ``set_down`` a composite adds when a later step takes this step's object again:
        after release and retreat the object stands on the table (touching it, not the fingers),
        upright within 20 deg, as a later grasp needs it (on its side it is dropped, not set
        down: :class:`PlaceOnTableTask`'s bound)."""
        pose = world.object_pose(self.target_name)
        tilt = math.degrees(math.acos(float(np.clip(pose[2, 2], -1, 1))))
        held = any(world.in_contact(f, self.target_name) for f in FINGERS)
        on_table = world.in_contact("table", self.target_name)
        return Check(on_table and not held and tilt <= 20,
                     f"tilted {tilt:.0f} deg, on the table: {on_table}, still touching the fingers: {held}")


# The perception camera stands across the table facing the robot; the video camera watches
# the workspace from the robot's right, closer in, for people to look at.
PERCEPTION_CAMERA = CameraSpec(name="front")
VIDEO_CAMERA = CameraSpec(
    name="video", width=640, height=480, fovy=50.0, position=(0.35, -0.85, 0.6), target=(0.5, 0.0, 0.15)
)
# Furniture fronts face the robot, so their handles are seen from the robot's side.
SHOULDER_CAMERA = CameraSpec(name="front", position=(0.05, -0.45, 0.75), target=(0.6, 0.0, 0.15))
LEFT_SHOULDER_CAMERA = CameraSpec(name="front", position=(0.05, 0.45, 0.75), target=(0.6, 0.0, 0.15))
# Across the table like the perception camera, 40 cm to the robot's right: it looks past a tall
# thing on the left (a shelf) at what lies beside it nearer the robot.
ACROSS_RIGHT_CAMERA = CameraSpec(name="front", position=(1.2, -0.4, 0.9), target=(0.45, -0.05, 0.05))


def _scene(*objects: ObjectSpec, camera: CameraSpec = PERCEPTION_CAMERA) -> SceneSpec:
    return SceneSpec(objects=objects, cameras=(camera, VIDEO_CAMERA))


def _seeds(seed: int, k: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, 10_000, size=k)]


Shape = tuple[tuple[str, float], ...]
"""Pinned shape parameters of one object, ``(name, value)`` pairs (:attr:`ObjectSpec.params`)."""


@functools.lru_cache(maxsize=4096)
def _footprint(category_name: str, seed: int, params: Shape = ()) -> tuple[float, float]:
    """The asset's footprint sides (x, y) in its own frame (m)."""
    from afford_sim.assets import make

    x, y = np.ptp(make(category_name, seed, **dict(params)).mesh().bounds[:, :2], axis=0)
    return float(x), float(y)


@functools.lru_cache(maxsize=4096)
def _opening(category_name: str, seed: int, params: Shape = ()) -> float:
    """Inner diameter of a vessel's mouth (m): twice the rim's smallest distance from its axis.

    For a round rim that is the mouth's diameter; for an oval or square one it is the narrowest
    width, the conservative bound on what passes through at any yaw.
    """
    from afford_sim.assets import make

    asset = make(category_name, seed, **dict(params))
    if "rim" not in category(category_name).parts:
        raise ValueError(f"a {category_name} has no rim part to measure its opening by")
    rim = asset.part_mesh("rim")
    axis = 0.5 * (rim.bounds[0, :2] + rim.bounds[1, :2])
    return 2.0 * float(np.min(np.linalg.norm(np.asarray(rim.vertices)[:, :2] - axis, axis=1)))


#: Share of a vessel's mouth an object's footprint diagonal may take. The wall is a polygon of
#: wedges and may taper below the rim, and an object goes in slightly tilted: a block whose
#: diagonal was 95% of a mug's mouth jammed in it, one at 88% dropped to the bottom.
MOUTH_SHARE = 0.9


def _draw_shape(rng: np.random.Generator, ranges: dict[str, tuple[float, float]]) -> Shape:
    return tuple((k, float(rng.uniform(lo, hi))) for k, (lo, hi) in sorted(ranges.items()))


def _fitting_pair(seed: int, target: tuple[str, dict[str, tuple[float, float]]],
                  dest: tuple[str, dict[str, tuple[float, float]]], contain: bool,
                  tries: int = 50) -> tuple[tuple[int, Shape], tuple[int, Shape]]:
    """Asset seeds and pinned shapes of an object and its receiver.

    The first draw's seeds are :func:`_seeds`'s. For a receiver that contains (a mug, a bowl),
    draws repeat, seeded, until the object's footprint diagonal is at most :data:`MOUTH_SHARE`
    of the receiver's mouth (:func:`_opening`), so that it can go in at any yaw and come to
    rest inside rather than across the rim.
    """
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        s1, s2 = (int(s) for s in rng.integers(0, 10_000, size=2))
        p1, p2 = _draw_shape(rng, target[1]), _draw_shape(rng, dest[1])
        diagonal = math.hypot(*_footprint(target[0], s1, p1))
        if not contain or diagonal <= MOUTH_SHARE * _opening(dest[0], s2, p2):
            return (s1, p1), (s2, p2)
    raise ValueError(f"no {dest[0]} in {tries} draws has a mouth a {target[0]} fits through; pin "
                     "smaller objects or wider receivers in the task's shapes")


# AffordSim randomizes in a 30 cm window with 60 deg of yaw (15 cm / 30 deg for its policy
# benchmark); ours is 16 cm with +-30 deg, centred where the FR3 reaches comfortably and the
# receiver still fits on the table beside it.
_FRONT = Window(center=(0.5, -0.12), size=(0.16, 0.16), yaw=(-math.pi / 6, math.pi / 6))


class PickTask(Task):
    """Pick up an object by the region the sentence names and lift it 15 cm.

    Example: "pick up the scoop" (by its handle), "grab the hammer by the handle".
    Randomized: object shape (asset seed), position in a 16 x 16 cm window, yaw +-30 deg.
    Success: approach leaves the object in place; grasp: both fingers on the object;
    lift: object 5 cm above its start and still held.
    """

    skill = "pick"
    actions = (NextAction.PICK,)
    keeps_hold = True

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


def _contains(receiver: str) -> bool:
    dest = category(receiver)
    return any(dest.holds_inside(p) for p in dest.parts)


def _place_id(target: str, dest: str) -> str:
    # Version 2 for receivers that contain: "in" became a check of its own (the object below the
    # rim) and the scenes were redrawn to fit, so v1 results are not comparable.
    return f"place-{_slug(target)}-{_slug(dest)}-v{2 if _contains(dest) else 1}"


class PlaceTask(Task):
    """Pick an object and place it on or in a receiver.

    Example: "put the banana on the plate", "place the cube in the mug".
    Randomized: both shapes; the object in a 16 x 16 cm window on the robot's right with
    +-30 deg yaw; the receiver to its left, 8 cm (+-2 cm) between their footprints, any yaw. For
    a receiver that contains (a mug, a bowl), the pair is redrawn, seeded, until the object's
    footprint diagonal is at most 90% of the receiver's mouth, so it can go in at any yaw; a task
    may pin a shape parameter to a range of its own (a 2.6-3.1 cm cube for the mug, whose mouth
    is 5-5.5 cm; a 24-28 cm fruit bowl for a 20 cm banana), declared in :meth:`randomization`.
    Success: grasp and lift as for picking; place: after release and retreat, the object rests on
    the receiver: it touches the receiver and neither the table nor the fingers, and its centre
    is over the receiver's footprint (in the receiver's own frame, so a long, narrow receiver is
    judged along its axes). Touching the receiver but not the table is what "on it" means for a
    rigid object at rest; the centre test rules out an object propped against the receiver's side.
    In a receiver that contains, the object must also be in it: its lowest point at least a
    third of the receiver's height below the rim's top. An object resting across the rim stays
    within a wall's thickness of the top; one that went in rests on the floor or wedges well
    down the wall.
    """

    skill = "place"
    actions = (NextAction.PLACE, NextAction.STACK)

    #: Share of the receiver's height the object's lowest point must be below its rim, "in" it.
    depth_share: ClassVar[float] = 1 / 3
    #: The receiver's yaw range (rad); any yaw for things that are the same from every side.
    receiver_yaw: ClassVar[tuple[float, float]] = (-math.pi, math.pi)
    #: Free gap between the object's and the receiver's footprints (m).
    receiver_gap: ClassVar[float] = 0.08

    @classmethod
    def contains(cls) -> bool:
        """Whether the receiver holds things inside it (a part affords contain, not support)."""
        return _contains(cls.destination or "")

    def scene(self, seed: int) -> SceneSpec:
        dest, kind = self.destination_name, self.destination
        assert dest is not None and kind is not None
        # The object's kind, not its name: a composite may name it (the second of three cups).
        target = (self.target, dict(self.shapes.get(self.target, {})))
        receiver = (kind, dict(self.shapes.get(kind, {})))
        (s1, p1), (s2, p2) = _fitting_pair(seed, target, receiver, self.contains())
        return _scene(
            ObjectSpec(self.target_name, self.target, s1, _FRONT, params=p1),
            ObjectSpec(
                dest,
                kind,
                s2,
                Relative("left_of", self.target_name, distance=self.receiver_gap, jitter=0.02,
                         yaw=self.receiver_yaw),
                params=p2,
            ),
        )

    def check_place(self, world: BatchWorld) -> Check:
        dest = self.destination_name
        assert dest is not None
        # The object's centre in the receiver's frame, against the receiver's footprint there:
        # a long, narrow receiver (a sugar box on its side) is judged along its own axes.
        pose = world.object_pose(dest)
        shapes = [s for s in world.collision_shapes() if s.object == dest]
        verts = np.vstack([s.world_vertices() for s in shapes])
        local = (verts - pose[:3, 3]) @ pose[:3, :3]
        lo, hi = local[:, :2].min(0), local[:, :2].max(0)
        centre = (world.object_center(self.target_name) - pose[:3, 3]) @ pose[:3, :3]
        inside = bool(np.all(centre[:2] >= lo) and np.all(centre[:2] <= hi))
        margin = float(np.min(np.concatenate([centre[:2] - lo, hi - centre[:2]])))
        on_dest = world.in_contact(dest, self.target_name)
        held = any(world.in_contact(f, self.target_name) for f in FINGERS)
        on_table = world.in_contact("table", self.target_name)
        ok = inside and on_dest and not held and not on_table
        where = "inside" if inside else "outside"
        detail = (f"centre {where} the {dest}'s footprint ({margin * 100:+.1f} cm "
                  f"from its nearest edge), on the {dest}: {on_dest}, on the table: {on_table}, "
                  f"still touching the fingers: {held}")
        if self.contains():
            rim = [s.world_vertices() for s in shapes if s.part == "rim"] or [verts]
            top = float(max(v[:, 2].max() for v in rim))
            need = self.depth_share * (top - float(verts[:, 2].min()))
            sunk = top - _lowest_z(world, self.target_name)
            ok = ok and sunk >= need
            detail += f", lowest point {sunk * 100:.1f} cm below the rim (in it from {need * 100:.1f} cm)"
        return Check(ok, detail)


class StackTask(PlaceTask):
    """Stack an object on another of the same kind (AffordSim's stack_cube: a block on a block).

    Example: "stack the cube on the other cube".
    Randomized: both shapes, drawn independently (two blocks of 4-6 cm); the first in a 16 x 16
    cm window on the robot's right with +-30 deg yaw; the second, the receiver, to its left,
    8 cm (+-2 cm) between their footprints, any yaw. The receiver is the scene's object
    ``<kind>_2``, so the two are told apart by name in the simulator; the robot tells them apart
    by the role the sentence gives them (the one on the right is held).
    Success: grasp and lift as for picking; place: after release and retreat, the object rests
    on the other one: it touches it and neither the table nor the fingers, its centre over the
    other's footprint (in that block's own frame). A block that slid off touches the table.
    """

    @property
    def destination_name(self) -> str | None:
        return None if self.destination is None else f"{self.destination}_2"


class PlaceOnShelfTask(PlaceTask):
    """Pick an object and set it on the top board of a low shelf unit that faces the robot.

    Example: "put the mug on the shelf" (AffordSim's pick_mugcup_place_woodshelf).
    Randomized: both shapes, the shelf pinned 20-25 cm tall and 40-50 cm wide (its top board is
    where a hand holding a 10-25 cm object from above still reaches; the FR3 cannot lower a mug
    onto a 55 cm board from above at 30 cm to its left, and a wider shelf leaves the table); the
    object in a 16 x 16 cm window on the robot's right with +-30 deg yaw; the shelf to its left,
    14 cm (+-2 cm) between their footprints (at 8 cm the arm reaching down for a mug's handle
    met the shelf's side), its open front towards the robot (yaw 180 deg +-15 deg).
    Success: grasp and lift as for picking; place: as for any receiver (:class:`PlaceTask`),
    after release and retreat the object touches the shelf and neither the table nor the
    fingers, its centre over the shelf's footprint. An object that fell off lies on the table;
    one on a lower board is on the shelf too and passes (the skill aims at the top board).
    """

    receiver_yaw = (math.pi - math.pi / 12, math.pi + math.pi / 12)
    receiver_gap = 0.14


class LidOnPotTask(PlaceTask):
    """Put a pot's lid on the open pot, held by its knob (AffordSim's pick_lid_place_pot).

    Example: "put the lid on the pot".
    Randomized: the pot's shape with its lid left off (``lidded`` pinned 0) and its radius
    pinned 8-9 cm; the lid's diameter 8-16 mm wider than the pot (4-8 mm over the rim all
    round, as a lid sold with its pot is: it must not drop in, and a lid much wider than the
    rim is another pot's); the lid, knob up, in a 16 x 16 cm window on the robot's right with
    +-30 deg yaw; the pot to its left, 8 cm (+-2 cm) between their footprints (handles
    included), any yaw. A lid is 16-20 cm across, wider than the FR3's 8 cm stroke: only its
    knob can be held.
    Success: grasp and lift as for picking; place: after release and retreat the lid rests on
    the pot, touching it and neither the table nor the fingers; level, its axis within
    :attr:`max_tilt_deg` of the vertical; and over the mouth, its axis at most the lid's overlap
    on the wall (its radius less the pot's inner radius, 7-13 mm) from the pot's: then the rim
    is under the lid all round and the mouth closed. A lid off by more can still rest level on
    the rim (its underside is flat, and its weight stays over the rim), with a crescent of the
    mouth open: the offset, not a tilt, fails it. One put down beside the pot touches the table.
    """

    #: Largest tilt of the lid's axis at the end (deg): a lid on the rim is level within the
    #: rim's flatness; one caught on the rim's edge or on a handle leans.
    max_tilt_deg: ClassVar[float] = 5.0
    #: The pot's radius range (m), and how much wider than the pot the lid is (m, diameter).
    pot_radius: ClassVar[tuple[float, float]] = (0.08, 0.09)
    lid_margin: ClassVar[tuple[float, float]] = (0.008, 0.016)

    @classmethod
    def contains(cls) -> bool:
        return False  # the lid goes on the pot, not into it: its own check below

    def scene(self, seed: int) -> SceneSpec:
        dest, kind = self.destination_name, self.destination
        assert dest is not None and kind is not None
        s1, s2 = _seeds(seed, 2)
        rng = np.random.default_rng([seed, 2])
        radius = float(rng.uniform(*self.pot_radius))
        diameter = 2 * radius + float(rng.uniform(*self.lid_margin))
        return _scene(
            ObjectSpec(self.target_name, self.target, s1, _FRONT, params=(("diameter", diameter),)),
            ObjectSpec(dest, kind, s2,
                       Relative("left_of", self.target_name, distance=self.receiver_gap, jitter=0.02,
                                yaw=self.receiver_yaw),
                       params=(("lidded", 0.0), ("radius", radius))),
        )

    def randomization(self) -> dict[str, Any]:
        out = super().randomization()
        dest = self.destination_name
        assert dest is not None
        lo, hi = self.pot_radius
        out[dest]["shape"] += f"; lidded pinned 0; radius drawn in [{lo:g}, {hi:g}]"
        lo, hi = self.lid_margin
        out[self.target_name]["shape"] += (f"; diameter the pot's plus a draw in [{lo:g}, {hi:g}] "
                                           "(4-8 mm over the rim all round)")
        return out

    def check_place(self, world: BatchWorld) -> Check:
        dest = self.destination_name
        assert dest is not None
        lid, pot = world.object_pose(self.target_name), world.object_pose(dest)
        pot_params = world.placed.object(dest).asset.params
        overlap = (float(world.placed.object(self.target_name).asset.params["diameter"]) / 2
                   - (float(pot_params["radius"]) - float(pot_params["wall"])))
        off = float(np.linalg.norm(lid[:2, 3] - pot[:2, 3]))
        tilt = math.degrees(math.acos(float(np.clip(lid[2, 2], -1, 1))))
        on_pot = world.in_contact(dest, self.target_name)
        held = any(world.in_contact(f, self.target_name) for f in FINGERS)
        on_table = world.in_contact("table", self.target_name)
        ok = on_pot and not held and not on_table and tilt <= self.max_tilt_deg and off <= overlap
        return Check(ok, f"lid's axis {off * 100:.1f} cm from the pot's (covers within "
                         f"{overlap * 100:.1f} cm), tilted {tilt:.1f} deg (level within "
                         f"{self.max_tilt_deg:g}), on the {dest}: {on_pot}, on the table: {on_table}, "
                         f"still touching the fingers: {held}")


class PlaceOnTableTask(Task):
    """Pick an object and set it down upright elsewhere on the table.

    Example: "put the soup can on the table" (AffordSim's pick_soupcan_place_table).
    Randomized: object shape; position in a 16 x 16 cm window on the robot's right with
    +-30 deg yaw.
    Success: grasp and lift as for picking; place: after release and retreat, the object rests
    on the table (touching it, not the fingers), at least 8 cm from where it started (half the
    15 cm the skill moves it: less is a put-back, not a place), and upright: its vertical axis
    within 20 deg of the world's (a can on its side has been dropped, not placed).
    """

    skill = "place"
    actions = (NextAction.PLACE,)

    def scene(self, seed: int) -> SceneSpec:
        (s,) = _seeds(seed, 1)
        return _scene(ObjectSpec(self.target_name, self.target_name, s, _FRONT))

    def check_place(self, world: BatchWorld) -> Check:
        pose = world.object_pose(self.target_name)
        moved = float(np.linalg.norm(pose[:2, 3] - self._xyz0[:2]))
        tilt = math.degrees(math.acos(float(np.clip(pose[2, 2], -1, 1))))
        held = any(world.in_contact(f, self.target_name) for f in FINGERS)
        on_table = world.in_contact("table", self.target_name)
        ok = on_table and not held and moved >= 0.08 and tilt <= 20
        return Check(ok, f"moved {moved * 100:.1f} cm, tilted {tilt:.0f} deg, on the table: {on_table}, "
                         f"still touching the fingers: {held}")


class NestTask(StackTask):
    """Nest a tapered vessel into another of its kind (AffordSim's stack_papercup: a paper cup
    dropped into a paper cup, as a stack of them stands on a counter).

    Example: "stack the paper cup on the other paper cup", "put the paper cup into the other
    paper cup".
    The skill is ``place``, which centres a vessel put into one of its kind by the axis of its
    base: the mouth leaves it millimetres and the median of one seen side is a centimetre or two
    off (the same in the graph, whose planner knows the sentence, not the task).
    Randomized: both shapes, drawn independently from the task's pinned ranges (for paper cups a
    bottom radius of 2.1-2.2 cm and a flare of 0.8-0.9 cm: the upper cup's bottom is then at
    least 4 mm narrower, in radius, than the lower cup's mouth inside its rim bead, so it goes
    in at any yaw, with room for a few millimetres of perception error; with the everyday draws
    a 2.5 cm bottom can meet a mouth of 2.3 cm and cannot); the
    first in a 16 x 16 cm window on the robot's right with +-30 deg yaw; the receiver
    ``<kind>_2`` to its left, 8 cm (+-2 cm) between their footprints, any yaw.
    Success: grasp and lift as for picking; place: after release, retreat and 1 s of settling
    (a cup of 8-20 g can still be sliding down the other's wall, for an instant touching
    nothing, when the hand has gone), the upper cup is in the lower one as for any containing
    receiver (:class:`PlaceTask`): it touches the lower
    cup and neither the table nor the fingers, its centre over the lower cup's footprint and its
    lowest point at least a third of the lower cup's height below its rim (a cup resting across
    the rim, or caught on it, sinks only a bead's height; one nested slides in until the walls
    meet, 4-8 cm on the draws tried, about two thirds of the height); and coaxial with it: the
    two axes within 15 deg (nested tapered walls hold them within a degree or two; a cup jammed
    askew in the mouth or lying across it leans more), the lower cup still upright within 15 deg
    (a pair knocked over together, seen once in the Table 1 run, is not a stack; it also lies
    on the table).
    """

    #: Largest angle between the two cups' axes (deg).
    max_axis_deg: ClassVar[float] = 15.0
    #: Settling (s) before the place is judged.
    settle_s: ClassVar[float] = 1.0

    def scene(self, seed: int) -> SceneSpec:
        dest, kind = self.destination_name, self.destination
        assert dest is not None and kind is not None
        # The mouth test of _fitting_pair compares footprint diagonals, which a cup's flared top
        # never passes; the pinned ranges make every draw fit (tested), so draw once.
        ranges = dict(self.shapes.get(kind, {}))
        (s1, p1), (s2, p2) = _fitting_pair(seed, (self.target_name, ranges), (kind, ranges), contain=False)
        return _scene(
            ObjectSpec(self.target_name, self.target_name, s1, _FRONT, params=p1),
            ObjectSpec(dest, kind, s2, Relative("left_of", self.target_name, distance=self.receiver_gap,
                                                jitter=0.02, yaw=self.receiver_yaw), params=p2),
        )

    def check_place(self, world: BatchWorld) -> Check:
        dest = self.destination_name
        assert dest is not None
        # A paper cup weighs 8-20 g: let go over the mouth, it can still be sliding down the
        # other's wall, out of contact for an instant, when the hand has retreated (seen in a
        # rollout that came to rest nested a quarter of a second later). Judge it at rest.
        world.advance(self.settle_s)
        base = super().check_place(world)
        up, down = world.object_pose(self.target_name)[:3, 2], world.object_pose(dest)[:3, 2]
        angle = math.degrees(math.acos(float(np.clip(up @ down, -1.0, 1.0))))
        # The lower cup still stands: a pair knocked over together is nested, not stacked.
        lean = math.degrees(math.acos(float(np.clip(down[2], -1.0, 1.0))))
        ok = base.ok and angle <= self.max_axis_deg and lean <= self.max_axis_deg
        return Check(ok, f"{base.detail}, axes {angle:.0f} deg apart, the {dest} tilted {lean:.0f} deg "
                         f"(both within {self.max_axis_deg:.0f})")


class HangTask(Task):
    """Hang a cup (a mug, a teacup) on a rack's hook by its handle ring, holding it by its body.

    Example: "hang the mug on the rack".
    Randomized: cup and rack shapes (one to four hooks); the cup in a 12 x 12 cm window on the
    robot's right with yaw -90 deg +-30 deg; the rack in a 6 x 6 cm window on the left, its first
    hook pointing at the cup's side (roughly 26-44 cm between the two).
    Success: grasp and lift as for picking, with the fingers on the body; hang: after release
    and retreat and 1.5 s of settling, the cup touches the rack, not the table nor the fingers,
    and its lowest point is at least 5 cm above the table (a teacup's handle leaves its lowest
    point 2-4 cm below the hook's bend, which stands 13 cm or more up the pole).
    """

    skill = "hang"
    actions = (NextAction.HANG,)

    def scene(self, seed: int) -> SceneSpec:
        s1, s2 = _seeds(seed, 2)
        return _scene(
            ObjectSpec(
                self.target_name,
                self.target,
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
        cup = self.target_name
        low = _lowest_z(world, cup)
        on_rack = world.in_contact("rack", cup)
        on_table = world.in_contact("table", cup)
        held = world.in_contact(FINGERS[0], cup) or world.in_contact(FINGERS[1], cup)
        ok = on_rack and not on_table and not held and low > 0.05
        return Check(ok, f"{cup} lowest point {low * 100:.1f} cm, on rack: {on_rack}, "
                         f"on table: {on_table}, held: {held}")


class PourTask(Task):
    """Pour from a held container into a receiver with a rim (a bowl, a mug): tilt it so its
    spout or rim is over the receiver's opening.

    Example: "pour water from the kettle into the bowl", "pour the cup into the bowl", "pour the
    kettle into the mug".
    Randomized: both shapes; the container in a 16 x 16 cm window with +-30 deg yaw; the
    receiver to its left, 10 cm (+-2 cm) between their footprints.
    Success: grasp and lift as for picking; pour (judged at the end of the pour stage, which
    holds the largest tilt; the untilt stage follows): the container is
    still held, tilted at least 45 deg from upright, and the lowest point of its pouring part is
    above the receiver's opening (inside 80% of the rim radius) and above the rim's height.
    """

    skill = "pour"
    actions = (NextAction.POUR,)
    unchecked_stages = ("untilt",)
    keeps_hold = True

    def scene(self, seed: int) -> SceneSpec:
        dest, kind = self.destination_name, self.destination
        assert dest is not None and kind is not None
        s1, s2 = _seeds(seed, 2)
        return _scene(
            ObjectSpec(self.target_name, self.target_name, s1, _FRONT),
            ObjectSpec(dest, kind, s2, Relative("left_of", self.target_name, distance=0.10, jitter=0.02)),
        )

    def check_pour(self, world: BatchWorld) -> Check:
        pose = world.object_pose(self.target_name)
        tilt = math.degrees(math.acos(float(np.clip(pose[2, 2], -1, 1))))
        part = pour_part(self.target_name)
        pts = np.vstack(
            [
                s.world_vertices()
                for s in world.collision_shapes()
                if s.object == self.target_name and s.part == part
            ]
        )
        lip = pts[np.argmin(pts[:, 2])]
        dest = self.destination_name
        rim = np.vstack(
            [s.world_vertices() for s in world.collision_shapes() if s.object == dest and s.part == "rim"]
        )
        c = 0.5 * (rim[:, :2].min(0) + rim[:, :2].max(0))
        r = 0.5 * float(np.min(rim[:, :2].max(0) - rim[:, :2].min(0)))
        off = float(np.linalg.norm(lip[:2] - c))
        held = _held(world, self.target_name)
        ok = held and tilt >= 45 and off < 0.8 * r and lip[2] > rim[:, 2].max()
        return Check(
            ok,
            f"tilt {tilt:.0f} deg, {part} {off * 100:.1f} cm from the {dest}'s centre (rim radius "
            f"{r * 100:.1f} cm), {(lip[2] - rim[:, 2].max()) * 100:.1f} cm above the rim, held: {held}",
        )


class OpenDrawerTask(Task):
    """Open a cabinet's drawer by pulling its handle.

    Example: "open the drawer".
    Randomized: cabinet shape; its position in an 8 x 10 cm window 80 cm in front of the
    robot, facing it, with +-10 deg of yaw.
    Success: grasp: both fingers on the drawer handle; pull: the drawer is open at least 8 cm.
    """

    skill = "open"
    actions = (NextAction.OPEN, NextAction.PULL)

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


class ChestDrawerTask(Task):
    """Open one named drawer of a chest of three look-alike drawers (AffordSim's pull_cabinet7
    and pull_cabinet15: two cabinets the seed names but does not describe; ours are the top and
    the bottom drawer of a three-drawer chest, so the sentence, not the scene, says which).

    Example: "open the bottom drawer" (its handle 13-19 cm above the table).
    Randomized: the chest's shape (width, depth, height, plinth, handles: asset seed); its
    position in an 8 x 10 cm window 80 cm in front of the robot, facing it, with +-10 deg of yaw.
    Success: approach: every drawer still shut (under 1 cm) when the hand reaches the handle;
    grasp: both fingers on the named drawer's handle; pull: that drawer open at least 8 cm, as
    the cabinet's drawer must be, and every other drawer under 2 cm. The 2 cm allows the
    friction of a neighbour brushed by the hand; a drawer opened further was pulled (the wrong
    handle held, or two at once), which the task does not ask for.
    """

    skill = "open"
    actions = (NextAction.OPEN, NextAction.PULL)
    #: The most another drawer may open (m) and the least the named one must (m).
    others_shut_m: ClassVar[float] = 0.02
    open_m: ClassVar[float] = 0.08

    def scene(self, seed: int) -> SceneSpec:
        (s,) = _seeds(seed, 1)
        return _scene(
            ObjectSpec("chest", "chest", s,
                       Window(center=(0.8, 0.0), size=(0.08, 0.1),
                              yaw=(math.pi - math.pi / 18, math.pi + math.pi / 18))),
            camera=SHOULDER_CAMERA,
        )

    @property
    def drawer(self) -> str:
        """The drawer the task opens: its ``use_region`` (a part of the chest)."""
        if self.use_region is None:
            raise TypeError(f"{self.task_id}: a chest task names its drawer (use_region=)")
        return self.use_region

    def _drawers(self, world: BatchWorld) -> dict[str, float]:
        from afford_sim.assets.furniture import CHEST_DRAWERS

        return {d: world.object_joint("chest", d) for d in CHEST_DRAWERS}

    def check_approach(self, world: BatchWorld) -> Check:
        q = self._drawers(world)
        return Check(all(abs(v) < 0.01 for v in q.values()),
                     "drawers before the grasp: " + ", ".join(f"{d} {v * 100:.1f} cm" for d, v in q.items()))

    def check_grasp(self, world: BatchWorld) -> Check:
        ok = _both_fingers_on(world, f"chest/{self.drawer}_handle")
        return Check(ok, f"both fingers on the {self.drawer.replace('_', ' ')}'s handle: {ok}")

    def check_pull(self, world: BatchWorld) -> Check:
        q = self._drawers(world)
        others = {d: v for d, v in q.items() if d != self.drawer}
        ok = q[self.drawer] >= self.open_m and all(v < self.others_shut_m for v in others.values())
        return Check(ok, f"{self.drawer.replace('_', ' ')} open {q[self.drawer] * 100:.1f} cm; others "
                         + ", ".join(f"{d} {v * 100:.1f} cm" for d, v in others.items()))


class SwingDoorTask(Task):
    """Open an appliance's hinged door by its handle: grasp the handle, swing it out along its
    arc about the hinge (AffordSim's open_microwave).

    Example: "open the microwave".
    Randomized: the microwave's shape (width, depth, height, door and handle: asset seed); its
    position in an 8 x 10 cm window 92 cm in front of the robot and 10 cm to its right, facing
    it, with +-10 deg of yaw, on a table 1.2 m deep. The door starts closed.
    Success: approach: the door still closed (within 3 deg) when the hand reaches the handle;
    grasp: both fingers on the door handle; pull: the door open at least 70 deg. Justified by
    what an open door is for: at 70 deg the door's shadow on the front covers cos 70 = 34% of its
    width, so two thirds of the cavity's mouth (19 cm or more for the narrowest door) lies clear
    for a hand reaching straight in, as loading the microwave needs; short of that the free edge
    still hangs over the mouth.
    """

    skill = "open"
    actions = (NextAction.OPEN,)

    #: The door angle (deg) the pull must reach, and the largest disturbance before the grasp.
    open_deg: ClassVar[float] = 70.0
    still_deg: ClassVar[float] = 3.0
    #: The moving part and its joint.
    joint: ClassVar[str] = "door"
    # The door swings out towards the robot: from 75 cm ahead its handle ended 20-30 cm from the
    # base, where the arm cannot hold it level (shoulder and wrist at their limits); from 92 cm
    # the whole arc stays in reach. The table is 20 cm deeper to hold the microwave there.
    table: ClassVar[TableSpec] = TableSpec(size=(1.2, 1.2), center=(0.6, 0.0))
    window: ClassVar[Window] = Window(center=(0.92, -0.1), size=(0.08, 0.1),
                                      yaw=(math.pi - math.pi / 18, math.pi + math.pi / 18))

    def start_deg(self, seed: int) -> float:
        """The door's angle at the start (deg): closed."""
        return 0.0

    def scene(self, seed: int) -> SceneSpec:
        (s,) = _seeds(seed, 1)
        start = self.start_deg(seed)
        joints = ((self.joint, math.radians(start)),) if start else ()
        obj = ObjectSpec(self.target_name, self.target_name, s, self.window, joints=joints)
        # The door is hinged on the robot's left and swings out towards it: from the left
        # shoulder the camera sees the outside of an open door, where its handle is (from the
        # right it sees the inside, and the handle hides behind the door).
        return SceneSpec(objects=(obj,), table=self.table, cameras=(LEFT_SHOULDER_CAMERA, VIDEO_CAMERA))

    def door_deg(self, world: BatchWorld) -> float:
        return math.degrees(world.object_joint(self.target_name, self.joint))

    def begin(self, world: BatchWorld) -> None:
        super().begin(world)
        self._deg0 = self.door_deg(world)

    def check_approach(self, world: BatchWorld) -> Check:
        deg = self.door_deg(world)
        return Check(abs(deg - self._deg0) < self.still_deg,
                     f"door at {deg:.1f} deg before the grasp (started at {self._deg0:.1f} deg)")

    def check_grasp(self, world: BatchWorld) -> Check:
        ok = _both_fingers_on(world, f"{self.target_name}/{self.joint}_handle")
        return Check(ok, f"both fingers on the {self.joint} handle: {ok}")

    def check_pull(self, world: BatchWorld) -> Check:
        deg = self.door_deg(world)
        return Check(deg >= self.open_deg, f"door open {deg:.1f} deg (at least {self.open_deg:g} needed)")


class CloseDoorTask(SwingDoorTask):
    """Close an appliance's open hinged door by its handle, swinging it back along its arc
    (AffordSim's close_microwave).

    Example: "close the microwave".
    Randomized: as for opening (shape; an 8 x 10 cm window 92 cm ahead and 10 cm right, facing
    the robot, +-10 deg yaw), and the door's starting angle, drawn in [40, 70] deg from the scene
    seed: open wide enough that the hand reaches the handle on the door's outside from the front,
    where the arm can meet it face on.
    Success: approach: the door not moved by more than 3 deg before the grasp; grasp: both
    fingers on the door handle; pull: the door shut to at most 5 deg. Justified: at 5 deg the
    free edge stands at most 3.5 cm (the widest door, 43 cm, times sin 5 deg) off the front,
    less than the door's own handle stands out, so the door reads as closed and no longer hangs
    in the hand's way; a door left at 10 deg stands twice that off and is still visibly ajar.
    """

    actions = (NextAction.CLOSE,)

    #: The most the door may stay open (deg), and its starting range (deg).
    closed_deg: ClassVar[float] = 5.0
    start_range: ClassVar[tuple[float, float]] = (40.0, 70.0)

    def start_deg(self, seed: int) -> float:
        lo, hi = self.start_range
        return float(np.random.default_rng([seed, 1]).uniform(lo, hi))

    def randomization(self) -> dict[str, Any]:
        out = super().randomization()
        lo, hi = self.start_range
        out[self.target_name]["joints"] = f"{self.joint} drawn in [{lo:g}, {hi:g}] deg from the scene seed"
        return out

    def check_pull(self, world: BatchWorld) -> Check:
        deg = self.door_deg(world)
        return Check(deg <= self.closed_deg,
                     f"door open {deg:.1f} deg (at most {self.closed_deg:g} counts as closed)")


class PushTask(Task):
    """Push an object across the table onto a target mat, without picking it up.

    Example: "push the coffee can onto the target" (AffordSim's push_coffeecan, push_cheezbox).
    Randomized: both shapes; the object in a 16 x 16 cm window on the robot's right with +-30 deg
    yaw; the mat (12-16 cm across, a marking on the table that nothing collides with) to its
    left, 6 cm (+-2 cm) between their footprints: a push of 15-25 cm.
    Success: approach: the hand reached its start behind the object without moving it more than
    1 cm; push: after the push and the hand's retreat the object rests with its centre over the
    mat (at most the mat's radius from the mat's centre, in the table's plane: the centre over
    the target is what "onto the target" means for an object wider than the mat's margin), upright
    (its vertical axis within 15 deg of the world's: a can on its side was knocked over, not
    pushed) and not touching the fingers.
    """

    skill = "push"
    actions = (NextAction.PUSH,)

    #: Largest tilt of the object's vertical axis at the end (deg).
    max_tilt_deg: ClassVar[float] = 15.0

    def scene(self, seed: int) -> SceneSpec:
        dest, kind = self.destination_name, self.destination
        assert dest is not None and kind is not None
        s1, s2 = _seeds(seed, 2)
        return _scene(
            ObjectSpec(self.target_name, self.target_name, s1, _FRONT),
            ObjectSpec(dest, kind, s2, Relative("left_of", self.target_name, distance=0.06, jitter=0.02)),
        )

    def check_push(self, world: BatchWorld) -> Check:
        dest = self.destination_name
        assert dest is not None
        centre = world.object_center(self.target_name)
        mat = world.object_pose(dest)[:3, 3]
        radius = float(world.placed.object(dest).asset.params["radius"])
        off = float(np.linalg.norm(centre[:2] - mat[:2]))
        pose = world.object_pose(self.target_name)
        tilt = math.degrees(math.acos(float(np.clip(pose[2, 2], -1, 1))))
        held = any(world.in_contact(f, self.target_name) for f in FINGERS)
        ok = off <= radius and tilt <= self.max_tilt_deg and not held
        return Check(ok, f"centre {off * 100:.1f} cm from the mat's centre (radius {radius * 100:.1f} cm), "
                         f"tilted {tilt:.0f} deg, touching the fingers: {held}")


class CompositeTask(Task):
    """Several tasks in one scene, one after the other (AffordSim's long-horizon composites).

    Each step is a registered single-step task (:attr:`steps`) run on the composite's scene:
    perceived, grounded, grasped, executed and checked exactly as when it runs alone, the next
    step starting from where the last one left the world. The stages are the steps' own,
    numbered (``1.grasp`` ... ``2.place``), and a failed stage ends the whole task, as in the
    seed ("a single mid-sequence failure ... terminates the entire task"). After the last step
    the ``kept`` stage judges every earlier step's result again (its last judged stage's check):
    a later step that knocked an earlier object off its receiver fails the task.
    A family subclasses this with a scene that holds every step's objects.
    """

    skill = "composite"
    steps: ClassVar[tuple[str, ...]] = ()
    """The single-step task ids, in order; a later step may take an earlier step's object
    again (:func:`sets_down`)."""

    def subtasks(self) -> list[Task]:
        """A fresh instance of every step's task (each records its own start in :meth:`begin`)."""
        return [get_task(t) for t in self.steps]

    def begin(self, world: BatchWorld) -> None:
        # Each step's task records its own start when its step begins (the spine calls it).
        pass

    def check(self, stage: str, world: BatchWorld) -> Check | None:
        return None  # the steps' tasks judge their own stages; "kept" has its own method

    @staticmethod
    def check_kept(world: BatchWorld, results: Sequence[tuple[Task, str]]) -> Check:
        """Every earlier step's result still holds: ``results`` are (step task, the last stage
        it judged) of the steps before the last."""
        failed = []
        for k, (task, stage) in enumerate(results, 1):
            check = task.check(stage, world)
            if check is not None and not check.ok:
                failed.append(f"step {k} ({task.task_id}) {stage}: {check.detail}")
        return Check(not failed, "; ".join(failed) or f"the {len(results)} earlier step(s) still hold")


def sets_down(steps: Sequence[Task], k: int) -> bool:
    """Whether step ``k`` of a composite sets its object down after its own stages: its skill
    ends with the object still in the hand (a pour) and a later step takes that object again
    (then hangs it). Its result is consumed by that step, so ``kept`` does not judge it again."""
    name = steps[k].target_name
    return steps[k].keeps_hold and any(t.target_name == name for t in steps[k + 1:])


#: Rows of a composite's scene on the robot's right, one per step, nearest first: each step's
#: object in its own window (12 x 12 cm, +-30 deg yaw), its receiver to its left as when the
#: step runs alone. Two rows fit the FR3's comfortable reach (40-70 cm ahead); a third step's
#: object stands further right, between them (10 x 10 cm, 34 cm right of the centreline, 64 cm
#: from the base: still inside the reach the place skill needs, clear of the first two rows).
_ROWS = (Window(center=(0.42, -0.14), size=(0.12, 0.12), yaw=(-math.pi / 6, math.pi / 6)),
         Window(center=(0.64, -0.14), size=(0.12, 0.12), yaw=(-math.pi / 6, math.pi / 6)),
         Window(center=(0.53, -0.34), size=(0.10, 0.10), yaw=(-math.pi / 6, math.pi / 6)))


class PlaceSequenceTask(CompositeTask):
    """Pick and place objects in turn, each onto its receiver (AffordSim's composite_2pickplaces,
    and composite_2picks_to_plate when the steps share their receiver).

    Example: "put the banana on the plate, then put the cube in the mug"; "put the carrot on the
    plate, then put the cube on the plate"; three things into one paper box.
    Randomized: every object's shape as in its step's task alone (a receiver that contains is
    redrawn with its object until the object fits its mouth); the first step's object in a
    12 x 12 cm window 42 cm ahead on the robot's right, the second's 22 cm further out, both with
    +-30 deg yaw, a third's in a 10 x 10 cm window 53 cm ahead and 34 cm right; each receiver to
    the left of its step's object as in the step's own task (8 cm +-2 cm between their
    footprints, any yaw); a receiver a later step shares is the first step's (drawn and placed
    once); the scene's objects never overlap (rejection sampling).
    Success: each step's stages as its task judges them alone (grasp, lift, place: on or in its
    receiver, not on the table, not touching the fingers), in order, a failed stage ending the
    task; then ``kept``: every earlier object still on its receiver after the last step.
    """

    def scene(self, seed: int) -> SceneSpec:
        if len(self.steps) > len(_ROWS):
            raise ValueError(f"{self.task_id}: at most {len(_ROWS)} steps fit the table's rows")
        objects: dict[str, ObjectSpec] = {}
        tasks = self.subtasks()
        rows = zip(_seeds(seed, len(self.steps)), _ROWS, tasks, strict=False)
        for k, (step_seed, row, task) in enumerate(rows):
            held, *rest = task.scene(step_seed).objects
            if held.name in objects:
                # A step takes an earlier step's object again only where that one sets it down.
                if not any(sets_down(tasks, j) and tasks[j].target_name == held.name for j in range(k)):
                    raise ValueError(f"{self.task_id}: two steps hold the {held.name}")
            else:
                objects[held.name] = dataclasses.replace(held, placement=row)
            for o in rest:  # a receiver already in the scene (a shared plate) stays the first step's
                objects.setdefault(o.name, o)
        return _scene(*objects.values())


def _to_the_right(spec: SceneSpec, name: str | None) -> SceneSpec:
    """``spec`` with the object ``name``, placed beside another, moved to that one's right (the
    same gap and jitter): where a composite's steps would put two things on one spot."""
    objects = tuple(dataclasses.replace(o, placement=dataclasses.replace(o.placement, relation="right_of"))
                    if o.name == name and isinstance(o.placement, Relative) else o for o in spec.objects)
    return dataclasses.replace(spec, objects=objects)


class DoublePourTask(PlaceSequenceTask):
    """Pour from one container into two receivers in turn, setting it down between the pours
    (AffordSim's composite_double_pour_kettle: the kettle into the bowl, then into the mug).

    Example: "pour the kettle into the bowl, then pour the kettle into the mug".
    Randomized: the shapes as in the two pours alone; the container where its pour alone puts it
    (a 16 x 16 cm window 50 cm ahead on the robot's right, +-30 deg yaw: in the composite's nearer
    row, 42 cm ahead, the carry over the bowl ran the arm into its base); the first receiver to
    its left and the second
    to its right, each 10 cm (+-2 cm) between their footprints (both to its left, as in each
    pour alone, they would stand on each other); the scene's objects never overlap.
    Success: the first pour's stages (grasp, lift, pour: tilted at least 45 deg, the pouring
    part over the first receiver's opening, inside 80% of its rim radius, above the rim); then
    ``set_down``: the container standing on the table where it stood, upright within 20 deg, let
    go; then the second pour's stages, over the second receiver. A failed stage ends the task;
    ``kept`` has nothing to judge again (the first pour's result is the container the second
    pour took).
    """

    def scene(self, seed: int) -> SceneSpec:
        spec = super().scene(seed)
        second = get_task(self.steps[-1]).destination_name
        # One object held throughout: it stands where its pour alone puts it, not in the nearer
        # composite row (42 cm ahead, the arm's links met the base carrying it over the bowl).
        alone = get_task(self.steps[0]).scene(seed).objects[0].placement
        held = dataclasses.replace(spec.objects[0], placement=alone)
        return _to_the_right(dataclasses.replace(spec, objects=(held, *spec.objects[1:])), second)


class PourThenHangTask(PlaceSequenceTask):
    """Pour from a mug, set it down, then hang it on the rack (AffordSim's
    composite_pour_then_hang): one object through two steps, each as its task runs alone.

    Example: "pour the mug into the bowl, then hang the mug on the rack".
    Randomized: the mug's, the bowl's and the rack's shapes as in the two tasks alone; the mug
    in a 12 x 12 cm window 42 cm ahead on the robot's right with the hang's yaw, -90 deg +-30
    deg (set down as it was taken, it keeps that yaw for the hang), the bowl to its
    right (10 cm +-2 cm between their footprints; to its left, as in the pour alone, it stood
    where the rack does, and behind it the pour was out of reach), the rack in its own task's
    6 x 6 cm window on the left; the scene's objects never overlap (rejection sampling).
    Success: the pour's stages as its task judges them (grasp, lift, pour: tilted at least 45
    deg with the pouring part over the bowl); then ``set_down``: the mug put back where it stood,
    standing on the table upright within 20 deg and let go (the hang takes it by its body from
    there, and a mug on its side could not be taken so); then the hang's stages (grasp on the
    body, lift, hang: on the rack, off the table, let go). A failed stage ends the task. The
    ``kept`` stage has nothing to judge again: the pour's result is the mug the hang took.
    """

    def scene(self, seed: int) -> SceneSpec:
        spec = super().scene(seed)
        hang = get_task(self.steps[-1]).scene(0).objects[0].placement
        assert isinstance(hang, Window) and isinstance(spec.objects[0].placement, Window)
        mug = dataclasses.replace(spec.objects[0], placement=dataclasses.replace(spec.objects[0].placement,
                                                                                 yaw=hang.yaw))
        return _to_the_right(dataclasses.replace(spec, objects=(mug, *spec.objects[1:])), "bowl")


class PushThenPlaceTask(PlaceSequenceTask):
    """Push one thing onto a target, then put another on the shelf (AffordSim's
    composite_push_pick_to_shelf, read as its name says: a push, then a pick and place onto a
    shelf; the seed names the task only).

    Example: "push the cheese box onto the target, then put the paper cup on the shelf".
    Randomized: every object's shape as in its step's task alone (the shelf pinned 20-25 cm tall,
    40-50 cm wide); the pushed object in a 12 x 12 cm window 42 cm ahead and 24 cm to the
    robot's right (the composite's nearer row 10 cm further right: a box pushed onto a mat
    beside the shelf tipped on the shelf's corner), the object to place in the farther row (12 x
    12 cm, 64 cm ahead, 14 cm right), both with +-30 deg yaw; the mat to the left of the
    pushed object (6 cm +-2 cm between their footprints, as in the push alone), the shelf to the
    left of the other (14 cm +-2 cm, open front towards the robot, 180 +-15 deg); the scene's
    objects never overlap (rejection sampling).
    Success: the push's stages as its task judges them alone (approach: the hand behind the
    object without moving it more than 1 cm; push: its centre over the mat, upright within
    15 deg, let go); then the place's (grasp, lift, place: on the shelf, not on the table, not
    touching the fingers). A failed stage ends the task; then ``kept``: the pushed object still
    on the mat after the place (an arm that swept it off on the way to the shelf fails).
    The perception camera stands across the table 40 cm to the right of the usual one
    (:data:`ACROSS_RIGHT_CAMERA`): from straight across, the shelf, 20-25 cm tall, hid half the
    mat or more in most scenes, and the push aimed at the seen half stopped short. (From the
    robot's left shoulder the box's far side was hidden and the push contact sat too high on
    it; the mat to the right of the pushed object left the hand no plan behind it; the object to
    place in the nearer row put the pushed box between the camera and the cup.)
    """

    #: Where the pushed object stands: the nearer composite row, 10 cm further right.
    push_window: ClassVar[Window] = Window(center=(0.42, -0.24), size=(0.12, 0.12),
                                           yaw=(-math.pi / 6, math.pi / 6))

    def scene(self, seed: int) -> SceneSpec:
        spec = super().scene(seed)
        pushed = dataclasses.replace(spec.objects[0], placement=self.push_window)
        return _scene(pushed, *spec.objects[1:], camera=ACROSS_RIGHT_CAMERA)


class PlaceEachTask(PlaceSequenceTask):
    """Put several things of one kind on one receiver, one after the other (AffordSim's
    composite_3cups_to_tray).

    Example: "put the three paper cups on the tray".
    The steps are one place task (:attr:`steps`, once per thing), each on a named object: the
    scene's ``<kind>``, ``<kind>_2``, ``<kind>_3`` in the order they are taken, all onto the one
    receiver (the robot tells them apart by the order it takes them in; the sentence does not
    name them). Each later one goes down beside those already there, where the hand lowers it
    without meeting them (the place skill's ranked free spots).
    Randomized: every object's shape as in the place alone (an asset seed each); the things in
    the composite's rows (12 x 12 cm windows 42 and 64 cm ahead, 14 cm right; 10 x 10 cm, 53 cm
    ahead and 34 cm right; +-30 deg yaw), the receiver to the left of the first, 8 cm (+-2 cm)
    between their footprints, any yaw; the scene's objects never overlap (rejection sampling).
    Success: each step's stages as its place task judges them alone (grasp, lift, place: on the
    receiver, touching neither the table nor the fingers, its centre over the receiver's
    footprint), in order, a failed stage ending the task; then ``kept``: every thing placed
    earlier still on the receiver after the last (one knocked off by a later one fails the task).
    """

    def item_names(self) -> list[str]:
        """The things in the order they are taken: ``<kind>``, ``<kind>_2`` ..."""
        return [self.target, *(f"{self.target}_{k}" for k in range(2, len(self.steps) + 1))]

    def subtasks(self) -> list[Task]:
        tasks = [get_task(step) for step in self.steps]
        return [_named(t, name, t.destination_name) for t, name in zip(tasks, self.item_names(), strict=True)]


def _named(task: Task, target: str, destination: str | None) -> Task:
    """``task`` acting on the scene's objects ``target`` and ``destination`` (a block of a tower,
    ``cube_3`` onto ``cube_2``) instead of the ones its own scene names; its checks, skill and
    id are its own."""
    cls = type(type(task).__name__, (type(task),), {"target_name": target, "destination_name": destination})
    return cast(Task, cls())


class TowerTask(CompositeTask):
    """Stack blocks into one tower, each on top of the last (AffordSim's stack_four_cube: "cubes
    are stacked one at a time on top of the previous tower, and a single mid-sequence stacking
    failure topples the partial tower and terminates the entire task").

    Example: "stack the four cubes into a tower".
    The steps are the stack task (:attr:`steps`, one per block put on), each on named blocks:
    the base is the scene's ``<kind>``, the blocks going on are ``<kind>_2``, ``<kind>_3`` ...
    in the order they are stacked, each onto the one before (the robot tells them apart by the
    order it stacks them in; the sentence does not name them).
    Randomized: every block's shape (an asset seed each) with its edge drawn in [4.5, 6] cm (the
    generator's everyday blocks start at 4 cm; a 4 cm block under a 6 cm one leaves a 1 cm ledge
    each side that a few millimetres of placing error tip over, and the seed's tower is of
    equal toy blocks); the base in a 6 x 6 cm window 55 cm ahead and 12 cm to the robot's left,
    the others in the composite rows on its right (12 x 12 cm windows 42 and 64 cm ahead, 14 cm
    right; 10 x 10 cm 53 cm ahead, 34 cm right), every block with +-45 deg yaw (a block is the
    same every quarter turn); the scene's blocks never overlap (rejection sampling).
    Success: each step's stages as the stack task judges them alone (grasp, lift, place: on the
    block below, touching neither the table nor the fingers, its centre over that block's
    footprint), in order, a failed stage ending the task; then ``kept``: every block placed
    earlier still on the one below it after the last (a later block that knocked the tower over
    fails the task, as in the seed).
    """

    #: The edge range of the blocks (m).
    block_size: ClassVar[tuple[float, float]] = (0.045, 0.06)
    base_window: ClassVar[Window] = Window(center=(0.55, 0.12), size=(0.06, 0.06),
                                           yaw=(-math.pi / 4, math.pi / 4))

    def block_names(self) -> list[str]:
        """The blocks bottom to top: the base, then each block in the order it goes on."""
        kind = self.target
        return [kind, *(f"{kind}_{k}" for k in range(2, len(self.steps) + 2))]

    def subtasks(self) -> list[Task]:
        names = self.block_names()
        return [_named(get_task(step), names[k + 1], names[k]) for k, step in enumerate(self.steps)]

    def scene(self, seed: int) -> SceneSpec:
        names = self.block_names()
        if len(names) - 1 > len(_ROWS):
            raise ValueError(f"{self.task_id}: at most {len(_ROWS)} blocks fit the table's rows beside "
                             "the base")
        rng = np.random.default_rng(seed)
        quarter = (-math.pi / 4, math.pi / 4)
        windows = [self.base_window] + [dataclasses.replace(row, yaw=quarter) for row in _ROWS]
        objects = [ObjectSpec(name, self.target, int(rng.integers(0, 10_000)), window,
                              params=_draw_shape(rng, {"size": self.block_size}))
                   for name, window in zip(names, windows, strict=False)]
        return _scene(*objects)


def manipulated_objects(task: Task) -> list[str]:
    """The scene objects ``task`` moves by hand (each step's target, for a composite): the ones
    a domain randomization's pose axis moves (AffordSim's "the manipulated object's initial
    pose")."""
    steps = task.subtasks() if isinstance(task, CompositeTask) else [task]
    return list(dict.fromkeys(t.target_name for t in steps))


def pour_part(target: str) -> str:
    """The part a container pours from: the first of its parts that affords ``pour_out``."""
    parts = category(target).parts_with("pour_out")
    if not parts:
        raise ValueError(f"a {target} has no part to pour from")
    return parts[0]


def _describe_placement(placement: Window | Relative) -> dict[str, Any]:
    if isinstance(placement, Window):
        yaw = None if placement.yaw is None else [round(math.degrees(v), 1) for v in placement.yaw]
        return {"window_center_m": list(placement.center), "window_size_m": list(placement.size),
                "yaw_deg": yaw}
    yaw = None if placement.yaw is None else [round(math.degrees(v), 1) for v in placement.yaw]
    return {"relation": placement.relation, "reference": placement.reference,
            "distance_m": placement.distance, "jitter_m": placement.jitter, "yaw_deg": yaw}


# ---------------------------------------------------------------------------------------------
# The registry.

def register_task(
    family: type[Task],
    task_id: str,
    *,
    target: str,
    destination: str | None = None,
    tier: Tier,
    instructions: Sequence[str],
    robots: Sequence[str] = ("fr3",),
    shapes: dict[str, dict[str, tuple[float, float]]] | None = None,
    use_region: str | None = None,
) -> type[Task]:
    """Register ``family`` with its objects filled in as task ``task_id``; returns the class.
    ``use_region``: the target's part the task works, where it has several alike
    (:attr:`Task.use_region`).

    Raises:
        ValueError: a malformed id, an unknown tier, an object the ontology lacks, a
            ``use_region`` the target lacks, no instruction, or an id registered twice.
    """
    if not family.skill or Task not in family.__mro__:
        raise TypeError(f"{family.__name__} is not a task family (a Task subclass with a skill)")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*-v[0-9]+", task_id):
        raise ValueError(f"task id {task_id!r} must end in a version, e.g. 'hang-mug-v1'")
    if tier not in TIERS:
        raise ValueError(f"{task_id}: tier must be one of {TIERS}, got {tier!r}")
    for name in (target, destination):
        if name is not None:
            category(name)  # KeyError listing the known categories
    for name, ranges in (shapes or {}).items():
        if name not in (target, destination):
            raise ValueError(f"{task_id}: shapes names {name!r}, which is not one of its objects")
        for param, (lo, hi) in ranges.items():
            if not 0 < lo <= hi:
                raise ValueError(f"{task_id}: {name}.{param} range [{lo}, {hi}] is empty or not positive")
    if use_region is not None and use_region not in category(target).parts:
        raise ValueError(f"{task_id}: use_region {use_region!r} is not a part of the {target}")
    phrasings = tuple(dict.fromkeys(t.strip() for t in instructions if t.strip()))
    if not phrasings:
        raise ValueError(f"{task_id}: at least one instruction is needed")
    doc = inspect.cleandoc(family.__doc__ or "")
    cls = type(
        "".join(w.capitalize() for w in task_id.replace("-", "_").split("_")),
        (family,),
        {
            "__doc__": f"{task_id}: {phrasings[0]}.\n\n{doc}",
            "__module__": family.__module__,
            "task_id": task_id,
            "target": target,
            "destination": destination,
            "tier": tier,
            "instructions": phrasings,
            "robots": tuple(robots),
            "shapes": {k: dict(v) for k, v in (shapes or {}).items()},
            "use_region": use_region,
        },
    )
    TASKS.register(task_id, cls)
    return cls


def register_composite(
    family: type[CompositeTask],
    task_id: str,
    *,
    steps: Sequence[str],
    tier: Tier,
    instructions: Sequence[str],
    robots: Sequence[str] = ("fr3",),
) -> type[Task]:
    """Register a composite of the registered single-step tasks ``steps`` as ``task_id``.

    Raises:
        ValueError: fewer than two steps, a step that is itself a composite, and whatever
            :func:`register_task` refuses.
        KeyError: a step that is not registered (the message lists the known ids).
    """
    if len(steps) < 2:
        raise ValueError(f"{task_id}: a composite has at least two steps, got {list(steps)}")
    for step in steps:
        if issubclass(TASKS.get(step), CompositeTask):  # KeyError lists the known ids
            raise ValueError(f"{task_id}: step {step} is itself a composite")
    first, last = TASKS.get(steps[0]), TASKS.get(steps[-1])
    cls = register_task(family, task_id, target=first.target, destination=last.destination, tier=tier,
                        instructions=instructions, robots=robots)
    cls.steps = tuple(steps)  # type: ignore[attr-defined]
    return cls


def get_task(task_id: str) -> Task:
    """A new instance of the task ``task_id`` (KeyError lists the known ids)."""
    return TASKS.get(task_id)()


def task_ids(tier: Tier | None = None, robot: str | None = None) -> list[str]:
    """Registered task ids (in registration order), optionally of one tier or robot."""
    return [name for name, cls in _in_order()
            if (tier is None or cls.tier == tier) and (robot is None or robot in cls.robots)]


def _in_order() -> list[tuple[str, type[Task]]]:
    return sorted(TASKS.items(), key=lambda kv: _ORDER.get(kv[0], len(_ORDER)))


def find_task(intent: Intent) -> str:
    """The id of the task a parsed intent asks for: its action, object and destination.

    Raises:
        ValueError: no registered task runs it; the message says what is supported.
    """
    for name, cls in _in_order():
        if (intent.next_action in cls.actions and intent.target == cls.target
                and intent.destination == cls.destination
                and cls.use_region in (None, intent.use_region)):
            return name
    parts = sorted(str(cls.use_region) for _, cls in _in_order()
                   if cls.use_region is not None and intent.next_action in cls.actions
                   and intent.target == cls.target and intent.destination == cls.destination)
    if parts:
        raise ValueError(f"no task yet for {intent.next_action.value} the {intent.target}'s "
                         f"{(intent.use_region or 'whole').replace('_', ' ')}; tasks work its "
                         f"{', '.join(p.replace('_', ' ') for p in parts)}")
    targets: dict[str, set[str]] = {}
    dests: dict[str, set[str]] = {}
    for _, cls in _in_order():
        if issubclass(cls, CompositeTask):
            continue
        targets.setdefault(cls.skill, set()).add(cls.target)
        if cls.destination:
            dests.setdefault(cls.skill, set()).add(cls.destination)
    supported = "; ".join(
        f"{skill} the {'/'.join(sorted(t))}"
        + (f" -> {'/'.join(sorted(dests[skill]))}" if skill in dests else "")
        for skill, t in targets.items()
    )
    raise ValueError(
        f"no task yet for {intent.next_action.value} {intent.target}"
        + (f" -> {intent.destination}" if intent.destination else "")
        + f" (supported: {supported})"
    )


def find_steps(intents: Sequence[Intent]) -> str:
    """The id of the task a sentence's intents ask for: one intent's task (:func:`find_task`),
    or the composite whose steps are the tasks of several intents, in that order.

    Raises:
        ValueError: no task runs them; for several, the message lists the composites.
    """
    if len(intents) == 1:
        return find_task(intents[0])
    wanted = tuple(find_task(i) for i in intents)
    for name, cls in _in_order():
        if issubclass(cls, CompositeTask) and cls.steps == wanted:
            return name
    known = "; ".join(f"{name} ({' then '.join(cls.steps)})" for name, cls in _in_order()
                      if issubclass(cls, CompositeTask))
    raise ValueError(f"no composite task runs {' then '.join(wanted)} (composites: {known or 'none'})")


def task_for(intent: Intent) -> Task:
    """The task that runs ``intent`` (:func:`find_task`), as a new instance."""
    return get_task(find_task(intent))


# ---------------------------------------------------------------------------------------------
# The tasks. Tiers follow AffordSim's: generic objects grasped anywhere are Easy; grasps that
# must land on (or avoid) a functional part are Medium; hanging a mug by its small handle ring
# on a hook, AffordSim's hang_mugcup, is Hard (its alignment tolerance is the tightest).

_GENERIC = ("banana", "cube", "box", "bottle")
_WITH_PARTS = ("hammer", "pan", "scoop", "mug", "paper_cup", "kettle")
# A box here is a closed carton (its body affords no "contain"): things go on it, not in it.
_ON = {"plate": "on", "tray": "on", "bowl": "in", "box": "on"}
# Shapes pinned where the everyday draws never fit: a 20-24 cm banana or carrot lies in a fruit
# bowl (24-28 cm across), not in a 12-18 cm soup bowl; a block drops into a mug whose mouth is
# 5-5.5 cm when it is 2.6-3.1 cm on a side (its diagonal then passes at any yaw, MOUTH_SHARE).
_FIT: dict[tuple[str, str], dict[str, dict[str, tuple[float, float]]]] = {
    ("banana", "bowl"): {"bowl": {"radius": (0.12, 0.14)}},
    ("carrot", "bowl"): {"bowl": {"radius": (0.12, 0.14)}},
    ("cube", "mug"): {"cube": {"size": (0.026, 0.031)}},
}
_ONTO = {"on": "onto", "in": "into"}
_ORDER: dict[str, int] = {}


def _say(name: str) -> str:
    return name.replace("_", " ")


def _slug(name: str) -> str:
    return name.replace("_", "-")


def _add(family: type[Task], task_id: str, **kw: Any) -> None:
    _ORDER[task_id] = len(_ORDER)
    register_task(family, task_id, **kw)


#: Tasks measured on the other arms too (bench/results/skill_success_<arm>.md); the rest on the
#: FR3 alone.
_ON_OTHER_ARMS = {"pick-scoop-v1", "place-banana-plate-v1"}
#: Every arm of AffordSim's five besides the reference: each reaches 0.8-1.0 on both tasks.
_OTHER_ARMS = ("ur5e", "kinova3", "panda", "xarm7", "sawyer")


def _robots(task_id: str) -> tuple[str, ...]:
    return ("fr3", *_OTHER_ARMS) if task_id in _ON_OTHER_ARMS else ("fr3",)


for _t in (*_GENERIC, *_WITH_PARTS):
    _add(PickTask, f"pick-{_slug(_t)}-v1", target=_t, tier="easy" if _t in _GENERIC else "medium",
         instructions=(f"pick up the {_say(_t)}", f"grab the {_say(_t)}", f"lift the {_say(_t)}",
                       *([f"pick up the {_say(_t)} by the handle"] if "handle" in category(_t).parts
                         else [])),
         robots=_robots(f"pick-{_slug(_t)}-v1"))
for _t in ("banana", "cube", "box", "bottle", "paper_cup", "mug"):
    for _d in ("plate", "tray", "bowl", "box"):
        if _d == _t:
            continue
        _p = _ON[_d]
        _add(PlaceTask, _place_id(_t, _d), target=_t, destination=_d,
             tier="easy" if _t in _GENERIC else "medium", robots=_robots(_place_id(_t, _d)),
             shapes=_FIT.get((_t, _d)),
             instructions=(f"put the {_say(_t)} {_p} the {_d}", f"place the {_say(_t)} {_p} the {_d}",
                           f"move the {_say(_t)} {_ONTO[_p]} the {_d}"))
_add(HangTask, "hang-mug-v1", target="mug", destination="rack", tier="hard",
     instructions=("hang the mug on the rack", "hang the mug up on the rack",
                   "hang the mug on a hook of the rack"))
# AffordSim's hang_cup (Medium, beside the Hard hang_mugcup): a teacup on the same rack.
_add(HangTask, "hang-teacup-v1", target="teacup", destination="rack", tier="medium",
     instructions=("hang the teacup on the rack", "hang the teacup up on the rack",
                   "hang the tea cup on a hook of the rack"))
_add(PourTask, "pour-kettle-v1", target="kettle", destination="bowl", tier="medium",
     instructions=("pour water from the kettle into the bowl", "pour the kettle into the bowl",
                   "empty the kettle into the bowl"))
for _t in ("paper_cup", "mug"):
    _add(PourTask, f"pour-{_slug(_t)}-v1", target=_t, destination="bowl", tier="medium",
         instructions=(f"pour the {_say(_t)} into the bowl", f"pour water from the {_say(_t)} into the bowl",
                       f"empty the {_say(_t)} into the bowl"))
_add(OpenDrawerTask, "open-drawer-v1", target="cabinet", tier="medium",
     instructions=("open the drawer", "pull the drawer open", "open the cabinet's drawer"))
# AffordSim's pull_cabinet7 and pull_cabinet15: one drawer of three, named by the sentence.
for _d in ("top", "bottom"):
    _add(ChestDrawerTask, f"open-chest-{_d}-drawer-v1", target="chest", tier="medium",
         use_region=f"{_d}_drawer",
         instructions=(f"open the {_d} drawer", f"pull the {_d} drawer open",
                       f"open the chest's {_d} drawer"))
# AffordSim's open_microwave and close_microwave: the microwave's door swings about a vertical
# hinge, and the open skill follows its handle's arc. (Its pour_pan is not built: a pan held by the
# end of its handle from above turns in the fingers and stays on the table.)
_add(SwingDoorTask, "open-microwave-v1", target="microwave", tier="medium",
     instructions=("open the microwave", "open the microwave door", "open the door of the microwave"))
_add(CloseDoorTask, "close-microwave-v1", target="microwave", tier="medium",
     instructions=("close the microwave", "close the microwave door", "shut the microwave"))
# A basket pours over its rim (the ontology's pour_out part) held by its handle, as a mug does.
_add(PourTask, "pour-basket-v1", target="basket", destination="bowl", tier="medium",
     instructions=("pour the basket into the bowl", "pour water from the basket into the bowl",
                   "empty the basket into the bowl"))

# AffordSim's benchmark tasks (afford_sim.benchmark maps its ids to these), Easy tier first. The
# seed's "cup" and "doraemoncup" are our mug.
for _t, _d, _p in (("bowl", "plate", "on"), ("carrot", "bowl", "in"), ("carrot", "plate", "on"),
                   ("chocolate_box", "sugar_box", "on"), ("leek", "cutting_board", "on"),
                   ("cube", "mug", "in")):
    _add(PlaceTask, _place_id(_t, _d), target=_t, destination=_d, tier="easy",
         shapes=_FIT.get((_t, _d)),
         instructions=(f"put the {_say(_t)} {_p} the {_say(_d)}", f"place the {_say(_t)} {_p} the {_say(_d)}",
                       f"move the {_say(_t)} {_ONTO[_p]} the {_say(_d)}"))
for _t in ("bottle", "soup_can"):
    _add(PlaceOnTableTask, f"place-{_slug(_t)}-table-v1", target=_t, tier="easy",
         instructions=(f"put the {_say(_t)} on the table", f"place the {_say(_t)} on the table",
                       f"set the {_say(_t)} down on the table"))

# Medium tier, pick and place: the grasp must land on the part that carries the object (a
# mug's handle, a kettle's handle, a paper cup's body below the rim it would crush). "On the
# shelf" is on its top board, the one a hand reaches from above.
_add(PlaceOnTableTask, "place-paper-cup-table-v1", target="paper_cup", tier="medium",
     instructions=("put the paper cup on the table", "place the paper cup on the table",
                   "set the paper cup down on the table"))
_add(StackTask, "stack-cube-v1", target="cube", destination="cube", tier="medium",
     instructions=("stack the cube on the other cube", "put the cube on top of the other cube",
                   "place the cube on the other cube"))
# Pull/push tier: objects wider than the hand (the coffee tin) or lying flat (the cracker box)
# are pushed onto a target mat.
for _t in ("coffee_can", "cheese_box"):
    _add(PushTask, f"push-{_slug(_t)}-v1", target=_t, destination="target_mat", tier="medium",
         instructions=(f"push the {_say(_t)} onto the target", f"push the {_say(_t)} to the target",
                       f"slide the {_say(_t)} onto the target mat"))
_LOW_SHELF = {"shelf": {"height": (0.2, 0.25), "width": (0.4, 0.5)}}
for _t, _d, _p in (("bell_pepper", "pan", "in"), ("kettle", "kettle_base", "on"),
                   ("mug", "shelf", "on"), ("scrub_bottle", "shelf", "on")):
    _add(PlaceOnShelfTask if _d == "shelf" else PlaceTask, _place_id(_t, _d), target=_t, destination=_d,
         tier="medium", shapes=_LOW_SHELF if _d == "shelf" else _FIT.get((_t, _d)),
         instructions=(f"put the {_say(_t)} {_p} the {_say(_d)}", f"place the {_say(_t)} {_p} the {_say(_d)}",
                       f"move the {_say(_t)} {_ONTO[_p]} the {_say(_d)}"))
# A lid is held by its knob (it is wider than the hand) and closes the pot's mouth.
_add(LidOnPotTask, "place-lid-pot-v1", target="lid", destination="pot", tier="medium",
     instructions=("put the lid on the pot", "place the lid on the pot", "cover the pot with the lid"))

# AffordSim's paper cup tasks. The seed's "mugcup" is our mug (and "cup" a synonym of it), so
# its other "cup" is read as the paper cup: onto the low shelf as the mug is, and nested into a
# second paper cup (stack_papercup). Pinned cups nest at any yaw (NestTask).
_add(PlaceOnShelfTask, _place_id("paper_cup", "shelf"), target="paper_cup", destination="shelf",
     tier="medium", shapes=_LOW_SHELF,
     instructions=("put the paper cup on the shelf", "place the paper cup on the shelf",
                   "move the paper cup onto the shelf"))
_NESTING_CUPS = {"paper_cup": {"bottom_radius": (0.021, 0.022), "flare": (0.008, 0.009)}}
_add(NestTask, "stack-paper-cup-v1", target="paper_cup", destination="paper_cup", tier="medium",
     shapes=_NESTING_CUPS,
     instructions=("stack the paper cup on the other paper cup", "put the paper cup into the other paper cup",
                   "nest the paper cup in the other paper cup"))

# Composites (AffordSim's long-horizon tier): steps that run alone above, chained in one scene.
# Two things onto one plate: the second goes down beside the first (the place skill's free spot).
_COMPOSITES: tuple[tuple[str, tuple[str, str], Tier, tuple[tuple[str, str, str], ...]], ...] = (
    ("place-banana-plate-then-cube-mug-v1", ("place-banana-plate-v1", "place-cube-mug-v2"), "hard",
     (("banana", "on", "plate"), ("cube", "in", "mug"))),
    ("place-carrot-plate-then-cube-plate-v1", ("place-carrot-plate-v1", "place-cube-plate-v1"), "medium",
     (("carrot", "on", "plate"), ("cube", "on", "plate"))),
)
for _id, _steps, _tier, ((_t1, _p1, _d1), (_t2, _p2, _d2)) in _COMPOSITES:
    _ORDER[_id] = len(_ORDER)
    register_composite(
        PlaceSequenceTask, _id, steps=_steps, tier=_tier,
        instructions=(f"put the {_t1} {_p1} the {_d1}, then put the {_t2} {_p2} the {_d2}",
                      f"first place the {_t1} {_p1} the {_d1} and then place the {_t2} {_p2} the {_d2}",
                      f"move the {_t1} {_ONTO[_p1]} the {_d1}; then move the {_t2} {_ONTO[_p2]} the {_d2}"))

# Three things into one open paper box (AffordSim's composite_3picks_to_paperbox): each step is
# a task of its own, small groceries whose footprint fits the box's mouth at any yaw. The box is
# pinned to the larger part of its range (27-30 x 19-22 cm, 8-14 cm deep): three things side
# by side on its floor need that room. The widest goes in first, to the middle, and the smallest
# last, into the room left beside the others (in the other order the pepper found no room, or
# the can, let go at the rim, landed on the cube and fell over).
_INTO_BOX = ("bell_pepper", "soup_can", "cube")
_BIG_BOX = {"paper_box": {"length": (0.27, 0.3), "width": (0.19, 0.22)}}
for _t in _INTO_BOX:
    _add(PlaceTask, f"place-{_slug(_t)}-paper-box-v1", target=_t, destination="paper_box", tier="easy",
         shapes=_BIG_BOX,
         instructions=(f"put the {_say(_t)} in the paper box", f"place the {_say(_t)} in the paper box",
                       f"drop the {_say(_t)} into the paper box"))
_ORDER["place-bell-pepper-soup-can-cube-paper-box-v1"] = len(_ORDER)
register_composite(
    PlaceSequenceTask, "place-bell-pepper-soup-can-cube-paper-box-v1",
    steps=tuple(f"place-{_slug(_t)}-paper-box-v1" for _t in _INTO_BOX), tier="medium",
    instructions=(", then ".join(f"put the {_say(_t)} in the paper box" for _t in _INTO_BOX),
                  "first " + " and then ".join(f"place the {_say(_t)} in the paper box" for _t in _INTO_BOX),
                  "; then ".join(f"move the {_say(_t)} into the paper box" for _t in _INTO_BOX)))

# One object through two steps (AffordSim's composite_pour_then_hang): the mug poured, set down
# where it stood, then taken again by its body and hung.
_ORDER["pour-mug-then-hang-mug-v1"] = len(_ORDER)
register_composite(
    PourThenHangTask, "pour-mug-then-hang-mug-v1", steps=("pour-mug-v1", "hang-mug-v1"), tier="hard",
    instructions=("pour the mug into the bowl, then hang the mug on the rack",
                  "first pour the mug into the bowl and then hang the mug on the rack",
                  "empty the mug into the bowl; then hang the mug up on the rack"))

# Two pours from one kettle (AffordSim's composite_double_pour_kettle): into the bowl, set down,
# then into a mug (a receiver of its own: pouring tea into a cup).
_add(PourTask, "pour-kettle-mug-v1", target="kettle", destination="mug", tier="medium",
     instructions=("pour the kettle into the mug", "pour water from the kettle into the mug",
                   "empty the kettle into the mug"))
_ORDER["pour-kettle-bowl-then-mug-v1"] = len(_ORDER)
register_composite(
    DoublePourTask, "pour-kettle-bowl-then-mug-v1", steps=("pour-kettle-v1", "pour-kettle-mug-v1"),
    tier="hard",
    instructions=("pour the kettle into the bowl, then pour the kettle into the mug",
                  "first pour water from the kettle into the bowl and then pour water from the kettle "
                  "into the mug",
                  "pour the kettle into the bowl; then pour the kettle into the mug"))

# Four blocks into one tower (AffordSim's stack_four_cube): the stack task three times, each on
# the block put down before. The sentence names the blocks as a group; the parser reads "the four
# cubes into a tower" as that many stacks (afford_perception.parser.parse_steps).
_ORDER["stack-cube-tower-v1"] = len(_ORDER)
register_composite(
    TowerTask, "stack-cube-tower-v1", steps=("stack-cube-v1",) * 3, tier="hard",
    instructions=("stack the four cubes into a tower", "build a tower out of the four cubes",
                  "stack the four cubes on top of each other"))

# Three paper cups onto one tray (AffordSim's composite_3cups_to_tray; its "cup" read as the
# paper cup, as in pick_cup_place_woodshelf): the paper cup's place on the tray three times,
# each on a cup of its own. The parser reads "the three paper cups" as that many places
# (afford_perception.parser.parse_steps).
_ORDER["place-paper-cups-tray-v1"] = len(_ORDER)
register_composite(
    PlaceEachTask, "place-paper-cups-tray-v1", steps=(_place_id("paper_cup", "tray"),) * 3, tier="hard",
    instructions=("put the three paper cups on the tray", "place all three paper cups on the tray",
                  "move the three paper cups onto the tray"))

# A push, then a pick and place onto the shelf (AffordSim's composite_push_pick_to_shelf).
_ORDER["push-cheese-box-then-place-paper-cup-shelf-v1"] = len(_ORDER)
register_composite(
    PushThenPlaceTask, "push-cheese-box-then-place-paper-cup-shelf-v1",
    steps=("push-cheese-box-v1", _place_id("paper_cup", "shelf")), tier="hard",
    instructions=("push the cheese box onto the target, then put the paper cup on the shelf",
                  "first push the cheese box to the target and then place the paper cup on the shelf",
                  "slide the cheese box onto the target mat; then move the paper cup onto the shelf"))
