"""The graph description and its parameter files: what each graph runs and with which settings."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from afford_bringup import graph as g
from afford_planner.safety import SafetyConfig
from afford_planner.selection import SelectionConfig
from afford_ros.contract import TOPICS
from afford_ros.params import config_parameters

NODES_DIR = Path(g.__file__).resolve().parents[2] / "afford_ros" / "afford_ros" / "nodes"

#: Every parameter each node takes (issue 3's node list); a config key outside it is a typo that
#: ROS would silently ignore.
#: Parameters a node declares from a typed config (afford_ros.params), by their dotted names.
CONFIG_PARAMETERS: dict[str, set[str]] = {
    "planner": set(config_parameters(SelectionConfig, "selection", exclude=("level",))),
    "executor": set(config_parameters(SafetyConfig, "safety")),
}
NODE_PARAMETERS: dict[str, set[str]] = {
    "sim_world": {
        "task",
        "seed",
        "hostname",
        "width",
        "height",
        "fps",
        "realtime_factor",
        "publish_ground_truth",
        "policy_camera_width",
        "policy_camera_height",
        "randomize",
    },
    "camera": {"serial", "bag_file", "width", "height", "fps", "extrinsics"},
    "perception": {"grounding", "segmentation", "sam_checkpoint", "max_frame_age_s", "frame_wait_s"},
    "planner": {"plan_top_k", "max_state_age_s", *CONFIG_PARAMETERS["planner"]},
    "executor": {
        "robot_ip",
        "robot",
        "backend",
        "joint_command_topic",
        "dynamics_factor",
        "state_rate_hz",
        *CONFIG_PARAMETERS["executor"],
    },
    "task_server": {"mode", "auto_approve", "approval_timeout_s", "max_frame_age_s", "sim_world"},
    "policy": {
        "robot", "max_input_age_s", "input_wait_s", "joint_margin", "gripper_timeout_s", "lead_s",
        "speed_fraction", "joint_speed_limits",
    },
}
#: Nodes that live outside afford_ros.nodes (a package above it in the layers).
NODE_MODULES = {"policy": "afford_policy.nodes.policy"}


def _params(graph: str, node: str) -> dict[str, Any]:
    return g.effective_parameters(g.get_graph(graph).node(node))


@pytest.mark.parametrize("name", sorted(g.GRAPHS))
def test_every_parameter_is_one_the_node_takes_and_files_do_not_repeat_fixed_ones(name: str) -> None:
    """A misspelt parameter in a params file is ignored by ROS without a word, and the node then
    runs on its default (on the real arm: perhaps a higher speed than meant)."""
    graph = g.get_graph(name)
    files = {f for node in graph.nodes for f in node.parameter_files}
    sections: dict[str, dict[str, Any]] = {}
    for f in sorted(files):
        for node_name, params in g.load_parameters(g.config_path(f)).items():
            sections.setdefault(node_name, {}).update(params)
    assert set(sections) == {n.name for n in graph.nodes}, "config sections must be exactly the graph's nodes"
    for node in graph.nodes:
        assert node.module == NODE_MODULES.get(node.name, f"afford_ros.nodes.{node.name}")
        assert node.executable == node.name
        # A graph's own file comes last (one that extends another reads that one's first).
        assert node.parameter_files[-1] == f"{name}.yaml"
        keys = set(g.effective_parameters(node))
        assert keys <= NODE_PARAMETERS[node.name], (
            f"{name}/{node.name}: unknown {keys - NODE_PARAMETERS[node.name]}"
        )
        # A fixed parameter repeated in the file would look editable and silently not be.
        assert not set(sections[node.name]) & set(node.inline), f"{name}/{node.name} repeats fixed parameters"


def test_the_sim_graph_talks_to_its_own_simulator() -> None:
    """The executor must connect to the franky-sim that sim_world serves, and perception may use
    the simulator's ground truth only where sim_world publishes it."""
    assert (
        _params("fr3_sim", "executor")["robot_ip"]
        == _params("fr3_sim", "sim_world")["hostname"]
        == "127.0.0.1"
    )
    assert _params("fr3_sim", "executor")["backend"] == "franky"
    assert _params("fr3_sim", "perception")["segmentation"] == "ground_truth"
    assert _params("fr3_sim", "sim_world")["publish_ground_truth"] is True
    assert _params("fr3_sim", "task_server")["mode"] == "sim"


def test_no_real_world_graph_depends_on_simulator_ground_truth() -> None:
    """On the real robot and in Isaac Sim nobody publishes /sim/ground_truth/*; perception
    configured for it would wait forever for masks."""
    sim_only = {t.name for t in TOPICS if t.sim_only}
    assert sim_only, "the contract marks ground-truth topics"
    for name in ("fr3_real", "isaac_sim"):
        graph = g.get_graph(name)
        assert "sim_world" not in {n.name for n in graph.nodes}
        assert _params(name, "perception")["segmentation"] in {"depth", "sam"}
        remapped = {dst for n in graph.nodes for _, dst in n.remappings}
        assert not remapped & sim_only


