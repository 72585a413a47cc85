"""The graph description: which nodes make up each graph, their parameters and remappings.

One description, three consumers: the ROS 2 launch files (``launch/*.launch.py``, for machines
with a full ROS 2 install), the pip-only launcher (``afford bringup <graph>``), and the tests
that check both against it. Nothing here imports ``rclpy`` or ``launch``; the launch classes are
imported only inside :func:`launch_description`, which only a launch file calls.

Parameters live in ``config/<graph>.yaml`` in the standard ROS 2 params-file format
(``node_name: {ros__parameters: {...}}``), so ``ros2 launch`` and ``ros2 run ... --params-file``
read the same files. A node's *inline* parameters are the few that make a graph what it is
(``task_server.mode`` is ``real`` in the real graph): they are applied after the files, so no
edited or swapped parameter file can, say, switch on automatic approval on the real arm, and the
launcher refuses ``--set`` on them.

Why the Isaac Sim graph has no camera remappings: Isaac Sim's bridge publishes straight onto the
contract's names (``isaac/bridge.yaml``), so the graph does not know which world it is in, as
the contract demands. Remappings stay in the description for deployments that need them (and
the launch files and the launcher pass them through, which the tests check).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PACKAGE = "afford_bringup"
ParamValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _check_value(where: str, value: object) -> None:
    # ROS parameters are scalars or homogeneous arrays of them; anything else fails at startup
    # on the node's side with a far less helpful message.
    scalar = (bool, int, float, str)
    if isinstance(value, scalar):
        return
    if isinstance(value, list | tuple) and value and all(isinstance(v, scalar) for v in value):
        kinds = {bool if isinstance(v, bool) else float if isinstance(v, float) else type(v) for v in value}
        if kinds <= {int, float} or len(kinds) == 1:
            return
    raise ValueError(f"{where}: {value!r} is not a ROS parameter value (scalar or non-empty uniform list)")


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph.

    Attributes:
        name: ROS node name; also its section in the parameter files (``name: ros__parameters``).
        module: Python module with ``main(argv=None)``; the launcher runs ``python -m module``.
        executable: Console-script name (``setup.py``), what ``launch_ros`` runs.
        package: ROS package that installs ``executable`` (``lib/<package>/<executable>``).
        parameter_files: Parameter files, by file name in the config folder (see
            :func:`config_dir`) or as absolute paths, applied in order.
        parameters: Inline parameters, applied after the files: the ones that define the graph
            and must not be changed by a parameter file or ``--set``. Pairs, to stay hashable.
        remappings: ``(from, to)`` topic or service remappings.
        required: The graph stops (non-zero exit, naming the node) when this node exits.
        respawn: Restart the node when it exits (only for nodes that are not required).
        respawn_delay_s: Wait this long before a restart.
        description: What the node does in this graph, for ``--dry-run`` and the docs.
    """

    name: str
    module: str
    executable: str
    package: str = "afford_ros"
    parameter_files: tuple[str, ...] = ()
    parameters: tuple[tuple[str, ParamValue], ...] = ()
    remappings: tuple[tuple[str, str], ...] = ()
    required: bool = True
    respawn: bool = False
    respawn_delay_s: float = 1.0
    description: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"node name {self.name!r} is not a valid ROS node name")
        if not _MODULE.match(self.module):
            raise ValueError(f"{self.name}: module {self.module!r} is not a dotted Python module name")
        if not _NAME.match(self.executable):
            raise ValueError(f"{self.name}: executable {self.executable!r} is not a console-script name")
        keys = [k for k, _ in self.parameters]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{self.name}: inline parameters repeat a name: {keys}")
        for key, value in self.parameters:
            if not _NAME.match(key):
                raise ValueError(f"{self.name}: parameter name {key!r} is invalid")
            _check_value(f"{self.name}.{key}", value)
        for src, dst in self.remappings:
            if not src or not dst or ":=" in src or ":=" in dst:
                raise ValueError(f"{self.name}: remapping {src!r} -> {dst!r} is malformed")
        if self.respawn and self.required:
            raise ValueError(f"{self.name}: a respawned node cannot also be required (which wins on exit?)")
        if self.respawn_delay_s < 0:
            raise ValueError(f"{self.name}: respawn_delay_s must be >= 0")

    @property
    def inline(self) -> dict[str, ParamValue]:
        """The inline parameters as a dict."""
        return dict(self.parameters)


