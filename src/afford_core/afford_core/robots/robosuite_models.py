"""Arm + gripper models composed from the robosuite package (AffordSim's five arms).

robosuite ships MJCF models of the Panda, Kinova3, Sawyer, UR5e and xArm7 with their grippers.
Its model-composition code (no robosuite environment) joins an arm and a gripper into one MJCF
that plain MuJoCo loads; :func:`export` writes that file once into a cache folder and returns its
path. Nothing of robosuite is copied into this repository: the files are made from the installed
package on the user's machine, on first use.

The exported file is what the planner loads with pinocchio (``pin.buildModelFromMJCF``) and what
the simulator's builder (``afford_sim.robots.robosuite``) turns into a position-controlled arm.
What comes out as robosuite writes it, and why each thing matters (checked on robosuite 1.5.2):

* names are prefixed ``robot0_`` (arm) and ``gripper0_`` (gripper); mesh paths are absolute
  into the installed package, so the cache is keyed by that location;
* the arm's actuators are torque motors (the arm falls without a controller); the builder
  makes them position servos with gravity compensation;
* the Robotiq 2F-85's finger linkages are not closed (robosuite issue #772): closed on nothing
  its fingers jam; the builder closes them with the ROS model's mimic relations;
* ``robot0_base`` sits at the origin (pinocchio 4.1 ignores a root body's pose, so it must).

robosuite is installed without its declared dependencies (docs/dependencies.md: its pin of
mink needs numpy < 2, which pinocchio 4.1 cannot run with); numba, which its import needs, is
installed on its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import io
import os
import tempfile
from pathlib import Path

#: Our name -> (robosuite robot class, (gripper module, gripper class)).
MODELS: dict[str, tuple[str, tuple[str, str]]] = {
    "ur5e": ("UR5e", ("robotiq_85_gripper", "Robotiq85Gripper")),
    "panda": ("Panda", ("panda_gripper", "PandaGripper")),
    "kinova3": ("Kinova3", ("robotiq_85_gripper", "Robotiq85Gripper")),
    "sawyer": ("Sawyer", ("rethink_gripper", "RethinkGripper")),
    "xarm7": ("XArm7", ("xarm7_gripper", "XArm7Gripper")),
}


def cache_dir() -> Path:
    """Where exported models are kept: ``$AFFORD_CACHE/robots`` (default ``~/.cache/afford``)."""
    root = Path(os.environ.get("AFFORD_CACHE", Path.home() / ".cache" / "afford"))
    return root / "robots"


def _robosuite_location() -> tuple[str, Path]:
    spec = importlib.util.find_spec("robosuite")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "robosuite is not installed: it ships the models of the UR5e, Panda, Kinova3, Sawyer and "
            "xArm7 (scripts/setup.sh installs it)"
        )
    return importlib.metadata.version("robosuite"), Path(next(iter(spec.submodule_search_locations)))


def export(name: str) -> Path:
    """The MJCF of robosuite's ``name`` arm with its default gripper, exported on first use.

    Raises:
        KeyError: not one of :data:`MODELS`.
        FileNotFoundError: robosuite is not installed.
    """
    if name not in MODELS:
        raise KeyError(f"no robosuite model {name!r}; known: {', '.join(MODELS)}")
    version, location = _robosuite_location()
    key = hashlib.sha256(f"{version}:{location}".encode()).hexdigest()[:12]
    path = cache_dir() / f"robosuite-{version}-{key}" / f"{name}.xml"
    if path.is_file():
        return path
    robot_cls, (gripper_module, gripper_cls) = MODELS[name]
    # robosuite's logger binds its console handler to stderr on import and warns about its own
    # optional parts (private macros, mink IK, extra models) that a model export never uses.
    with contextlib.redirect_stderr(io.StringIO()):
        robots = importlib.import_module("robosuite.models.robots")
        grippers = importlib.import_module(f"robosuite.models.grippers.{gripper_module}")
        world_module = importlib.import_module("robosuite.models.world")
    robot = getattr(robots, robot_cls)(idn=0)
    robot.add_gripper(getattr(grippers, gripper_cls)(idn=0))  # under the arm's eef body
    world = world_module.MujocoWorldBase()  # compiler, option, size and visual only
    world.merge(robot)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole or not at all: a second process may be exporting the same file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}-", suffix=".xml")
    with os.fdopen(fd, "w") as f:
        f.write(world.get_xml())
    os.replace(tmp, path)
    return path
