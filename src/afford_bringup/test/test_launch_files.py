"""The ROS 2 launch files describe the same graph as the graph description (and so as `afford bringup`).

`launch` and `launch_ros` cannot be installed here, so each launch file is loaded with small
stand-ins for the five names it uses, which record what the file constructs. The mock sits at a
boundary we cannot reach (the ROS 2 launch system); the launch files themselves run unchanged.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from afford_bringup import graph as g

LAUNCH_DIR = Path(__file__).resolve().parents[1] / "launch"


class _Recorded:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


class LaunchDescription(_Recorded):
    pass


class DeclareLaunchArgument(_Recorded):
    pass


class Shutdown(_Recorded):
    pass


class LaunchConfiguration(_Recorded):
    pass


class Node(_Recorded):
    pass


class ParameterValue(_Recorded):
    pass


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    modules: dict[str, dict[str, Any]] = {
        "launch": {"LaunchDescription": LaunchDescription},
        "launch.actions": {"DeclareLaunchArgument": DeclareLaunchArgument, "Shutdown": Shutdown},
        "launch.substitutions": {"LaunchConfiguration": LaunchConfiguration},
        "launch_ros": {},
        "launch_ros.actions": {"Node": Node},
        "launch_ros.parameter_descriptions": {"ParameterValue": ParameterValue},
    }
    for name, attrs in modules.items():
        mod = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(mod, k, v)
        monkeypatch.setitem(sys.modules, name, mod)


def _load(graph_name: str) -> LaunchDescription:
    path = LAUNCH_DIR / f"{graph_name}.launch.py"
    spec = importlib.util.spec_from_file_location(f"_launch_{graph_name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    desc = module.generate_launch_description()
    assert isinstance(desc, LaunchDescription)
    return desc


def _resolve(value: Any, args: dict[str, str]) -> Any:
    """What launch_ros would hand the node: a typed launch argument or a plain value."""
    if isinstance(value, ParameterValue):
        (sub,) = value.args
        text = args[sub.args[0]]
        kind = value.kwargs["value_type"]
        return (text == "true") if kind is bool else kind(text)
    return value


def _nodes_and_args(desc: LaunchDescription, given: dict[str, str]) -> tuple[list[Node], dict[str, str]]:
    (actions,) = desc.args
    declared = [a for a in actions if isinstance(a, DeclareLaunchArgument)]
    args = {a.args[0]: a.kwargs["default_value"] for a in declared}
    assert set(given) <= set(args), f"unknown launch arguments {set(given) - set(args)}"
    args.update(given)
    return [a for a in actions if isinstance(a, Node)], args


def _effective(node: Node, args: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    files: list[str] = []
    merged: dict[str, Any] = {}
    given = False  # a launch argument or an inline parameter came
    for p in node.kwargs["parameters"]:
        if isinstance(p, str):
            assert not given, "a parameter file after inline parameters would override them"
            files.append(p)
            merged.update(g.load_parameters(Path(p)).get(node.kwargs["name"], {}))
        else:
            given = True
            merged.update({k: _resolve(v, args) for k, v in p.items()})
    return files, merged


@pytest.mark.usefixtures("stand_ins")
@pytest.mark.parametrize("graph_name", sorted(g.GRAPHS))
def test_launch_file_starts_exactly_the_described_nodes(graph_name: str) -> None:
    """A lab runs `ros2 launch afford_bringup <graph>.launch.py` on the docker image; CI runs
    `afford bringup <graph>`. If the two drifted, what was tested would not be what runs on the
    arm. Same nodes, executables, files, parameters (fixed ones last), remappings, and a
    required node's exit ends the launch."""
    graph = g.get_graph(graph_name)
    nodes, args = _nodes_and_args(_load(graph_name), {})
    assert [n.kwargs["name"] for n in nodes] == [n.name for n in graph.nodes]
    for rec, spec in zip(nodes, graph.nodes, strict=True):
        assert rec.kwargs["package"] == spec.package == spec.module.split(".")[0]
        assert rec.kwargs["executable"] == spec.executable
        assert rec.kwargs["remappings"] == list(spec.remappings)
        assert rec.kwargs["respawn"] == spec.respawn
        assert isinstance(rec.kwargs["on_exit"], Shutdown) == spec.required
        files, params = _effective(rec, args)
        assert files == [str(g.config_path(f)) for f in spec.parameter_files]
        assert params == g.effective_parameters(spec)
        if spec.inline:  # last, so no file or launch argument overrides them
            assert rec.kwargs["parameters"][-1] == spec.inline


