"""Tests of the MuJoCo world: model compilation, arm and gripper control, state, rendering.

Two worlds are built once per module (each takes about a second): a furnished scene for
rendering and state queries, and a bare one with a cube for grasping and determinism.
"""

from __future__ import annotations

from collections.abc import Iterator

import mujoco
import numpy as np
import open3d as o3d
import pytest
import trimesh
from scipy.optimize import minimize

from afford_core.robots import get_robot
from afford_sim.mjcf import to_xml
from afford_sim.scene import (
    CameraSpec,
    ObjectSpec,
    SceneSpec,
    Window,
    collision_shapes,
    sample_scene,
)
from afford_sim.world import FINGERS, BatchWorld

TCP_OFFSET = float(get_robot("fr3").sim.tcp_matrix[2, 3])
FRONT = CameraSpec()
# A calibrated camera at the same place with a longer lens and an off-centre principal point.
K_CALIB = FRONT.intrinsics() @ np.diag([1.15, 1.1, 1.0]) + np.array([[0, 0, 31.0], [0, 0, -17.0], [0, 0, 0]])


@pytest.fixture(scope="module")
def furnished() -> Iterator[BatchWorld]:
    spec = SceneSpec(
        objects=(
            ObjectSpec("mug", "mug", 0, Window(center=(0.45, -0.15), size=(0.02, 0.02), yaw=(-0.8, -0.8))),
            ObjectSpec("cabinet", "cabinet", 0, Window(center=(0.72, 0.28), size=(0.02, 0.02))),
        ),
        cameras=(FRONT, CameraSpec.from_calibration("calib", K_CALIB, FRONT.extrinsics(), 640, 480)),
    )
    world = BatchWorld(sample_scene(spec, seed=0))
    yield world
    world.close()


@pytest.fixture(scope="module")
def bare() -> Iterator[BatchWorld]:
    cube = ObjectSpec("cube", "cube", 0, Window(center=(0.5, 0.0), size=(0, 0), yaw=(0, 0)))
    spec = SceneSpec(objects=(cube,), cameras=())
    world = BatchWorld(sample_scene(spec, seed=0))
    yield world
    world.close()


def top_down_q(world: BatchWorld, target: np.ndarray) -> np.ndarray:
    """Joint positions putting the TCP at ``target`` (in the x-z plane), pointing straight down.

    With joints 1, 3, 5 at zero the FR3 is planar; q6 = q2 - q4 keeps the hand vertical and
    q7 = 0.785 puts the finger closing axis along world y. Two unknowns: a tiny search.
    """
    def q(v: np.ndarray) -> np.ndarray:
        return np.array([0.0, v[0], 0.0, v[1], 0.0, v[0] - v[1], 0.785])

    res = minimize(lambda v: np.sum((world.tcp_pose_at(q(v))[:3, 3] - target) ** 2), [0.0, -2.0],
                   method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-14})
    assert np.sqrt(res.fun) < 1e-4, "test IK did not converge"
    return q(res.x)


def surface_distance(mesh: trimesh.Trimesh, points: np.ndarray) -> np.ndarray:
    """Unsigned distance of points to a mesh surface (open3d's exact query)."""
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(mesh.vertices.astype(np.float32)),
                        o3d.core.Tensor(mesh.faces.astype(np.uint32)))
    return scene.compute_distance(o3d.core.Tensor(points.astype(np.float32))).numpy()


