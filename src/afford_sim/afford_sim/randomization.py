"""Domain randomization: AffordSim's five axes, declared, seeded and recorded.

AffordSim (Section 3.3) renders every trajectory under randomized object pose, object texture,
lighting (type, position, intensity, colour), background and Gaussian pixel noise; the issue
adds camera pose jitter. Here each axis is a switch of :class:`DomainRandomization` with its
ranges declared beside it; presets are registered by name in :data:`DOMAINS` (``none``,
``visual``, ``table1``, ``table2``, and each axis alone), and a comma list combines them
(``--randomize texture,lighting``).

What each axis does in the batch world:

* ``pose``: every object placed in a window gets the window the preset names (AffordSim's
  Table 1: a 30 cm square and 60 deg of yaw; its policy Table 2: 15 cm and 30 deg), centred where
  the task centres its own; objects placed relative to another follow it. Without it each
  task's own window (declared in ``Task.randomization``) is used.
* ``texture``: every part of every object gets a colour and a procedural pattern (flat,
  checker, gradient or speckle; cell size drawn) on texture coordinates projected from its
  vertices. The whole part shares one look, so a handle stays a visible part.
* ``lighting``: 1-3 lights, each directional, spot or point, placed on a hemisphere over the
  table and aimed at it, with a drawn intensity and a colour from a colour temperature; a drawn
  ambient level.
* ``background``: the floor, the table top and four walls around the workspace get drawn
  patterns and colours. The walls are visual only (no contact, no mass) and belong to the
  ``floor`` label, so perception leaves them out as it leaves out the floor.
* ``camera``: every camera (the wrist camera on its mount too) is shifted and turned by a
  drawn amount; the pipeline reads the shifted pose (a calibrated camera in another place, not
  a calibration error).
* ``noise``: Gaussian noise of a drawn standard deviation on every rendered RGB image (depth
  keeps the sensor noise the observed cloud always has).

The visual axes draw from their own stream (``seed`` and a fixed salt), after the scene is
placed: switching them on changes how a scene looks, never where its objects are, so a run with
and without them faces the same scenes. Depth and segmentation do not depend on texture,
lighting or noise. Every draw is in :meth:`DomainDraw.as_dict`, which the spine records with
each rollout (``randomization["domain"]``); the same seed and preset give the same draw.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from afford_core.registry import Registry
from afford_sim.scene import CameraSpec, PlacedScene, SceneSpec, Window, sample_scene

#: The axes a preset switches on, in the order the seed lists them (camera added by the issue).
AXES: tuple[str, ...] = ("pose", "texture", "lighting", "background", "camera", "noise")
#: Key of the domain draw in a rollout's ``randomization`` record (an object may not take it).
RECORD_KEY = "domain"
#: Salt of the visual axes' random stream: independent of the scene's placement draw.
_SALT = 0xD0A1
#: Salt of the pixel-noise stream (``BatchWorld.render`` numbers each image in it).
NOISE_SALT = 0x9015E
PATTERNS: tuple[str, ...] = ("flat", "checker", "gradient", "speckle")
LIGHT_TYPES: tuple[str, ...] = ("directional", "spot", "point")
_LIGHT_ENUM = {"directional": mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
               "spot": mujoco.mjtLightType.mjLIGHT_SPOT, "point": mujoco.mjtLightType.mjLIGHT_POINT}
#: Walls of the room the background axis puts around the table: (centre x, y; half extents x, y).
#: Far enough that no arm or camera reaches them, near enough to fill the cameras' backgrounds.
WALLS: tuple[tuple[float, float, float, float], ...] = (
    (-1.3, 0.0, 0.02, 2.2), (2.4, 0.0, 0.02, 2.2), (0.55, -2.2, 1.85, 0.02), (0.55, 2.2, 1.85, 0.02),
)
WALL_HEIGHT = 2.5


def _range(value: tuple[float, float], what: str, lo: float = 0.0) -> tuple[float, float]:
    a, b = (float(v) for v in value)
    if not (math.isfinite(a) and math.isfinite(b)) or a < lo or a > b:
        raise ValueError(f"{what} must be a range ({lo:g} <= low <= high), got {value}")
    return a, b


@dataclass(frozen=True)
class DomainRandomization:
    """Which axes are randomized, and over what ranges (every range is uniform).

    Attributes:
        pose: (window side in m, yaw range in deg) replacing every task window; None: the
            task's own windows.
        texture: Draw a colour and a pattern per object part.
        lighting: Draw the lights and the ambient level.
        background: Draw the floor's, the table top's and the walls' patterns.
        camera: Shift and turn every camera.
        noise: Add Gaussian pixel noise to RGB images.
        camera_shift: Largest shift of a camera along each world axis (m).
        camera_turn_deg: Largest turn of a camera (deg), about a uniformly drawn axis.
        noise_std: Range of the pixel noise's standard deviation (8-bit levels).
        lights: Range of the number of lights.
        light_intensity: Range of each light's diffuse level (0-1 per channel, before colour).
        ambient: Range of the ambient level.
        light_temperature_k: Range of the lights' colour temperature (K): 2700 K is a warm
            bulb, 6500 K daylight.
        light_distance: Range of the lights' distance from the table's centre (m).
        light_elevation_deg: Range of the lights' elevation above the table (deg).
        pattern_cell: Range of a pattern's cell size on objects (m).
    """

    pose: tuple[float, float] | None = None
    texture: bool = False
    lighting: bool = False
    background: bool = False
    camera: bool = False
    noise: bool = False
    camera_shift: float = 0.02
    camera_turn_deg: float = 2.0
    noise_std: tuple[float, float] = (2.0, 8.0)
    lights: tuple[int, int] = (1, 3)
    light_intensity: tuple[float, float] = (0.25, 0.7)
    ambient: tuple[float, float] = (0.15, 0.45)
    light_temperature_k: tuple[float, float] = (2700.0, 7500.0)
    light_distance: tuple[float, float] = (1.2, 2.5)
    light_elevation_deg: tuple[float, float] = (30.0, 85.0)
    pattern_cell: tuple[float, float] = (0.008, 0.04)

    def __post_init__(self) -> None:
        if self.pose is not None:
            side, yaw = (float(v) for v in self.pose)
            if not (0.0 < side <= 1.0 and 0.0 <= yaw <= 360.0):
                raise ValueError(
                    f"pose window must be (0 < side <= 1 m, 0 <= yaw <= 360 deg), got {self.pose}")
            object.__setattr__(self, "pose", (side, yaw))
        if not 0 <= self.camera_shift <= 0.2 or not 0 <= self.camera_turn_deg <= 20:
            raise ValueError("camera_shift must be in [0, 0.2] m and camera_turn_deg in [0, 20] deg")
        _range(self.noise_std, "noise_std")
        lo, hi = self.lights
        if not 1 <= lo <= hi <= 8:
            raise ValueError(f"lights must be a range within 1..8, got {self.lights}")
        _range(self.light_intensity, "light_intensity")
        _range(self.ambient, "ambient")
        _range(self.light_temperature_k, "light_temperature_k", lo=1000.0)
        _range(self.light_distance, "light_distance", lo=0.3)
        el = _range(self.light_elevation_deg, "light_elevation_deg")
        if el[1] > 90.0:
            raise ValueError("light_elevation_deg must stay within 0..90")
        if _range(self.pattern_cell, "pattern_cell")[0] <= 0:
            raise ValueError("pattern_cell must be positive")

    @property
    def axes(self) -> tuple[str, ...]:
        """The axes switched on, in :data:`AXES` order."""
        return tuple(a for a in AXES if (self.pose is not None if a == "pose" else getattr(self, a)))

    @property
    def visual(self) -> bool:
        """Any axis besides the pose: the scene's look (or its cameras) is drawn."""
        return any(a != "pose" for a in self.axes)

    def describe(self) -> dict[str, Any]:
        """The declared randomization: each axis on, with its ranges (recorded with a run)."""
        out: dict[str, Any] = {}
        if self.pose is not None:
            out["pose"] = {"window_m": self.pose[0], "yaw_deg": self.pose[1]}
        if self.texture:
            out["texture"] = {"patterns": list(PATTERNS), "cell_m": list(self.pattern_cell)}
        if self.lighting:
            out["lighting"] = {"count": list(self.lights), "types": list(LIGHT_TYPES),
                               "intensity": list(self.light_intensity), "ambient": list(self.ambient),
                               "temperature_k": list(self.light_temperature_k),
                               "distance_m": list(self.light_distance),
                               "elevation_deg": list(self.light_elevation_deg)}
        if self.background:
            out["background"] = {"surfaces": ["floor", "table", "walls"], "patterns": list(PATTERNS)}
        if self.camera:
            out["camera"] = {"shift_m": self.camera_shift, "turn_deg": self.camera_turn_deg}
        if self.noise:
            out["noise"] = {"rgb_std": list(self.noise_std)}
        return out