@dataclass(frozen=True)
class LaunchArgument:
    """A launch argument (``ros2 launch ... name:=value``) that overrides one node parameter.

    Attributes:
        name: Argument name on the command line.
        node: Node whose parameter it sets.
        parameter: The parameter it sets; its default is the value in the graph's config file.
        description: Shown by ``ros2 launch --show-args``.
    """

    name: str
    node: str
    parameter: str
    description: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name) or not _NAME.match(self.parameter):
            raise ValueError(
                f"launch argument {self.name!r} -> {self.node}.{self.parameter} has an invalid name"
            )


@dataclass(frozen=True)
class GraphSpec:
    """A whole graph.

    Attributes:
        name: Graph name (``afford bringup <name>``, ``<name>.launch.py``, ``config/<name>.yaml``).
        description: One line on what the graph is for.
        nodes: Its nodes, in start order (worlds and drivers first).
        launch_arguments: Overrides offered by the launch file.
        discovery: ``ROS_AUTOMATIC_DISCOVERY_RANGE`` its nodes get from ``afford bringup`` when
            the caller's environment does not set one ("" leaves DDS's default). The simulated
            FR3 needs no other machine: ``LOCALHOST``, so a sim graph is never open to the
            network it happens to sit on.
    """

    name: str
    description: str
    nodes: tuple[NodeSpec, ...]
    launch_arguments: tuple[LaunchArgument, ...] = field(default_factory=tuple)
    discovery: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"graph name {self.name!r} is invalid")
        if not self.nodes:
            raise ValueError(f"graph {self.name} has no nodes")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"graph {self.name}: node names repeat: {names}")
        args = [a.name for a in self.launch_arguments]
        if len(set(args)) != len(args):
            raise ValueError(f"graph {self.name}: launch arguments repeat: {args}")
        for a in self.launch_arguments:
            if a.node not in names:
                raise ValueError(f"graph {self.name}: launch argument {a.name} targets unknown node {a.node}")
            if a.parameter in self.node(a.node).inline:
                raise ValueError(
                    f"graph {self.name}: launch argument {a.name} would override the fixed "
                    f"parameter {a.node}.{a.parameter}"
                )

    def node(self, name: str) -> NodeSpec:
        """The node called ``name``; KeyError names the graph's nodes."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"graph {self.name} has no node {name!r}; nodes: {[n.name for n in self.nodes]}")


# --------------------------------------------------------------------------- config files


def config_dir() -> Path:
    """The folder holding ``<graph>.yaml``.

    In a source checkout (editable install) it is the repository's top-level ``config/``, so
    edits take effect at once; in an installed package (colcon or a non-editable pip install) it
    is ``share/afford_bringup/config`` under the install prefix, found through the ament index
    when available and ``sys.prefix`` otherwise.
    """
    source = Path(__file__).resolve().parents[3] / "config"
    if (source / "fr3_sim.yaml").is_file():
        return source
    candidates: list[Path] = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            candidates.append(Path(get_package_share_directory(PACKAGE)) / "config")
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    candidates.append(Path(sys.prefix) / "share" / PACKAGE / "config")
    for c in candidates:
        if (c / "fr3_sim.yaml").is_file():
            return c
    raise FileNotFoundError(
        f"no afford_bringup config folder: looked in {source} and {', '.join(map(str, candidates))}"
    )


def config_path(name: str, base: Path | None = None) -> Path:
    """Absolute path of parameter file ``name`` (a file name in the config folder, or absolute)."""
    p = Path(name)
    return p if p.is_absolute() else (base or config_dir()) / p


#: The Fast DDS profiles the graph's nodes read (in the config folder): the response writer of
#: every service waits up to 2 s, not Fast DDS's 100 ms, for a new client's reply reader to be
#: discovered before it gives the answer up (a busy machine discovers more slowly; CI lost the
#: task server's answer to an operator's approval that way). See the file's comment.
DDS_PROFILES = "fastdds_profiles.xml"
#: ROS 2 distributions whose Fast DDS (2.x: the lab image's Jazzy) reads the profile file from
#: the variable's older name; Fast DDS 3 (the wheels here, Kilted on) reads the new one and warns
#: about the old.
_FASTDDS2_DISTROS = ("humble", "iron", "jazzy")


def dds_profiles_variable(environ: Mapping[str, str]) -> str:
    """The variable this environment's Fast DDS reads its profile file from."""
    if environ.get("ROS_DISTRO", "") in _FASTDDS2_DISTROS:
        return "FASTRTPS_DEFAULT_PROFILES_FILE"
    return "FASTDDS_DEFAULT_PROFILES_FILE"


