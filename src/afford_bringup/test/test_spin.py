"""The shared node main: when is an exception out of a spin a clean shutdown?"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy._rclpy_pybind11 import RCLError  # noqa: E402

from afford_bringup.nodes.spin import shut_down_under_spin  # noqa: E402


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
    from afford_bringup.nodes.spin import clean_shutdown

    with clean_shutdown():
        raise KeyboardInterrupt
    with pytest.raises(ValueError), clean_shutdown():
        raise ValueError("a bad parameter")
