"""Offscreen RGB-D-segmentation rendering of a MuJoCo model, and pinhole camera geometry.

Frames. MuJoCo's camera frame looks along its -z with +y up and +x right; the OpenCV frame
used everywhere outside this module looks along +z with +y down and +x right. They share the
origin and x axis, so ``world_T_cv = world_T_mj @ diag(1, -1, -1, 1)`` (``mjcf.MJ_T_CV``).
Pixel ``(u, v)`` (column, row; row 0 at the top) has its centre at integer coordinates, as in
OpenCV, so a point ``p`` in the OpenCV camera frame lands at ``K @ p / p_z``.

Why not ``mujoco.Renderer``: it picks its GL backend once, when ``mujoco`` is first imported,
from ``MUJOCO_GL``; this module picks one at run time (``MUJOCO_GL`` if set, else EGL, then
OSMesa) so headless machines work without setup. It also reads colour-coded geom ids and depth
from one render pass, leaving a second pass for the lit RGB image.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from afford_sim.mjcf import MJ_T_CV

_BACKENDS = ("egl", "osmesa")


def _context_class(backend: str) -> Any:
    if backend not in ("egl", "osmesa", "glfw"):
        raise ValueError(f"MUJOCO_GL={backend!r} is not a backend this module supports (egl, osmesa, glfw)")
    before = os.environ.get("PYOPENGL_PLATFORM")
    try:
        return importlib.import_module(f"mujoco.{backend}").GLContext
    except Exception:
        # The backend modules set PYOPENGL_PLATFORM on import; undo it so the next can load.
        if before is None:
            os.environ.pop("PYOPENGL_PLATFORM", None)
        else:
            os.environ["PYOPENGL_PLATFORM"] = before
        raise


def create_gl_context(width: int, height: int) -> tuple[Any, str]:
    """An offscreen GL context and the backend's name: ``MUJOCO_GL`` if set, else EGL, then OSMesa.

    Raises:
        RuntimeError: listing why each backend failed.
    """
    wanted = os.environ.get("MUJOCO_GL", "").strip().lower()
    candidates = (wanted,) if wanted else _BACKENDS
    errors = []
    for backend in candidates:
        try:
            ctx = _context_class(backend)(width, height)
            ctx.make_current()
            return ctx, backend
        except Exception as err:  # any failure means: try the next backend
            errors.append(f"{backend}: {type(err).__name__}: {err}")
    raise RuntimeError(
        "no offscreen OpenGL backend works (" + "; ".join(errors) + "). Install libegl1 (EGL) or "
        "libosmesa6 (OSMesa), or set MUJOCO_GL to a working backend."
    )


@dataclass
class Observation:
    """One rendered camera view.

    Attributes:
        camera: Camera name.
        rgb: (H, W, 3) uint8 colour image (``None`` if not rendered).
        depth: (H, W) float32 depth along the optical axis in metres; 0 where nothing was hit.
        segmentation: (H, W) int32 index into ``labels``; -1 for background.
        labels: ``(object, part)`` per label index; the robot's are ``("robot", body)`` and
            the table's ``("table", "")``.
        K: 3x3 intrinsics (OpenCV convention).
        world_T_camera: 4x4 pose of the OpenCV camera frame in world.
        time: Simulation time of the view (s).
    """

    camera: str
    rgb: np.ndarray | None
    depth: np.ndarray | None
    segmentation: np.ndarray | None
    labels: tuple[tuple[str, str], ...]
    K: np.ndarray
    world_T_camera: np.ndarray
    time: float = 0.0

    def mask(self, obj: str, part: str | None = None) -> np.ndarray:
        """(H, W) bool mask of an object's pixels (or of one of its parts)."""
        if self.segmentation is None:
            raise ValueError(f"view {self.camera!r} was rendered without segmentation")
        ids = [i for i, (o, p) in enumerate(self.labels) if o == obj and (part is None or p == part)]
        return np.isin(self.segmentation, ids)


def backproject(depth: np.ndarray, K: np.ndarray, world_T_camera: np.ndarray,
                mask: np.ndarray | None = None) -> np.ndarray:
    """World points (N, 3) of the pixels in ``mask`` (default: all with depth > 0), row-major."""
    sel = depth > 0 if mask is None else mask & (depth > 0)
    v, u = np.nonzero(sel)
    return pixels_to_world(u, v, depth[v, u], K, world_T_camera)


def pixels_to_world(u: np.ndarray, v: np.ndarray, z: np.ndarray, K: np.ndarray,
                    world_T_camera: np.ndarray) -> np.ndarray:
    """World points of pixel coordinates ``(u, v)`` with optical-axis depths ``z``."""
    z = np.asarray(z, dtype=np.float64)
    x = (np.asarray(u, dtype=np.float64) - K[0, 2]) / K[0, 0] * z
    y = (np.asarray(v, dtype=np.float64) - K[1, 2]) / K[1, 1] * z
    pts = np.stack([x, y, z], axis=-1)
    return pts @ world_T_camera[:3, :3].T + world_T_camera[:3, 3]