def dds_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a graph's nodes get on top of ``environ``: the profile file variable of
    this Fast DDS (:func:`dds_profiles_variable`) naming :data:`DDS_PROFILES`, unless
    ``environ`` names a file of the user's own (which then needs its ``service`` profile;
    ``scripts/env.sh`` sets the same default for the CLI and tests)."""
    var = dds_profiles_variable(environ)
    if environ.get(var):
        return {}
    return {var: str(config_dir() / DDS_PROFILES)}


#: The transports a restarted node's DDS participant uses (unless the caller's environment says).
#: Fast DDS's shared-memory transport does not survive a process killed mid-flight (the OOM
#: killer, a crash): segments and port locks it held stay behind, and the node started in its
#: place (the same participant slot and port) was first listed, then dropped from the graph and
#: never answered a request (seen on two busy cores, reproduced with the restart test; Fast DDS
#: issues 5053 and 5469). Over UDP on the loopback the restarted node shares no memory with the
#: others: a kill leaves nothing behind for its successor or for them.
RESPAWNED_TRANSPORTS = "UDPv4"


def node_environment(node: NodeSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables ``node`` gets on top of ``environ``: :func:`dds_environment`, and for a node
    the graph restarts when it exits, :data:`RESPAWNED_TRANSPORTS` as Fast DDS's builtin
    transports unless ``environ`` sets ``FASTDDS_BUILTIN_TRANSPORTS``."""
    env = dds_environment(environ)
    if node.respawn and not environ.get("FASTDDS_BUILTIN_TRANSPORTS"):
        env["FASTDDS_BUILTIN_TRANSPORTS"] = RESPAWNED_TRANSPORTS
    return env


def load_parameters(path: Path) -> dict[str, dict[str, Any]]:
    """Read a ROS 2 params file into ``{node: {param: value}}``, rejecting what ROS would reject.

    Raises:
        ValueError: the file is not ``node: {ros__parameters: {...}}`` with ROS-typed values.
    """
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a params file maps node names to {{ros__parameters: ...}}")
    out: dict[str, dict[str, Any]] = {}
    for node, body in data.items():
        if not isinstance(body, dict) or set(body) != {"ros__parameters"}:
            raise ValueError(f"{path}: section {node!r} must hold exactly 'ros__parameters'")
        params = body["ros__parameters"] or {}
        if not isinstance(params, dict):
            raise ValueError(f"{path}: {node}.ros__parameters must be a mapping")
        flat = _flatten(params)
        for k, v in flat.items():
            _check_value(f"{path}: {node}.{k}", v)
        out[str(node)] = flat
    return out


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    # ROS reads a nested mapping in a params file as dotted names (safety: {joint_margin: 0.05}
    # is the parameter safety.joint_margin), the names the nodes' typed configs declare.
    out: dict[str, Any] = {}
    for k, v in params.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def file_parameters(node: NodeSpec, base: Path | None = None) -> dict[str, Any]:
    """The node's parameters from its files alone, later files winning."""
    merged: dict[str, Any] = {}
    for f in node.parameter_files:
        merged.update(load_parameters(config_path(f, base)).get(node.name, {}))
    return merged


def effective_parameters(
    node: NodeSpec, overrides: Mapping[str, Any] | None = None, base: Path | None = None
) -> dict[str, Any]:
    """What the node will see: files, then ``overrides`` (``--set``, launch arguments), then inline."""
    fixed = set(node.inline) & set(overrides or {})
    if fixed:
        raise ValueError(
            f"{node.name}: {', '.join(sorted(fixed))} fixed by the graph; it cannot be overridden"
        )
    return {**file_parameters(node, base), **(overrides or {}), **node.inline}