def test_compiled_model_names_parts_and_round_trips_through_xml(furnished: BatchWorld) -> None:
    """Geom names carry (object, part) for segmentation and contacts; the XML is a usable artefact."""
    names = set(furnished.geom_names)
    assert {"table", "mug/handle/0", "mug/body/0", "cabinet/drawer_handle/0"} <= names
    assert all(n.startswith(("robot/", "mug/", "cabinet/")) or n in ("table", "floor") for n in names)
    m = furnished.model
    assert m.opt.timestep == pytest.approx(0.002)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert m.body_gravcomp[m.body("fr3_link4").id] == 1.0
    assert m.jnt_type[m.joint("mug/free").id] == mujoco.mjtJoint.mjJNT_FREE
    assert m.jnt_type[m.joint("cabinet/drawer").id] == mujoco.mjtJoint.mjJNT_SLIDE
    assert m.body_weldid[m.body("cabinet").id] == 0  # welded to the world
    assert m.body_subtreemass[m.body("mug").id] == pytest.approx(furnished.placed.object("mug").asset.mass)
    reloaded = mujoco.MjModel.from_xml_string(to_xml(furnished.spec))
    assert (reloaded.ngeom, reloaded.nbody, reloaded.nq, reloaded.nu) == (m.ngeom, m.nbody, m.nq, m.nu)


def test_arm_holds_configurations_under_gravity(furnished: BatchWorld) -> None:
    """Executed grasps are only as precise as the arm: it must sit where it is told (< 2 mm)."""
    w = furnished
    w.reset()
    q_ready = np.array(w.placed.spec.robot_q)
    w.set_arm_target(q_ready)
    w.advance(1.0)
    assert np.linalg.norm(w.tcp_pose()[:3, 3] - w.tcp_pose_at(q_ready)[:3, 3]) < 0.002
    # An outstretched configuration loads the shoulder the most.
    q_out = np.array([-0.6, 0.5, 0.0, -1.5, 0.0, 2.0, 0.785])
    result = w.move_arm([q_out], [2.0], settle=1.0)
    assert result.final_tcp_error < 0.002
    assert np.linalg.norm(w.tcp_pose()[:3, 3] - w.tcp_pose_at(q_out)[:3, 3]) < 0.002
    assert result.max_joint_error < 0.02  # tracking during the motion, not just at the end


def test_tcp_is_between_the_fingertips(furnished: BatchWorld) -> None:
    """Grasp poses name the TCP: 0.1034 m along the hand's z, z approach, y closing axis."""
    w = furnished
    w.reset()
    hand = w.data.body("hand")
    expected = hand.xpos + hand.xmat.reshape(3, 3) @ [0.0, 0.0, TCP_OFFSET]
    np.testing.assert_allclose(w.tcp_pose()[:3, 3], expected, atol=1e-12)
    np.testing.assert_allclose(w.tcp_pose()[:3, :3], hand.xmat.reshape(3, 3), atol=1e-12)
    # Fingers slide along the TCP's y: their midpoint is on the TCP axis, their offset along y.
    left, right = w.data.body("left_finger").xpos, w.data.body("right_finger").xpos
    rel = w.tcp_pose()[:3, :3].T @ (left - right)
    assert abs(rel[0]) < 1e-9 and abs(rel[1]) == pytest.approx(w.gripper_width(), abs=1e-6)
    assert w.gripper_width() == pytest.approx(0.08, abs=1e-3)  # starts open
    # In the ready pose the hand points down.
    assert w.tcp_pose()[2, 2] == pytest.approx(-1.0, abs=1e-3)


def test_objects_rest_where_placed_and_drawers_stay_where_left(furnished: BatchWorld) -> None:
    """A drawer that drifts shut, or a mug that slides after reset, breaks every task on it."""
    w = furnished
    w.reset()
    placed_mug = w.placed.object("mug").pose
    assert np.linalg.norm(w.object_pose("mug")[:3, 3] - placed_mug[:3, 3]) < 0.003
    assert w.in_contact("mug", "table") and not w.in_contact("mug", FINGERS)
    w.set_object_joint("cabinet", "drawer", 0.1)
    w.advance(1.0)
    assert w.object_joint("cabinet", "drawer") == pytest.approx(0.1, abs=0.002)
    # The planner's export follows the drawer: its pieces moved 0.1 m along the cabinet's front.
    static = {s.name: s for s in collision_shapes(w.placed)}
    front = w.object_pose("cabinet")[:3, 0]
    for s in w.collision_shapes():
        if s.part in ("drawer", "drawer_handle"):
            shift = s.pose[:3, 3] - static[s.name].pose[:3, 3]
            np.testing.assert_allclose(shift, 0.1 * front, atol=0.003)
    with pytest.raises(KeyError, match="joints: "):
        w.object_joint("cabinet", "lid")
    with pytest.raises(KeyError, match="no geom matches"):
        w.in_contact("mugg", "table")


