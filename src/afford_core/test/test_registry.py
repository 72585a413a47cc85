"""The registry every kind of plug-in uses: one name once, lazy entries, clear errors."""

from __future__ import annotations

import pytest

from afford_core.registry import Registry


def test_register_get_and_list() -> None:
    reg: Registry[object] = Registry("widget")
    a = reg.register("a", object())

    @reg.register("b-1")
    class B:
        pass

    assert reg.get("a") is a and reg.get("b-1") is B
    assert reg.names() == ["a", "b-1"] and "a" in reg and len(reg) == 2
    assert reg.register("a", a) is a  # the same object again is fine


def test_a_name_is_taken_once_and_names_are_checked() -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("a", 1)
    with pytest.raises(ValueError, match="widget 'a' is already registered"):
        reg.register("a", 2)
    with pytest.raises(ValueError, match="lower-case"):
        reg.register("Bad Name", 3)


def test_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[object] = Registry("widget")
    reg.register("a", 1)
    with pytest.raises(KeyError, match="unknown widget 'z'; known: a"):
        reg.get("z")


def test_lazy_entries_import_on_first_use() -> None:
    loaded: list[str] = []
    reg: Registry[object] = Registry("widget", on_load=lambda name, obj: loaded.append(name))
    reg.register_lazy("dumps", "json:dumps")
    assert loaded == []
    import json

    assert reg.get("dumps") is json.dumps and loaded == ["dumps"]
    with pytest.raises(ValueError, match="package.module:attr"):
        reg.register_lazy("bad", "json.dumps")
    reg.register_lazy("gone", "afford_no_such_module:thing")
    with pytest.raises(ModuleNotFoundError):
        reg.get("gone")