DOMAINS: Registry[DomainRandomization] = Registry("randomization")
"""Domain-randomization presets by name (``--randomize NAME``; a comma list combines them)."""
DOMAINS.register("none", DomainRandomization())
DOMAINS.register("visual", DomainRandomization(texture=True, lighting=True, background=True, camera=True,
                                               noise=True))
# AffordSim's Table 1: "100 times under aggressive randomization, [...] a 30 cm horizontal window
# and a 60 deg yaw range"; its Table 2 (policies): pose only, 15 cm and 30 deg.
DOMAINS.register("table1", dataclasses.replace(DOMAINS.get("visual"), pose=(0.30, 60.0)))
DOMAINS.register("table2", DomainRandomization(pose=(0.15, 30.0)))
DOMAINS.register("texture", DomainRandomization(texture=True))
DOMAINS.register("lighting", DomainRandomization(lighting=True))
DOMAINS.register("background", DomainRandomization(background=True))
DOMAINS.register("camera", DomainRandomization(camera=True))
DOMAINS.register("noise", DomainRandomization(noise=True))


def domain_randomization(spec: str | DomainRandomization | None) -> DomainRandomization:
    """A preset by name, or the union of a comma list of presets (``"texture,lighting"``).

    Raises:
        KeyError: an unknown name, listing the known ones.
        ValueError: two presets with different pose windows.
    """
    if spec is None:
        return DOMAINS.get("none")
    if isinstance(spec, DomainRandomization):
        return spec
    names = [n.strip() for n in str(spec).split(",") if n.strip()] or ["none"]
    merged = DomainRandomization()
    for name in names:
        d = DOMAINS.get(name)
        if d.pose is not None and merged.pose is not None and d.pose != merged.pose:
            raise ValueError(f"presets in {spec!r} set different pose windows ({merged.pose}, {d.pose})")
        merged = dataclasses.replace(
            merged, pose=d.pose or merged.pose,
            **{a: getattr(merged, a) or getattr(d, a) for a in AXES[1:]},
        )
    return merged