def test_the_real_graph_cannot_approve_by_itself() -> None:
    """On the real arm every trial waits for a person: mode real and no automatic approval are
    fixed by the graph, so neither a parameter file nor --set nor a launch argument can change them."""
    node = g.get_graph("fr3_real").node("task_server")
    assert node.inline == {"mode": "real", "auto_approve": False}
    assert "auto_approve" not in {a.parameter for a in g.get_graph("fr3_real").launch_arguments}
    with pytest.raises(ValueError, match="fixed by the graph"):
        g.effective_parameters(node, {"auto_approve": True})
    real = _params("fr3_real", "executor")
    assert real["backend"] == "franky" and real["robot_ip"] != "127.0.0.1"
    assert 0 < real["dynamics_factor"] <= 0.2  # DESIGN §8: low by default
    camera = _params("fr3_real", "camera")
    assert len(camera["extrinsics"]) == 7


def test_isaac_graph_commands_joints_through_the_bridge() -> None:
    """In Isaac Sim there is no libfranka server: the executor must use the joint-command
    backend, on the topic the bridge listens to."""
    import yaml

    bridge = yaml.safe_load((NODES_DIR.parent / "isaac" / "bridge.yaml").read_text())
    ex = _params("isaac_sim", "executor")
    assert ex["backend"] == "joint_command_topic"
    assert ex["joint_command_topic"] == bridge["robot"]["joint_command"]["isaac_topic"]
    assert _params("isaac_sim", "task_server")["mode"] == "sim"


def test_description_rejects_inconsistent_graphs() -> None:
    """Mistakes in the description fail when it is built, not when a node starts on the robot."""
    node = g.NodeSpec(name="planner", module="afford_ros.nodes.planner", executable="planner")
    with pytest.raises(ValueError, match="repeat"):
        g.GraphSpec(name="x", description="", nodes=(node, node))
    with pytest.raises(ValueError, match="valid ROS node name"):
        g.NodeSpec(name="my-node", module="m", executable="m")
    with pytest.raises(ValueError, match="respawned node cannot also be required"):
        g.NodeSpec(name="a", module="m", executable="m", respawn=True)
    with pytest.raises(ValueError, match="not a ROS parameter value"):
        g.NodeSpec(name="a", module="m", executable="m", parameters=(("p", [1, "x"]),))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown node"):
        g.GraphSpec(
            name="x",
            description="",
            nodes=(node,),
            launch_arguments=(g.LaunchArgument("ip", "executor", "robot_ip", ""),),
        )
    with pytest.raises(KeyError, match="known graphs: fr3_sim, fr3_sim_policy, fr3_real, isaac_sim"):
        g.get_graph("fr3")


def test_params_files_are_rejected_when_ros_would_reject_them(tmp_path: Path) -> None:
    """A params file ROS cannot read fails at start-up of every node; say so up front."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("planner:\n  gate: true\n")
    with pytest.raises(ValueError, match="ros__parameters"):
        g.load_parameters(bad)
    bad.write_text("planner:\n  ros__parameters:\n    weights: [1, two]\n")
    with pytest.raises(ValueError, match="not a ROS parameter value"):
        g.load_parameters(bad)


def test_config_dir_is_the_checkout_config_folder() -> None:
    """In a source checkout, edits to config/*.yaml take effect without reinstalling."""
    assert g.config_dir() == Path(g.__file__).resolve().parents[3] / "config"


def _string_constants(path: Path) -> set[str]:
    # Nodes declare parameters in different styles (directly, through a helper, from a table of
    # descriptions); every style names the parameter in a string literal somewhere in the module.
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


@pytest.mark.parametrize("node", sorted(NODE_PARAMETERS))
def test_nodes_know_the_parameters_the_graphs_set(node: str) -> None:
    """rclpy drops a parameter the node never declares, silently: a config key that the node's
    module does not even name is such a parameter (a typo, or a rename on one side)."""
    path = NODES_DIR / f"{node}.py"
    if node in NODE_MODULES:
        package = NODE_MODULES[node].split(".")[0]
        path = NODES_DIR.parents[2] / package / (NODE_MODULES[node].replace(".", "/") + ".py")
    assert path.is_file(), f"{path} is missing"
    named = _string_constants(path) | CONFIG_PARAMETERS.get(node, set())
    used = {
        k
        for name, graph in g.GRAPHS.items()
        for n in graph.nodes
        if n.name == node
        for k in _params(name, node)
    }
    assert used <= named, f"{node} never names {sorted(used - named)}"
