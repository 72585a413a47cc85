"""The shared node main: when is an exception out of a spin a clean shutdown?"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy._rclpy_pybind11 import RCLError  # noqa: E402

from afford_ros.nodes.spin import shut_down_under_spin  # noqa: E402


def test_only_an_rcl_error_after_shutdown_counts_as_a_clean_exit() -> None:
    """Ctrl-C can shut the context down while the executor builds its wait set, and rclpy then
    raises RCLError instead of ExternalShutdownException. Taken as a crash, a node stopped by the
    operator exited 1 and the launcher reported a fault; but the same error while the context
    is valid is a real fault and must not be hidden."""
    rclpy.init()
    try:
        assert not shut_down_under_spin(RCLError("failed to initialize wait set"))
    finally:
        rclpy.shutdown()
    assert shut_down_under_spin(RCLError("failed to initialize wait set"))
    assert not shut_down_under_spin(ValueError("a bad parameter"))


def test_clean_shutdown_ends_quietly_only_on_a_shutdown() -> None:
    """Every node's main wraps its spin in this: Ctrl-C exits 0, a real fault still surfaces."""
    from afford_ros.nodes.spin import clean_shutdown

    with clean_shutdown():
        raise KeyboardInterrupt
    with pytest.raises(ValueError), clean_shutdown():
        raise ValueError("a bad parameter")


@pytest.mark.parametrize("kind", ["single", "multi"])
def test_spin_ends_when_the_context_shuts_down_without_waking_the_executor(kind: str) -> None:
    """On Ctrl-C or SIGTERM rclpy's signal handler shuts the context down from C++ (no Python
    shutdown callbacks, so no wake-up for the executor) and pokes the executor's signal guard
    condition; when the executor takes that poke while the context still reads as valid, a plain
    ``spin()`` goes back into ``rcl_wait`` for good. The node then ignores Ctrl-C until the
    launcher kills it, and the executor node never stops the arm on its way out. Here the
    context is shut down at the rcl level, as the handler does, with the executor waiting
    (``executor.spin()`` stays in ``rcl_wait`` here); the spin must still end."""
    import threading
    import time

    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    from afford_ros.nodes.spin import spin_until_shutdown

    context = rclpy.Context()
    rclpy.init(context=context)
    executor = (
        SingleThreadedExecutor(context=context)
        if kind == "single"
        else MultiThreadedExecutor(context=context)
    )
    node = rclpy.create_node(f"spin_until_shutdown_{kind}", context=context)
    executor.add_node(node)
    spinning = threading.Thread(target=spin_until_shutdown, args=(executor,), daemon=True)
    spinning.start()
    time.sleep(0.3)  # into rcl_wait
    with context.handle:
        context.handle.shutdown()  # rcl only, as the signal handler; no Python callbacks
    spinning.join(timeout=5.0)
    assert not spinning.is_alive(), "spin_until_shutdown did not notice the shut-down context"
    executor.shutdown()
    node.destroy_node()


#: A node run by ``run_node`` whose ``on_exit`` (the executor's halt of the arm) takes a while.
_SLOW_EXIT_NODE = """
import sys, time
import rclpy
from afford_ros.nodes.spin import run_node

def halt(node):
    print("halting", flush=True)
    time.sleep(1.0)
    print("halted", flush=True)

sys.exit(run_node(lambda: rclpy.create_node("slow_exit"), on_exit=halt))
"""


def test_a_second_ctrl_c_does_not_cut_the_exit_path_short() -> None:
    """The executor node stops the arm in ``on_exit``. An operator who presses Ctrl-C again (or
    a launcher whose SIGINT reaches the process twice) must not raise KeyboardInterrupt in the
    middle of that stop: the node finishes its exit path and exits 0."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, ROS_DOMAIN_ID=str(100 + os.getpid() % 50))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_EXIT_NODE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        time.sleep(3.0)  # imported and spinning
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        assert proc.stdout is not None
        assert "halting" in proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "halted" in out, err
    assert proc.returncode == 0, err
    assert "KeyboardInterrupt" not in err, err