# ---------------------------------------------------------------------------------------------
# The draw.


Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SurfaceLook:
    """A drawn surface: a pattern of two colours with a cell size (m)."""

    pattern: str
    rgb1: tuple[float, float, float]
    rgb2: tuple[float, float, float]
    cell: float

    def as_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "rgb1": _r(self.rgb1), "rgb2": _r(self.rgb2),
                "cell_m": round(self.cell, 4)}


@dataclass(frozen=True)
class LightDraw:
    """One drawn light (world frame)."""

    kind: str
    pos: tuple[float, float, float]
    direction: tuple[float, float, float]
    diffuse: tuple[float, float, float]

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "pos": _r(self.pos), "dir": _r(self.direction),
                "diffuse": _r(self.diffuse)}


@dataclass(frozen=True)
class DomainDraw:
    """Everything one scene drew on the visual axes (the record's ``randomization["domain"]``).

    Attributes:
        preset: The randomization's axes, comma-joined (``"texture,lighting"``).
        seed: The scene seed the draw came from.
        parts: Per ``object/part`` its look (texture axis).
        surfaces: Per ``floor``, ``table``, ``walls`` its look (background axis).
        lights: The lights (lighting axis); empty: the default light.
        ambient: The ambient level (lighting axis); None: the default.
        cameras: Per camera name its shift (m) and its turn as a rotation vector (deg).
        noise_std: Pixel noise's standard deviation (8-bit levels); 0: none.
        pose: The pose axis's (window side m, yaw range deg) the scene was placed with (the
            placed poses themselves are in the task's own record, ``Task.drawn``).
    """

    preset: str
    seed: int
    parts: dict[str, SurfaceLook] = field(default_factory=dict)
    surfaces: dict[str, SurfaceLook] = field(default_factory=dict)
    lights: tuple[LightDraw, ...] = ()
    ambient: float | None = None
    cameras: dict[str, tuple[Vec3, Vec3]] = field(default_factory=dict)
    noise_std: float = 0.0
    pose: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"axes": self.preset, "seed": self.seed}
        if self.pose is not None:
            out["pose"] = {"window_m": self.pose[0], "yaw_deg": self.pose[1]}
        if self.parts:
            out["texture"] = {k: v.as_dict() for k, v in self.parts.items()}
        if self.surfaces:
            out["background"] = {k: v.as_dict() for k, v in self.surfaces.items()}
        if self.lights:
            out["lighting"] = {"ambient": round(float(self.ambient or 0.0), 3),
                               "lights": [lt.as_dict() for lt in self.lights]}
        if self.cameras:
            out["camera"] = {k: {"shift_m": _r(s, 4), "turn_deg": _r(t, 3)}
                             for k, (s, t) in self.cameras.items()}
        if self.noise_std:
            out["noise"] = {"rgb_std": round(self.noise_std, 3)}
        return out


