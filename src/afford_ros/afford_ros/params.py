"""ROS parameters mapped onto the stack's typed configs, generically.

A node declares a config dataclass's fields as parameters under a prefix (``safety.joint_margin``,
``selection.gate``), with the field's default and its docstring description, and reads them back
into the dataclass, which validates them once, as everywhere else (:mod:`afford_core.config`).
The parameter names are the config's dotted names, so a parameter file, ``--set`` and a YAML config
for ``afford run`` spell a setting the same way.

Fields a ROS parameter cannot hold (``None`` defaults, empty lists and mappings, such as
``selection.weights``) are left at their defaults and not declared; a mapping with default keys
would be declared key by key.
"""

from __future__ import annotations

from typing import Any, TypeVar

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from afford_core.config import field_docs, flatten, unflatten

C = TypeVar("C")


def _docs(cls: type) -> dict[str, str]:
    import dataclasses
    import typing

    out: dict[str, str] = {}
    hints = typing.get_type_hints(cls)
    for key, text in field_docs(cls).items():
        out[key] = text
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name)
        if dataclasses.is_dataclass(tp):
            out.update({f"{f.name}.{k}": v for k, v in _docs(tp).items()})  # type: ignore[arg-type]
    return out


def _ros_value(value: Any) -> bool:
    scalar = (bool, int, float, str)
    if isinstance(value, scalar):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(v, scalar) for v in value)


def config_parameters(cls: type, prefix: str, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The parameters :func:`declare_config` declares for ``cls``: name -> default."""
    return {f"{prefix}.{k}": v for k, v in flatten(cls()).items() if _ros_value(v) and k not in exclude}


def declare_config(node: Node, cls: type, prefix: str, exclude: tuple[str, ...] = ()) -> None:
    """Declare every ROS-representable field of ``cls`` as ``prefix.field`` (nested: dotted),
    except ``exclude`` (fields the node sets itself)."""
    docs = _docs(cls)
    for name, default in config_parameters(cls, prefix, exclude).items():
        key = name.removeprefix(prefix + ".")
        node.declare_parameter(name, default, ParameterDescriptor(description=docs.get(key, "")))


def read_config(node: Node, cls: type[C], prefix: str, exclude: tuple[str, ...] = ()) -> C:
    """The config ``cls`` from the node's ``prefix.*`` parameters (validated by the dataclass).

    Raises:
        afford_core.config.ConfigError: a parameter of the wrong type or refused by the config.
    """
    flat = {}
    for name, default in config_parameters(cls, prefix, exclude).items():
        value = node.get_parameter(name).value
        # ROS keeps a float list that happens to hold integers as integers: match the default.
        if isinstance(default, list) and default and isinstance(default[0], float):
            value = [float(v) for v in value]
        elif isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        flat[name.removeprefix(prefix + ".")] = value
    return unflatten(cls, flat)