# --------------------------------------------------------------------------- the graphs

NODES_PACKAGE = "afford_ros"
"""The ROS package whose ``nodes`` subpackage holds every node of the graphs."""


def _node(
    name: str,
    graph: str,
    description: str,
    *,
    parameters: Mapping[str, ParamValue] | None = None,
    remappings: Sequence[tuple[str, str]] = (),
    respawn: bool = False,
) -> NodeSpec:
    return NodeSpec(
        name=name,
        module=f"{NODES_PACKAGE}.nodes.{name}",
        executable=name,
        package=NODES_PACKAGE,
        parameter_files=(f"{graph}.yaml",),
        parameters=tuple((parameters or {}).items()),
        remappings=tuple(remappings),
        required=not respawn,
        respawn=respawn,
        description=description,
    )


# Perception and the planner hold no robot and no trial of their own: when one exits (a crash,
# out of memory, a kill) the launcher starts it again, the trial it was serving ends with that
# reason at the task server, and the next trial finds it back. The others stop the graph: the
# executor holds the robot's connection, the world and the camera are the scene, and the task
# server holds the trial.
_PERCEPTION = "segments objects, grounds the task's region, publishes clouds and masks"
_PLANNER = "samples grasps in the region, gates and ranks them, plans the motion"
_TASK_SERVER = "the RunTask action: stages, approval, stale-data checks"
_POLICY = "runs a visuomotor policy (LeRobot ACT, Diffusion Policy) through the executor's checks"


def _with_files(node: NodeSpec, *files: str) -> NodeSpec:
    """``node`` with more parameter files after its own (a graph that extends another)."""
    return dataclasses.replace(node, parameter_files=(*node.parameter_files, *files))


def _sim_nodes(graph: str) -> tuple[NodeSpec, ...]:
    return (
        _node("sim_world", graph, "franky-sim with the task scene; camera topics and ground truth"),
        _node("perception", graph, _PERCEPTION, parameters={"segmentation": "ground_truth"}, respawn=True),
        _node("planner", graph, _PLANNER, respawn=True),
        _node("executor", graph, "franky client to the simulated FR3 on loopback"),
        _node("task_server", graph, _TASK_SERVER, parameters={"mode": "sim"}),
    )


_SIM_ARGUMENTS = (
    LaunchArgument("task", "sim_world", "task", "task id whose scene the world builds (afford tasks)"),
    LaunchArgument("seed", "sim_world", "seed", "scene seed"),
    LaunchArgument("randomize", "sim_world", "randomize",
                   "domain randomization of the scenes: none, visual, table1, or presets (texture,lighting)"),
    LaunchArgument("auto_approve", "task_server", "auto_approve", "approve trials automatically (sim only)"),
)

