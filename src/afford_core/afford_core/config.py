"""One configuration system: typed dataclass configs, read from YAML, the command line and ROS.

Every component's settings are a dataclass that validates itself in ``__post_init__`` (as
LeRobot's policy configs do); this module moves them in and out of plain data under the same
dotted names everywhere:

* :func:`to_dict` / :func:`from_dict`: a config and its nested configs as a JSON/YAML-ready dict
  and back; unknown keys are an error that names the known ones, values are converted to the
  field's type (a list to a tuple, a number to a float) and checked against ``Literal`` choices;
* :func:`load` / :func:`dump`: the same through a YAML file (``afford run --config run.yaml``);
* :func:`apply_overrides`: ``key.sub=value`` strings (``--set terms.gate_threshold=0.4``),
  values parsed as YAML, onto a config, which is validated again as a whole;
* :func:`flatten` / :func:`unflatten`: a config as ``{"terms.gate_threshold": 0.5, ...}``, the
  form ROS parameters take (``afford_ros.params`` declares and reads them generically);
* :func:`write_resolved`: every run writes the configuration it really ran with, defaults
  filled in, beside its results.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import yaml

C = TypeVar("C")


class ConfigError(ValueError):
    """A configuration that does not fit its dataclass: the message names the key and why."""


# ------------------------------------------------------------------------------ to plain data


def to_dict(config: Any) -> dict[str, Any]:
    """``config`` (a dataclass instance) as nested plain data: dicts, lists, str, numbers, bools."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"expected a dataclass instance, got {type(config).__name__}")
    return {f.name: _plain(getattr(config, f.name)) for f in dataclasses.fields(config) if f.init}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"{type(value).__name__} is not configuration data")


# ------------------------------------------------------------------------------ from plain data


def from_dict(cls: type[C], data: Mapping[str, Any], where: str = "") -> C:
    """Build ``cls`` from plain data; missing keys take the field's default.

    Raises:
        ConfigError: an unknown key, a value of the wrong type or outside a ``Literal``, or the
            dataclass's own validation refusing the result (the message says where).
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where or cls.__name__}: expected a mapping of settings, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where or cls.__name__}: unknown setting {unknown[0]!r}; known: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(cls)
    kwargs = {name: _convert(hints[name], value, _join(where, name)) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"{where or cls.__name__}: {err}") from err


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arm in (a for a in args if a is not type(None)):
            try:
                return _convert(arm, value, where)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {tp}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {', '.join(repr(a) for a in args)}")
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return value if isinstance(value, tp) else from_dict(tp, value, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise ConfigError(f"{where}: {value!r} is not one of {[e.value for e in tp]}") from None
    if origin in (tuple, list):
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        items = list(value)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            out = [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(items)]
        elif origin is tuple and args:
            if len(items) != len(args):
                raise ConfigError(f"{where}: expected {len(args)} values, got {len(items)}")
            out = [_convert(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, items, strict=True))]
        else:
            inner = args[0] if args else Any
            out = [_convert(inner, v, f"{where}[{i}]") for i, v in enumerate(items)]
        return tuple(out) if origin is tuple else out
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        kt, vt = args if args else (Any, Any)
        return {_convert(kt, k, where): _convert(vt, v, f"{where}.{k}") for k, v in value.items()}
    if tp is np.ndarray:
        return np.asarray(value, dtype=np.float64)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected text, got {value!r}")
        return value
    if callable(tp) and isinstance(tp, type):
        return value if isinstance(value, tp) else tp(value)
    return value


# ------------------------------------------------------------------------------ files and overrides


def load(cls: type[C], path: str | Path, overrides: Iterable[str] = ()) -> C:
    """``cls`` from a YAML file, then ``overrides`` (``key.sub=value``) applied."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no configuration file {p}")
    data = yaml.safe_load(p.read_text()) or {}
    return apply_overrides(from_dict(cls, data, where=p.name), overrides)


def dump(config: Any) -> str:
    """The config as YAML text (:func:`load` reads it back to an equal config)."""
    return yaml.safe_dump(to_dict(config), sort_keys=False, default_flow_style=None)


def apply_overrides(config: C, overrides: Iterable[str]) -> C:
    """``config`` with each ``key.sub=value`` set (values parsed as YAML), validated again whole."""
    data = to_dict(config)
    changed = False
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} must look like key.sub=value")
        node = data
        parts = key.strip().split(".")
        for i, part in enumerate(parts[:-1]):
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"override {item!r}: {'.'.join(parts[: i + 1])} is not a group of settings")
            node = node[part]
        if parts[-1] not in node:
            known = ", ".join(sorted(node))
            raise ConfigError(f"override {item!r}: unknown setting {key.strip()!r}; known here: {known}")
        node[parts[-1]] = yaml.safe_load(text)
        changed = True
    return from_dict(type(config), data) if changed else config


def flatten(config: Any) -> dict[str, Any]:
    """The config as ``{"group.key": value}`` with plain values (lists for tuples)."""
    out: dict[str, Any] = {}

    def walk(prefix: str, data: Mapping[str, Any]) -> None:
        for k, v in data.items():
            if isinstance(v, Mapping):
                walk(_join(prefix, k), v)
            else:
                out[_join(prefix, k)] = v

    walk("", to_dict(config))
    return out


def unflatten(cls: type[C], flat: Mapping[str, Any]) -> C:
    """Inverse of :func:`flatten`: ``cls`` from dotted keys (missing ones keep their default)."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return from_dict(cls, _merge(to_dict(cls()), nested))


def _merge(base: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in new.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


def write_resolved(config: Any, path: str | Path) -> Path:
    """Write the configuration a run really used (every default filled in) as YAML."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(
        f"# Resolved configuration ({type(config).__name__}): every setting this run used.\n" + dump(config)
    )
    return p


def field_docs(cls: type) -> dict[str, str]:
    """Each field's description from the class docstring's ``Attributes:`` section."""
    doc = cls.__doc__ or ""
    if "Attributes:" not in doc:
        return {}
    out: dict[str, str] = {}
    current = None
    for line in doc.split("Attributes:", 1)[1].splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        head, sep, rest = stripped.partition(":")
        names = [n.strip() for n in head.replace("/", ",").split(",")]
        if (
            sep
            and all(n.isidentifier() for n in names)
            and line.startswith(" " * 8)
            and not line.startswith(" " * 12)
        ):
            for n in names:
                out[n] = rest.strip()
            current = names
        elif current:
            for n in current:
                out[n] = f"{out[n]} {stripped}".strip()
    return out
