"""The Isaac Sim world's contract: its bridge publishes what a world must, and its scene is ours.

Isaac Sim cannot run here (no Isaac Sim, no GPU), so what can be checked is checked: the bridge
table against the contract, the scene script's syntax, and that its scene description is the one
the MuJoCo worlds build.
"""

from __future__ import annotations

import py_compile
from pathlib import Path

import numpy as np
import pytest

from afford_ros import contract
from afford_ros.isaac import scene

SCENE_FILE = Path(scene.__file__)


def test_bridge_publishes_exactly_the_world_topics_of_the_contract() -> None:
    """Perception and the task server subscribe to the contract's names; a bridge topic that is
    missing or misnamed leaves them waiting for a camera that never speaks."""
    bridge = scene.load_bridge()
    world = {t.name: t for t in contract.real_world_topics() if t.publisher == "sim_world"}
    world["/joint_states"] = contract.topic("/joint_states")  # the robot's own report
    pubs = {p["topic"]: p for p in bridge["camera"]["publishers"]}
    states = bridge["robot"]["joint_states"]
    pubs[states["topic"]] = states
    assert set(pubs) == set(world)
    for name, p in pubs.items():
        assert p["type"] == world[name].type
        assert p.get("frame_id", bridge["camera"]["frame_id"]) == world[name].frame, name
    # The command topic is Isaac-side, used by the executor alone, never a contract name.
    assert bridge["robot"]["joint_command"]["isaac_topic"] not in {t.name for t in contract.TOPICS}


def test_isaac_joint_state_carries_the_contract_joints_and_finger_width() -> None:
    """Every consumer of /joint_states reads fr3_joint1..7 and fr3_finger_width; Isaac's dofs are
    the MJCF's names (finger_joint1/2), in the importer's order."""
    dofs = ["finger_joint2", *(f"fr3_joint{i}" for i in range(7, 0, -1)), "finger_joint1"]
    names, pos = scene.joint_state_fields(dofs, [0.02, 7, 6, 5, 4, 3, 2, 1, 0.015])
    assert names == [*contract.ARM_JOINTS, contract.FINGER_WIDTH_JOINT]
    assert pos == [1, 2, 3, 4, 5, 6, 7, pytest.approx(0.035)]
    with pytest.raises(KeyError, match="lacks joints"):
        scene.joint_state_fields(["fr3_joint1"], [0.0])


def test_scene_script_compiles_and_says_clearly_that_it_needs_isaac() -> None:
    """Run outside Isaac Sim, the script must say where to run it, not fail on a deep import."""
    py_compile.compile(str(SCENE_FILE), doraise=True)
    with pytest.raises(RuntimeError, match="runs inside Isaac Sim"):
        scene.main(["pick up the mug"])


def test_isaac_scene_is_the_scene_the_mujoco_worlds_build(tmp_path: Path) -> None:
    """The same task and seed must give the same objects at the same poses in every world,
    or results from Isaac Sim and MuJoCo are not comparable."""
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import get_task

    placed = scene.scene_for("hang-mug-v1", 2)
    reference = sample_scene(get_task("hang-mug-v1").scene(2), seed=2)
    assert placed.names == reference.names
    for a, b in zip(placed.objects, reference.objects, strict=True):
        np.testing.assert_allclose(a.pose, b.pose)
    pose = scene.camera_pose(placed)
    cam = next(c for c in placed.spec.cameras if c.name == scene.PERCEPTION_CAMERA)
    np.testing.assert_allclose(pose.position, cam.extrinsics()[:3, 3])
    # The USD camera looks along its -z: the optical z axis.
    from scipy.spatial.transform import Rotation

    w, x, y, z = pose.usd_quat_wxyz
    usd_forward = Rotation.from_quat([x, y, z, w]).apply([0.0, 0.0, -1.0])
    np.testing.assert_allclose(usd_forward, cam.extrinsics()[:3, 2], atol=1e-9)
    xml = scene.write_mjcf(placed, tmp_path).read_text()
    assert "fr3_joint1" in xml and all(n in xml for n in placed.names)