def _r(values: Iterable[float], nd: int = 3) -> list[float]:
    return [round(float(v), nd) for v in values]


def _colour(rng: np.random.Generator) -> tuple[float, float, float]:
    """A colour uniform in hue, with saturation and value kept off the extremes (no pure black,
    which depth-free viewers would read as a hole, nor pure white)."""
    import colorsys

    h, s, v = rng.uniform(0, 1), rng.uniform(0.15, 0.9), rng.uniform(0.25, 0.95)
    r, g, b = colorsys.hsv_to_rgb(h, s, v)
    return (r, g, b)


def _surface(rng: np.random.Generator, cell: tuple[float, float]) -> SurfaceLook:
    pattern = PATTERNS[int(rng.integers(len(PATTERNS)))]
    return SurfaceLook(pattern, _colour(rng), _colour(rng), float(rng.uniform(*cell)))


def temperature_rgb(kelvin: float) -> tuple[float, float, float]:
    """Approximate RGB (max channel 1) of a black body at ``kelvin``, 1000-40000 K (a fit of the
    Planckian locus in sRGB, good to a few percent over 2000-10000 K)."""
    t = min(max(kelvin, 1000.0), 40000.0) / 100.0
    r = 255.0 if t <= 66 else 329.698727446 * (t - 60) ** -0.1332047592
    if t <= 66:
        g = 99.4708025861 * math.log(t) - 161.1195681661
    else:
        g = 288.1221695283 * (t - 60) ** -0.0755148492
    b = 255.0 if t >= 66 else (0.0 if t <= 19 else 138.5177312231 * math.log(t - 10) - 305.0447927307)
    rgb = np.clip(np.array([r, g, b]) / 255.0, 0.0, 1.0)
    return tuple(float(c) for c in rgb / max(float(rgb.max()), 1e-9))  # type: ignore[return-value]


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def draw_domain(dr: DomainRandomization, parts: Mapping[str, Iterable[str]], cameras: Iterable[str],
                seed: int, table_center: tuple[float, float] = (0.5, 0.0)) -> DomainDraw:
    """Draw one scene's look.

    Args:
        dr: What to randomize.
        parts: Per object name its part names (the ontology's), in scene order.
        cameras: The scene's camera names, in order.
        seed: The scene seed; with ``dr`` it fixes the draw.
        table_center: Where lights aim.
    """
    rng = np.random.default_rng([int(seed), _SALT])
    # Every axis draws from its own child stream, so switching one axis on or off leaves the
    # others' draws as they were.
    streams = dict(zip(AXES[1:], rng.spawn(len(AXES) - 1), strict=True))
    out: dict[str, Any] = {"preset": ",".join(dr.axes) or "none", "seed": int(seed), "pose": dr.pose}
    if dr.texture:
        r = streams["texture"]
        out["parts"] = {f"{obj}/{p}": _surface(r, dr.pattern_cell)
                        for obj, names in parts.items() for p in names}
    if dr.background:
        r = streams["background"]
        out["surfaces"] = {s: _surface(r, (0.05, 0.3)) for s in ("floor", "table", "walls")}
    if dr.lighting:
        r = streams["lighting"]
        lights = []
        centre = np.array([*table_center, 0.0])
        for _ in range(int(r.integers(dr.lights[0], dr.lights[1] + 1))):
            kind = LIGHT_TYPES[int(r.integers(len(LIGHT_TYPES)))]
            az, el = r.uniform(0, 2 * math.pi), math.radians(r.uniform(*dr.light_elevation_deg))
            dist = r.uniform(*dr.light_distance)
            pos = centre + dist * np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az),
                                            math.sin(el)])
            direction = (centre - pos) / np.linalg.norm(centre - pos)
            tint = np.array(temperature_rgb(r.uniform(*dr.light_temperature_k)))
            lights.append(LightDraw(kind, tuple(pos), tuple(direction),  # type: ignore[arg-type]
                                    tuple(float(r.uniform(*dr.light_intensity)) * tint)))  # type: ignore[arg-type]
        out["lights"] = tuple(lights)
        out["ambient"] = float(r.uniform(*dr.ambient))
    if dr.camera:
        r = streams["camera"]
        cams = {}
        for name in cameras:
            shift = r.uniform(-dr.camera_shift, dr.camera_shift, size=3)
            turn = _unit(r) * r.uniform(0.0, dr.camera_turn_deg)
            cams[name] = (tuple(float(v) for v in shift), tuple(float(v) for v in turn))
        out["cameras"] = cams
    if dr.noise:
        out["noise_std"] = float(streams["noise"].uniform(*dr.noise_std))
    return DomainDraw(**out)


