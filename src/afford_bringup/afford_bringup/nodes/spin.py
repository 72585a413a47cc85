"""The ``main()`` of a node that needs nothing special at start or stop: init, build, spin on a
multi-threaded executor (services that wait on other nodes need a free thread for the answers),
and shut down cleanly on Ctrl-C, SIGTERM or an external shutdown."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

N = TypeVar("N", bound=Node)


@contextmanager
def clean_shutdown() -> Iterator[None]:
    """Around a node's spin: Ctrl-C, SIGTERM and an external shutdown end it quietly, and so
    does the ``RCLError`` rclpy raises when that shutdown lands while the executor builds its
    wait set (:func:`shut_down_under_spin`); every other error goes on."""
    try:
        yield
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        if not shut_down_under_spin(exc):
            raise


def shut_down_under_spin(exc: BaseException) -> bool:
    """True when ``exc`` came out of a spin only because Ctrl-C or SIGTERM shut the context
    down while the executor was building its wait set: rclpy then raises ``RCLError`` ("the
    given context is not valid") instead of ``ExternalShutdownException``. Such an exit is a
    clean one; any error while the context is still valid is not."""
    from rclpy._rclpy_pybind11 import RCLError

    return isinstance(exc, RCLError) and not rclpy.ok()


def run_node(
    factory: Callable[[], N],
    argv: list[str] | None = None,
    threads: int = 4,
    on_exit: Callable[[N], None] | None = None,
) -> int:
    """Run the node ``factory()`` builds until shutdown; returns the process exit code.

    ``on_exit`` runs on the node before it is destroyed, however the spin ended (the executor
    stops the robot there)."""
    rclpy.init(args=argv if argv is not None else sys.argv)
    node = None
    try:
        with clean_shutdown():
            node = factory()
            executor = MultiThreadedExecutor(num_threads=threads)
            executor.add_node(node)
            executor.spin()
    finally:
        if node is not None:
            if on_exit is not None:
                on_exit(node)
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
