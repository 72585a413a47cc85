# Source this to use the stack from a shell: venv, ROS 2 wheels, offline models, headless GL.
_AFFORD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$_AFFORD_ROOT/.venv/bin/activate"
export AMENT_PREFIX_PATH="$_AFFORD_ROOT/.venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export ROS_HOME="${ROS_HOME:-$_AFFORD_ROOT/.ros}"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# DDS discovery stays on this machine unless you say otherwise: the sim graph, the CLI and the
# tests need no other host, and a graph should not be open to whatever network it sits on. On
# the lab's robot PC, to see the graph from another machine (RViz, Foxglove), set
# ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET and a ROS_DOMAIN_ID of the lab's before sourcing this.
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
# Fast DDS profiles (config/fastdds_profiles.xml): a service waits up to 2 s, not 100 ms, for a
# new client to be discovered before it gives its answer up (a busy machine is slow to discover).
# Naming a file of your own? Copy its "service" profile into it.
export FASTDDS_DEFAULT_PROFILES_FILE="${FASTDDS_DEFAULT_PROFILES_FILE:-$_AFFORD_ROOT/config/fastdds_profiles.xml}"
# Generated message classes check field types only when asked; ask, so a wrong type fails
# where it is set rather than arriving as garbage on the other side.
export ROS_PYTHON_CHECK_FIELDS="${ROS_PYTHON_CHECK_FIELDS:-1}"
# The MiniLM text model ships inside a pip package; never reach for a hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Offscreen rendering without a display; EGL on Mesa works on these CPU machines.
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYOPENGL_PLATFORM="${PYOPENGL_PLATFORM:-$MUJOCO_GL}"
unset _AFFORD_ROOT
