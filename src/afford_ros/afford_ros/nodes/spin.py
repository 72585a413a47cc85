"""The ``main()`` of a node that needs nothing special at start or stop: init, build, spin on a
multi-threaded executor (services that wait on other nodes need a free thread for the answers),
and shut down cleanly on Ctrl-C, SIGTERM or an external shutdown."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

N = TypeVar("N", bound=Node)

#: Longest a spinning executor goes without looking at whether its context was shut down.
SHUTDOWN_POLL_S = 0.2


def spin_until_shutdown(executor: Executor, poll_s: float = SHUTDOWN_POLL_S) -> None:
    """``executor.spin()``, but looking at the context at least every ``poll_s`` seconds.

    A context shut down below Python, as rclpy's signal handler does on Ctrl-C or SIGTERM, wakes
    no executor (``test_spin.py`` shows a plain ``spin()`` staying in ``rcl_wait``); the
    handler's own poke of the executor can come too early to count. The camera node's test
    failed 4 times in 45 runs on a loaded machine: context shut down, executor still waiting,
    the process alive 15 s after SIGTERM.
    """
    try:
        while executor.context.ok():
            executor.spin_once(timeout_sec=poll_s)
    except ExternalShutdownException:
        pass  # the shutdown this function waits for, noticed inside spin_once: a normal end


def quiet_sigint() -> None:
    """Leave Ctrl-C to rclpy: call before ``rclpy.init``.

    rclpy's handler shuts the context down (which ends the spin) and then passes the signal on
    to the handler it found, Python's, whose KeyboardInterrupt lands wherever the main thread
    happens to be: often the exit path, halfway through stopping the arm, and again on every
    further Ctrl-C. With this handler in place the signal passes on to a no-op instead. The
    launcher's SIGTERM and SIGKILL stages still end a node that hangs.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _ignore)


def _ignore(signum: int, frame: object) -> None:
    """A Python-level signal handler that does nothing (rclpy's own handler has acted)."""


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
    stops the robot there); a further Ctrl-C does not interrupt it."""
    quiet_sigint()
    rclpy.init(args=argv if argv is not None else sys.argv)
    node = None
    try:
        with clean_shutdown():
            node = factory()
            executor = MultiThreadedExecutor(num_threads=threads)
            executor.add_node(node)
            spin_until_shutdown(executor)
    finally:
        if node is not None:
            if on_exit is not None:
                on_exit(node)
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