# ---------------------------------------------------------------------------------------------
# Applying a draw.


def rotation_from_vector(rotvec_deg: Iterable[float]) -> np.ndarray:
    """3x3 rotation of a rotation vector given in degrees (Rodrigues)."""
    w = np.radians(np.asarray(list(rotvec_deg), dtype=float))
    angle = float(np.linalg.norm(w))
    if angle < 1e-12:
        return np.eye(3)
    k = w / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def jittered_pose(pose: np.ndarray, shift: Iterable[float], turn_deg: Iterable[float]) -> np.ndarray:
    """A camera pose (4x4) moved by ``shift`` and turned in place by ``turn_deg`` (a rotation
    vector, degrees, in the frame the pose is given in)."""
    out = np.array(pose, dtype=float)
    out[:3, :3] = rotation_from_vector(turn_deg) @ out[:3, :3]
    out[:3, 3] += np.asarray(list(shift), dtype=float)
    return out


def _texture(spec: mujoco.MjSpec, name: str, look: SurfaceLook) -> str:
    """Add ``look`` as a 2-D texture and a material named ``name``; returns the material's name."""
    builtin = {"flat": mujoco.mjtBuiltin.mjBUILTIN_FLAT, "checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
               "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
               "speckle": mujoco.mjtBuiltin.mjBUILTIN_FLAT}[look.pattern]
    tex = spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=builtin,
                           rgb1=list(look.rgb1), rgb2=list(look.rgb2), width=64, height=64)
    if look.pattern == "speckle":  # flat with random dots of the second colour
        tex.mark = mujoco.mjtMark.mjMARK_RANDOM
        tex.markrgb = list(look.rgb2)
        tex.random = 0.15
    mat = spec.add_material(name=name)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    return name