@pytest.mark.usefixtures("stand_ins")
def test_launch_arguments_reach_their_node_typed() -> None:
    """`robot_ip:=...` must set the executor's address, and a RealSense serial made of digits
    must stay a string, or the node refuses the parameter and the camera never starts."""
    nodes, args = _nodes_and_args(_load("fr3_real"), {"robot_ip": "10.1.2.3", "camera_serial": "012345"})
    by_name = {n.kwargs["name"]: n for n in nodes}
    _, executor = _effective(by_name["executor"], args)
    _, camera = _effective(by_name["camera"], args)
    assert executor["robot_ip"] == "10.1.2.3"
    assert camera["serial"] == "012345"
    nodes, args = _nodes_and_args(_load("fr3_sim"), {"seed": "7", "auto_approve": "false"})
    by_name = {n.kwargs["name"]: n for n in nodes}
    assert _effective(by_name["sim_world"], args)[1]["seed"] == 7
    assert _effective(by_name["task_server"], args)[1]["auto_approve"] is False


@pytest.mark.usefixtures("stand_ins")
def test_remappings_and_optional_nodes_pass_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped graphs need no remappings (the contract names are used everywhere), so check
    the plumbing with one added: a remapping in the description reaches the launched node."""
    graph = g.GRAPHS["isaac_sim"]
    perception = dataclasses.replace(
        graph.node("perception"),
        remappings=(("/camera/color/image_raw", "/rgb"),),
        required=False,
        respawn=True,
    )
    changed = dataclasses.replace(
        graph, nodes=tuple(perception if n.name == "perception" else n for n in graph.nodes)
    )
    monkeypatch.setitem(g.GRAPHS, "isaac_sim", changed)
    nodes, _ = _nodes_and_args(_load("isaac_sim"), {})
    rec = next(n for n in nodes if n.kwargs["name"] == "perception")
    assert rec.kwargs["remappings"] == [("/camera/color/image_raw", "/rgb")]
    assert rec.kwargs["respawn"] is True and rec.kwargs["on_exit"] is None


@pytest.mark.usefixtures("stand_ins")
def test_launched_nodes_read_the_stacks_dds_profiles_unless_the_caller_names_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ros2 launch` gives its nodes the same Fast DDS profile file as `afford bringup`, under
    the name the lab image's Fast DDS 2 (Jazzy) reads."""
    monkeypatch.delenv("FASTRTPS_DEFAULT_PROFILES_FILE", raising=False)
    monkeypatch.setenv("ROS_DISTRO", "jazzy")
    monkeypatch.delenv("FASTDDS_BUILTIN_TRANSPORTS", raising=False)
    nodes, _ = _nodes_and_args(_load("fr3_real"), {})
    want = {"FASTRTPS_DEFAULT_PROFILES_FILE": str(g.config_dir() / g.DDS_PROFILES)}
    udp = {"FASTDDS_BUILTIN_TRANSPORTS": g.RESPAWNED_TRANSPORTS}
    assert {n.kwargs["name"] for n in nodes if n.kwargs["respawn"]} == {"perception", "planner"}
    assert all(n.kwargs["additional_env"] == (want | udp if n.kwargs["respawn"] else want) for n in nodes)
    monkeypatch.setenv("FASTRTPS_DEFAULT_PROFILES_FILE", "/etc/lab/fastdds.xml")
    monkeypatch.setenv("FASTDDS_BUILTIN_TRANSPORTS", "DEFAULT")
    nodes, _ = _nodes_and_args(_load("fr3_real"), {})
    assert all(n.kwargs["additional_env"] is None for n in nodes)