def camera_pose(data: mujoco.MjData, cam_id: int) -> np.ndarray:
    """4x4 world pose of a model camera in the OpenCV convention."""
    t = np.eye(4)
    t[:3, :3] = data.cam_xmat[cam_id].reshape(3, 3) @ MJ_T_CV
    t[:3, 3] = data.cam_xpos[cam_id]
    return t


class CameraRenderer:
    """Renders model cameras offscreen into colour, depth and geom-id images.

    One GL context sized to the model's offscreen buffer serves every camera. Fast settings:
    no shadows, reflections or multisampling (``offsamples`` is set to 0 by the compiler).
    """

    def __init__(self, model: mujoco.MjModel, max_geom: int = 2000) -> None:
        self._model = model
        w, h = int(model.vis.global_.offwidth), int(model.vis.global_.offheight)
        self._ctx, self.backend = create_gl_context(w, h)
        self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        # Reversed z: depth buffer 1 at the near plane, 0 at the far plane (precise far away).
        self._mjr.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scene = mujoco.MjvScene(model, maxgeom=max_geom)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        self._opt = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._max = (w, h)

    def render(self, data: mujoco.MjData, cam_id: int, width: int, height: int, rgb: bool = True,
               depth: bool = True, geom_ids: bool = True) -> tuple[np.ndarray | None, ...]:
        """Render camera ``cam_id``.

        Returns:
            rgb (H, W, 3) uint8, depth (H, W) float32 metres (0: no hit), geom ids (H, W)
            int32 (-1: background or a non-geom); each ``None`` when not requested.
        """
        if self._ctx is None:
            raise RuntimeError("render called after close()")
        if width > self._max[0] or height > self._max[1]:
            raise ValueError(f"image {width}x{height} exceeds the offscreen buffer {self._max}")
        self._ctx.make_current()
        rect = mujoco.MjrRect(0, 0, width, height)
        self._cam.fixedcamid = cam_id
        mujoco.mjv_updateScene(self._model, data, self._opt, None, self._cam,
                               mujoco.mjtCatBit.mjCAT_ALL, self._scene)
        out_rgb = out_depth = out_ids = None
        if depth or geom_ids:
            # Flat id colours: no lighting, so this pass is cheap and its depth exact.
            self._scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = True
            self._scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
            try:
                mujoco.mjr_render(rect, self._scene, self._mjr)
                colour = np.empty((height, width, 3), dtype=np.uint8)
                zbuf = np.empty((height, width), dtype=np.float32)
                mujoco.mjr_readPixels(colour, zbuf, rect, self._mjr)
            finally:
                self._scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = False
                self._scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = False
            if depth:
                out_depth = np.flipud(self._linear_depth(zbuf))
            if geom_ids:
                out_ids = np.flipud(self._geom_ids(colour))
        if rgb:
            mujoco.mjr_render(rect, self._scene, self._mjr)
            colour = np.empty((height, width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(colour, None, rect, self._mjr)
            out_rgb = np.ascontiguousarray(np.flipud(colour))
        return out_rgb, out_depth, out_ids

    def intrinsics(self, width: int, height: int) -> np.ndarray:
        """3x3 K (OpenCV) of the frustum the last :meth:`render` used, for a W x H image.

        Read back from MuJoCo's GL camera rather than recomputed, so the reported K is the
        one the image was made with, whichever way the camera was specified.
        """
        g = self._scene.camera[0]
        near, bottom, top = float(g.frustum_near), float(g.frustum_bottom), float(g.frustum_top)
        half_w = float(g.frustum_width) or 0.5 * (top - bottom) * width / height  # 0: from aspect
        left = float(g.frustum_center) - half_w
        fx = near * width / (2 * half_w)
        fy = near * height / (top - bottom)
        # GL pixel centres sit at half-integers, OpenCV's at integers: shift by half a pixel.
        cx = -left * fx / near - 0.5
        cy = top * fy / near - 0.5
        return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])

    def _linear_depth(self, zbuf: np.ndarray) -> np.ndarray:
        extent = self._model.stat.extent
        near = float(self._model.vis.map.znear * extent)
        far = float(self._model.vis.map.zfar * extent)
        b = zbuf.astype(np.float64)
        # Inverse of the reversed-z perspective mapping b = near (far - z) / (z (far - near)).
        z = near * far / (b * (far - near) + near)
        z[b <= 0.0] = 0.0  # far plane: nothing was hit
        return z.astype(np.float32)

    def _geom_ids(self, colour: np.ndarray) -> np.ndarray:
        c = colour.astype(np.int64)
        segid = c[..., 0] + (c[..., 1] << 8) + (c[..., 2] << 16)  # scene geom index + 1; 0 = background
        n = self._scene.ngeom
        lut = np.full(n + 1, -1, dtype=np.int32)
        geoms = self._scene.geoms
        for i in range(n):
            g = geoms[i]
            if g.segid >= 0 and g.objtype == mujoco.mjtObj.mjOBJ_GEOM:
                lut[g.segid + 1] = g.objid
        return lut[np.clip(segid, 0, n)]

    def close(self) -> None:
        """Free the GL resources (also done at garbage collection)."""
        if self._ctx is not None:
            self._ctx.make_current()
            self._mjr.free()
            self._ctx.free()
            self._ctx = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: GL may already be gone
            pass