GRAPHS: dict[str, GraphSpec] = {
    g.name: g
    for g in (
        GraphSpec(
            name="fr3_sim",
            description="Simulated FR3 (franky-sim on 127.0.0.1) with the task scene rendered in MuJoCo.",
            nodes=_sim_nodes("fr3_sim"),
            launch_arguments=_SIM_ARGUMENTS,
            discovery="LOCALHOST",
        ),
        # The simulated FR3 serving a visuomotor policy: fr3_sim's nodes and files, the policy
        # cameras rendered (fr3_sim_policy.yaml, read after fr3_sim.yaml) and the policy node.
        GraphSpec(
            name="fr3_sim_policy",
            description="fr3_sim with a policy's cameras and the policy node (afford task --policy).",
            nodes=(
                *(_with_files(n, "fr3_sim_policy.yaml") for n in _sim_nodes("fr3_sim")),
                NodeSpec(
                    name="policy",
                    module="afford_policy.nodes.policy",
                    executable="policy",
                    package="afford_policy",
                    parameter_files=("fr3_sim_policy.yaml",),
                    required=True,
                    description=_POLICY,
                ),
            ),
            launch_arguments=_SIM_ARGUMENTS,
            discovery="LOCALHOST",
        ),
        GraphSpec(
            name="fr3_real",
            description="The real FR3 through franky and a RealSense camera; trials wait for the operator.",
            nodes=(
                _node("camera", "fr3_real", "RealSense RGB-D (live device or a recorded .bag)"),
                _node("perception", "fr3_real", _PERCEPTION, respawn=True),
                _node("planner", "fr3_real", _PLANNER, respawn=True),
                _node("executor", "fr3_real", "franky client to the FR3 at robot_ip, limits enforced"),
                # mode is fixed: no parameter file may enable automatic approval on the real arm.
                _node(
                    "task_server",
                    "fr3_real",
                    _TASK_SERVER,
                    parameters={"mode": "real", "auto_approve": False},
                ),
            ),
            launch_arguments=(
                LaunchArgument("robot_ip", "executor", "robot_ip", "FR3 control address (FCI)"),
                LaunchArgument("camera_serial", "camera", "serial", "RealSense serial ('' = the only one)"),
                LaunchArgument("bag_file", "camera", "bag_file", "play a recorded .bag instead of a device"),
            ),
        ),
        GraphSpec(
            name="isaac_sim",
            description="Isaac Sim world (isaac/scene.py) publishing the contract through its ROS 2 bridge.",
            nodes=(
                _node("perception", "isaac_sim", _PERCEPTION, respawn=True),
                _node("planner", "isaac_sim", _PLANNER, respawn=True),
                _node(
                    "executor",
                    "isaac_sim",
                    "joint commands to Isaac Sim's articulation controller",
                    parameters={"backend": "joint_command_topic"},
                ),
                _node("task_server", "isaac_sim", _TASK_SERVER, parameters={"mode": "sim"}),
            ),
            launch_arguments=(
                LaunchArgument(
                    "auto_approve", "task_server", "auto_approve", "approve trials automatically (sim only)"
                ),
            ),
        ),
    )
}


def get_graph(name: str) -> GraphSpec:
    """The graph called ``name``; KeyError names the known graphs."""
    try:
        return GRAPHS[name]
    except KeyError:
        raise KeyError(f"no graph {name!r}; known graphs: {', '.join(GRAPHS)}") from None


# --------------------------------------------------------------------------- command lines


def ros_value(value: Any) -> str:
    """A parameter value as ``-p name:=VALUE`` text; ROS parses it as YAML, JSON is YAML.

    JSON keeps the type: ``"1.0"`` stays a string, ``1.0`` a double, ``true`` a bool.
    """
    import json

    return json.dumps(list(value) if isinstance(value, tuple) else value)


def ros_args(
    node: NodeSpec, overrides: Mapping[str, Any] | None = None, base: Path | None = None
) -> list[str]:
    """The ``--ros-args ...`` part of the node's command line, as ``launch_ros`` would build it.

    Order matters to ROS: parameter files first, then ``-p`` values (later wins), so overrides
    and then the inline parameters come after the files.
    """
    effective_parameters(node, overrides, base)  # raises if an override targets a fixed parameter
    args = ["--ros-args", "-r", f"__node:={node.name}"]
    for f in node.parameter_files:
        args += ["--params-file", str(config_path(f, base))]
    for key, value in {**(overrides or {}), **node.inline}.items():
        args += ["-p", f"{key}:={ros_value(value)}"]
    for src, dst in node.remappings:
        args += ["-r", f"{src}:={dst}"]
    return args


# --------------------------------------------------------------------------- ROS 2 launch


def launch_argument_defaults(graph: GraphSpec, base: Path | None = None) -> dict[str, ParamValue]:
    """Each launch argument's default: its parameter's value in the graph's config file."""
    out: dict[str, ParamValue] = {}
    for a in graph.launch_arguments:
        value = file_parameters(graph.node(a.node), base).get(a.parameter)
        if value is None:
            raise ValueError(
                f"{graph.name}: launch argument {a.name} has no default: "
                f"{a.node}.{a.parameter} is missing from its config"
            )
        out[a.name] = value
    return out


def launch_text(value: ParamValue) -> str:
    """A parameter value as a launch argument's default text (bools in YAML spelling)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