def _project_uv(vertices: np.ndarray, cell: float) -> np.ndarray:
    """Texture coordinates of mesh vertices: a projection no straight-on view flattens
    (u = x + z/2, v = y + z/2 over two cells per texture: a checker texture holds 2 x 2 cells)."""
    v = np.asarray(vertices, dtype=float).reshape(-1, 3)
    uv = np.stack([v[:, 0] + 0.5 * v[:, 2], v[:, 1] + 0.5 * v[:, 2]], axis=1) / (2.0 * cell)
    return uv.ravel()


def apply_look(spec: mujoco.MjSpec, draw: DomainDraw, objects: Iterable[str],
               floor_z: float = -0.75) -> None:
    """Dress a compiled scene's spec (``afford_sim.mjcf.compile_scene``) in ``draw``: object
    parts' materials (texture), floor, table and walls (background), lights and ambient
    (lighting). Cameras and pixel noise are applied where the cameras are made and the images
    rendered (:func:`jitter_cameras`, ``BatchWorld.render``)."""
    names = set(objects)
    if draw.parts:
        meshes = {m.name: m for m in spec.meshes}
        for geom in spec.geoms:
            seg = geom.name.split("/")
            if len(seg) < 3 or seg[0] not in names:
                continue
            key = f"{seg[0]}/{seg[1]}"
            look = draw.parts.get(key)
            if look is None:
                continue
            mat = f"dr/{key}"
            if spec.material(mat) is None:
                _texture(spec, mat, look)
            mesh = meshes.get(geom.meshname)
            if mesh is not None:
                mesh.usertexcoord = _project_uv(mesh.uservert, look.cell)
            geom.material = mat
            geom.rgba = [1.0, 1.0, 1.0, 1.0]  # the material's texture carries the colour
    if draw.surfaces:
        for surface, look in draw.surfaces.items():
            mat = _texture(spec, f"dr/{surface}", look)
            spec.material(mat).texuniform = True
            spec.material(mat).texrepeat = [1.0 / (2 * look.cell)] * 2
        for geom in spec.geoms:
            if geom.name in ("floor", "table"):
                geom.material = f"dr/{geom.name}"
                geom.rgba = [1.0, 1.0, 1.0, 1.0]
        # The renderer's near and far planes scale with the model's extent, and the walls would
        # quadruple it: keep the extent the scene has without them, so depth stays bit-identical.
        model = spec.compile()
        spec.stat.extent = float(model.stat.extent)
        spec.stat.center = [float(v) for v in model.stat.center]
        for k, (x, y, hx, hy) in enumerate(WALLS):
            # Named under "floor" so perception's segmentation labels them floor (left out).
            spec.worldbody.add_geom(
                name=f"floor/wall/{k}", type=mujoco.mjtGeom.mjGEOM_BOX, material="dr/walls",
                pos=[x, y, floor_z + WALL_HEIGHT / 2], size=[hx, hy, WALL_HEIGHT / 2],
                contype=0, conaffinity=0, mass=0.0, rgba=[1.0, 1.0, 1.0, 1.0],
            )
    if draw.lights:
        for light in list(spec.lights):
            spec.delete(light)
        for k, lt in enumerate(draw.lights):
            light = spec.worldbody.add_light(name=f"dr/light/{k}", pos=list(lt.pos), dir=list(lt.direction),
                                             diffuse=list(lt.diffuse), castshadow=False)
            light.type = _LIGHT_ENUM[lt.kind]
            if lt.kind == "spot":
                light.cutoff = 60.0
                light.exponent = 2.0
        level = float(draw.ambient or 0.0)
        spec.visual.headlight.ambient = [level] * 3
        spec.visual.headlight.diffuse = [0.5 * level] * 3


