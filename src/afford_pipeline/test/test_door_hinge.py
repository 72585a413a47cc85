"""A hinged door's hinge, found from what the camera sees, against the simulator's true hinge.

The open skill swings a door's handle on the arc about this line; the robot's pipeline finds it
from the handle's grounded points and the object's cloud only (``door_hinge``), and only this
test reads where the hinge really is.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from afford_core.geometry import door_hinge
from afford_perception.grounding import make_source
from afford_perception.parser import parse
from afford_pipeline.episode import Episode
from afford_pipeline.spine import task_world
from afford_sim.tasks import get_task


def _true_hinge(world, name: str = "microwave") -> np.ndarray:  # noqa: ANN001
    """The hinge line's point at the table in world (the microwave's door link origin)."""
    obj = world.placed.object(name)
    door = next(lk for lk in obj.asset.links if lk.name == "door")
    return obj.pose[:3, :3] @ np.asarray(door.pos, dtype=float) + obj.pose[:3, 3]


@pytest.mark.parametrize("task_id", ["open-microwave-v1", "close-microwave-v1"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_hinge_is_found_within_a_centimetre_and_a_half(task_id: str, seed: int) -> None:
    """Shut (opening) or standing 40-70 deg open (closing): the hinge within 1.5 cm of the true
    line, the door's angle within 3 deg of its joint's, a positive turn about the axis opening
    it, and the face normal the handle is met along the door's true outward normal within 5 deg.
    A hinge 1.5 cm off moves the handle's planned arc at most 2 sin(45 deg) * 1.5 = 2.1 cm from
    the true one over 90 deg, which the fingers round the bar absorb."""
    task = get_task(task_id)
    world = task_world(task_id, seed)
    try:
        ep = Episode(parse(task.instruction), task, world, make_source("oracle"), seed=seed)
        ep.perceive()
        ep.ground()
        hinge = ep.hinge
        assert hinge is not None and ep.unseen_reason() is None
        true = _true_hinge(world)
        assert np.linalg.norm(hinge.point[:2] - true[:2]) < 0.015
        angle = world.object_joint("microwave", "door")
        assert abs(hinge.opened - angle) < math.radians(3.0)
        # The door's joint turns about -z of the microwave's frame (positive opens).
        assert np.dot(hinge.axis, -world.object_pose("microwave")[:3, 2]) > 0.99
        c, s = math.cos(angle), math.sin(angle)
        front = world.object_pose("microwave")[:3, :3] @ np.array([c, -s, 0.0])  # the door's outside
        assert np.dot(hinge.normal, front) > math.cos(math.radians(5.0))
        assert ep.pull_axis is not None and np.allclose(ep.pull_axis, hinge.normal)
    finally:
        world.close()


def test_no_hinge_without_enough_of_the_handle_or_a_door_face_beside_it() -> None:
    """Too few handle points, or a handle with no face running from it: no hinge (the episode
    abstains rather than guess an arc)."""
    rng = np.random.default_rng(0)
    handle = rng.normal([0.5, 0.0, 0.15], 0.005, size=(5, 3))
    whole = rng.uniform([0.4, -0.3, 0.0], [0.8, 0.3, 0.3], size=(2000, 3))
    assert door_hinge(handle, whole) is None
    bar = np.column_stack([np.full(40, 0.5), np.zeros(40), np.linspace(0.1, 0.2, 40)])
    assert door_hinge(bar, bar + [0.0, 0.0, 0.5]) is None  # nothing at the handle's heights


@pytest.mark.slow
@pytest.mark.parametrize(("sentence", "grounding"), [
    ("open the microwave", "oracle"), ("open the microwave", "geometric"), ("close the microwave", "oracle"),
])
def test_the_microwave_door_swings_open_and_shut_end_to_end(sentence: str, grounding: str) -> None:
    """The whole spine on seed 0: the handle grasped, the door swung on its arc past 70 deg open,
    or from its 40-70 deg start to under 5 deg; every stage passes its check. (The geometric
    grounding assumes a shut box's front and does not label an open microwave, so closing runs
    on the part labels.)"""
    from afford_pipeline.spine import SpineConfig, run_sentence

    result = run_sentence(sentence, SpineConfig(seed=0, grounding=grounding))
    assert result.selected is not None, result.abstained
    assert tuple(result.stages) == ("approach", "grasp", "pull")
    assert result.success, result.details


def test_the_ontology_says_which_moving_parts_swing() -> None:
    """Doors swing (the open skill follows an arc), drawers slide (it pulls straight, as before);
    a hinged part the category lacks is refused."""
    from afford_core.ontology import Category, category

    assert category("microwave").hinged == ("door",) and "drawer" not in category("cabinet").hinged
    with pytest.raises(ValueError, match="hinged names unknown parts"):
        Category("box2", ("body",), {"body": ("support",)}, "body", hinged=("lid",))