@pytest.mark.parametrize("camera", ["front", "calib"])
def test_depth_back_projects_onto_the_true_surface(furnished: BatchWorld, camera: str) -> None:
    """Perception sees the sim through depth: pixels must land on the real object surface."""
    w = furnished
    w.reset()
    obs = w.render(camera)
    assert obs.rgb is not None and obs.rgb.shape == (480, 640, 3) and obs.rgb.dtype == np.uint8
    assert obs.depth is not None and obs.depth.dtype == np.float32
    spec_k = {c.name: c for c in w.placed.spec.cameras}[camera].intrinsics()
    np.testing.assert_allclose(obs.K, spec_k, atol=1e-3)  # what was rendered is what was asked
    np.testing.assert_allclose(obs.world_T_camera, FRONT.extrinsics(), atol=1e-6)
    cloud = w.observed_cloud(obs, "mug", depth_noise_std=0.0, dropout=0.0)
    assert len(cloud) > 500
    mesh = w.placed.object("mug").asset.mesh().apply_transform(w.object_pose("mug"))
    dist = surface_distance(mesh, cloud.points)
    assert np.median(dist) < 0.003 and np.percentile(dist, 99) < 0.005
    np.testing.assert_allclose(cloud.object_center, w.object_center("mug"))


def test_segmentation_labels_match_the_parts(furnished: BatchWorld) -> None:
    """The oracle labels are ground truth for training and evaluation: each point's label
    must be the part whose surface it lies on."""
    w = furnished
    w.reset()
    obs = w.render()
    cloud = w.observed_cloud(obs, "mug", depth_noise_std=0.0, dropout=0.0)
    asset, pose = w.placed.object("mug").asset, w.object_pose("mug")
    assert cloud.part_names == ("body", "handle", "rim")
    seen = set(np.unique(cloud.part_labels).tolist())
    assert {0, 1} <= seen and -1 not in seen
    for i, part in enumerate(cloud.part_names):
        if i not in seen:
            continue
        points = cloud.points[cloud.part_labels == i]
        on_part = surface_distance(asset.part_mesh(part).apply_transform(pose), points)
        assert np.mean(on_part < 0.001) > 0.97, part
    # Image-level labels: every mug pixel is labelled with a mug part, none with the cabinet's.
    assert obs.mask("mug").sum() == len(cloud)
    assert not np.any(obs.mask("mug") & obs.mask("cabinet"))


def test_observed_cloud_noise_and_dropout(furnished: BatchWorld) -> None:
    """Sensor realism: noisy depth and lost pixels, reproducible from a seed."""
    w = furnished
    w.reset()
    obs = w.render(rgb=False)
    assert obs.rgb is None
    clean = w.observed_cloud(obs, "mug", depth_noise_std=0.0, dropout=0.0)
    noisy = w.observed_cloud(obs, "mug", depth_noise_std=0.002, dropout=0.3, seed=4)
    again = w.observed_cloud(obs, "mug", depth_noise_std=0.002, dropout=0.3, seed=4)
    np.testing.assert_array_equal(noisy.points, again.points)
    assert 0.62 < len(noisy) / len(clean) < 0.78
    mesh = w.placed.object("mug").asset.mesh().apply_transform(w.object_pose("mug"))
    dist = surface_distance(mesh, noisy.points)
    assert 0.0005 < np.median(dist) < 0.003 and dist.max() < 0.02
    with pytest.raises(ValueError, match="dropout"):
        w.observed_cloud(obs, "mug", dropout=1.0)


