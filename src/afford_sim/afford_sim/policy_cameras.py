"""The cameras a visuomotor policy sees: a third-person view and a wrist view.

``afford generate`` records its datasets through them (batch world), ``afford policy eval``
renders them for a policy in closed loop, and the graph's ``sim_world`` renders them for the
policy node when its ``policy_camera_width`` is set (franky world): the same poses and field of
view everywhere, so a policy trained on a dataset sees the same pictures when it is served.
"""

from __future__ import annotations

import numpy as np

from afford_sim.scene import CameraSpec
from afford_sim.tasks import VIDEO_CAMERA

FRONT, WRIST = "front", "wrist"
#: Camera names in the simulated scene (the task's own ``front`` camera is perception's).
SCENE_CAMERAS = {FRONT: "demo_front", WRIST: "demo_wrist"}


def policy_cameras(width: int, height: int) -> tuple[CameraSpec, CameraSpec]:
    """The third-person camera (the task's ``video`` view) and the wrist camera.

    The wrist camera rides on the hand 10 cm behind the TCP and 5 cm beside it, looking along
    the approach at a point 10 cm ahead of the TCP, with the fingers' closing axis vertical in
    the image: the view a camera on a Franka hand's flange has of the grasp.
    """
    front = CameraSpec(name=SCENE_CAMERAS[FRONT], width=width, height=height, fovy=VIDEO_CAMERA.fovy,
                       position=VIDEO_CAMERA.position, target=VIDEO_CAMERA.target)
    eye = np.array([0.05, 0.0, -0.10])
    z = np.array([0.0, 0.0, 0.10]) - eye
    z /= np.linalg.norm(z)
    y = np.array([0.0, 1.0, 0.0])
    x = np.cross(y, z)
    tcp_T_cam = np.eye(4)
    tcp_T_cam[:3, :3] = np.column_stack([x, y, z])
    tcp_T_cam[:3, 3] = eye
    wrist = CameraSpec(name=SCENE_CAMERAS[WRIST], width=width, height=height, fovy=70.0,
                       world_T_camera=tcp_T_cam, mount="tcp")
    return front, wrist