def add_rgb_noise(rgb: np.ndarray, std: float, rng: np.random.Generator, float32: bool = False) -> np.ndarray:
    """``rgb`` (uint8) with Gaussian noise of ``std`` levels, rounded and clipped to 0..255.

    ``float32`` draws the noise in single precision (another stream of the same model, about
    twice as fast): the sim graph's publisher, beside the 1 kHz simulation loop, takes it; the
    batch world keeps the double-precision draw its recorded rollouts were made with."""
    if float32:
        noise = np.float32(std) * rng.standard_normal(rgb.shape, dtype=np.float32)
    else:
        noise = rng.normal(0.0, std, size=rgb.shape).astype(np.float32)
    return np.clip(np.rint(rgb.astype(np.float32) + noise), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Scene-level axes: the pose window and the cameras.


def widen_windows(spec: SceneSpec, dr: DomainRandomization, objects: Iterable[str]) -> SceneSpec:
    """``spec`` with the pose axis applied to ``objects`` (the manipulated ones, as AffordSim
    randomizes "the manipulated object's initial pose"): each of them placed in a window gets a
    square of the preset's side and a yaw range of the preset's width, both centred where the
    task centred its own; a window that leaves the yaw free keeps it free. Other objects, and
    objects placed relative to another, are left as the task placed them."""
    if dr.pose is None:
        return spec
    side, yaw_deg = dr.pose
    chosen = set(objects)
    unknown = sorted(chosen - {o.name for o in spec.objects})
    if unknown:
        raise KeyError(f"no objects {unknown} in the scene; objects: {[o.name for o in spec.objects]}")
    out = []
    for o in spec.objects:
        w = o.placement
        if o.name in chosen and isinstance(w, Window):
            yaw = w.yaw
            if yaw is not None:
                mid, half = 0.5 * (yaw[0] + yaw[1]), math.radians(yaw_deg) / 2
                yaw = (mid - half, mid + half)
            o = dataclasses.replace(o, placement=Window(center=w.center, size=(side, side), yaw=yaw))
        out.append(o)
    return dataclasses.replace(spec, objects=tuple(out))


def jitter_cameras(cameras: Iterable[CameraSpec], draw: DomainDraw) -> tuple[CameraSpec, ...]:
    """The cameras moved as ``draw`` says (each as an explicit pose; a hand camera's pose stays
    in the TCP frame, its shift and turn then being its mount's)."""
    out = []
    for cam in cameras:
        jitter = draw.cameras.get(cam.name)
        if jitter is None:
            out.append(cam)
            continue
        pose = jittered_pose(cam.extrinsics(), *jitter)
        out.append(dataclasses.replace(cam, world_T_camera=pose))  # K or fovy as before
    return tuple(out)


def randomize_scene(placed: PlacedScene, dr: DomainRandomization) -> tuple[PlacedScene, DomainDraw | None]:
    """Draw the visual axes for a placed scene (seeded by its placement seed) and move its
    cameras; ``None`` when no axis is on (the scene is returned as it is). The pose axis acts
    before placement (:func:`widen_windows`); the draw only records it."""
    if not dr.axes:
        return placed, None
    from afford_core.ontology import category

    parts = {o.name: category(o.category).parts for o in placed.objects}
    table = placed.spec.table
    draw = draw_domain(dr, parts, [c.name for c in placed.spec.cameras], placed.seed,
                       table_center=(float(table.center[0]), float(table.center[1])))
    if draw.cameras:
        spec = dataclasses.replace(placed.spec, cameras=jitter_cameras(placed.spec.cameras, draw))
        placed = dataclasses.replace(placed, spec=spec)
    return placed, draw


def place_randomized(spec: SceneSpec, seed: int, dr: DomainRandomization,
                     manipulated: Iterable[str]) -> tuple[PlacedScene, DomainDraw | None]:
    """The scene a task's ``spec`` gives for ``seed`` under ``dr``, and the draw: the pose axis
    widens the windows of the ``manipulated`` objects, the scene is placed, then the visual
    axes are drawn. Every world builds a task's scene through here (the batch world, franky-sim
    behind the sim graph), so one seed and one preset give the same scene and the same look in
    both."""
    placed = sample_scene(widen_windows(spec, dr, manipulated), seed=seed)
    return randomize_scene(placed, dr)