def test_scene_cloud_drops_the_robot_and_excluded_objects(furnished: BatchWorld) -> None:
    """The planner's obstacle cloud must not contain the robot itself or the target object."""
    w = furnished
    w.reset()
    obs = w.render(rgb=False)
    assert obs.segmentation is not None and obs.depth is not None
    robot = obs.mask("robot").sum()
    assert robot > 0
    valid = int((obs.depth > 0).sum())
    everything = w.scene_cloud(obs)
    without_mug = w.scene_cloud(obs, exclude=["mug"])
    assert len(everything) == valid - robot
    assert len(everything) - len(without_mug) == obs.mask("mug").sum()
    with pytest.raises(KeyError, match="unknown names"):
        w.scene_cloud(obs, exclude=["kettle"])


def test_move_arm_rejects_impossible_commands(bare: BatchWorld) -> None:
    """The real controller refuses these; the simulator must too, before moving."""
    w = bare
    w.reset()
    q = np.array(w.placed.spec.robot_q)
    with pytest.raises(ValueError, match="rad/s"):
        w.move_arm([q + 1.0], [0.1])
    with pytest.raises(ValueError, match="outside its range"):
        w.set_arm_target(q + np.array([0, 0, 0, 3.0, 0, 0, 0]))
    with pytest.raises(ValueError, match="increasing"):
        w.move_arm([q, q], [1.0, 0.5])
    np.testing.assert_array_equal(w.arm_target(), q)


def grasp_and_lift(w: BatchWorld) -> tuple[float, float]:
    """Approach the cube from above, close, lift 12 cm. Returns (width after close, cube rise)."""
    centre = w.object_pose("cube")[:3, 3] + [0.0, 0.0, 0.0224]
    q_grasp, q_above = top_down_q(w, centre), top_down_q(w, centre + [0.0, 0.0, 0.12])
    w.move_arm([q_above, q_grasp], [1.2, 2.0], settle=0.1)
    width = w.close_gripper()
    z0 = w.object_pose("cube")[2, 3]
    w.move_arm([q_above], [1.0], settle=0.3)
    return width, w.object_pose("cube")[2, 3] - z0


def test_grasp_and_lift_a_cube(bare: BatchWorld) -> None:
    """End-to-end smoke test of contact physics: a closed grasp holds the object while lifting."""
    w = bare
    w.reset()
    width, rise = grasp_and_lift(w)
    assert width == pytest.approx(0.0448, abs=0.003)  # closed on the cube, not on air
    assert w.in_contact("robot/left_finger", "cube") and w.in_contact("robot/right_finger", "cube")
    assert rise == pytest.approx(0.12, abs=0.01)
    # Held, not balanced: it stays with the hand for another second.
    w.advance(1.0)
    cube_centre = w.object_pose("cube")[:3, 3] + [0.0, 0.0, 0.0224]
    assert np.linalg.norm(cube_centre - w.tcp_pose()[:3, 3]) < 0.01
    assert not w.in_contact("cube", "table")
    assert w.open_gripper() == pytest.approx(0.08, abs=1e-3)


def test_restore_then_replay_is_bit_exact(bare: BatchWorld) -> None:
    """Evaluations branch from saved states; a replay must reproduce the trajectory exactly."""
    w = bare
    w.reset()
    w.advance(0.05)
    start = w.save_state()

    def run() -> np.ndarray:
        trace = []
        grasp_and_lift(w)
        trace.append(w.data.qpos.copy())
        for _ in range(50):
            w.step(3)
            trace.append(w.data.qpos.copy())
        return np.array(trace)

    first = run()
    w.restore_state(start)
    assert w.time == pytest.approx(start.time)
    second = run()
    np.testing.assert_array_equal(first, second)
    other = w.save_state()
    w.reset()
    assert not np.array_equal(other.data, w.save_state().data)
