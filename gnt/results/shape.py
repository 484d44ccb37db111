"""Check a JSON value against the ``TypedDict`` that declares it, at run time: the written shape is the declared one.

The type checker proves that writers *build* the declared dicts; this proves what *reads back* from disk has that
shape, for the tests that write a folder through every step and for nothing else (readers index by the declared
names and treat a missing optional field as absent). It understands what :mod:`gnt.results_schema` uses:
``TypedDict`` (required and optional keys, no others), ``Literal``, unions and ``None``, ``list[...]``,
``dict[str, ...]``, ``Any``, ``bool``/``int``/``float``/``str`` (an int is a valid float, a bool is not a number).
"""

from __future__ import annotations

import types
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints, is_typeddict


def _typeddict_errors(value: Any, shape: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: expected an object ({shape.__name__}), got {type(value).__name__}"]
    hints = get_type_hints(shape)
    errors = [f"{where}: missing key {key!r} ({shape.__name__})" for key in sorted(shape.__required_keys__)
              if key not in value]
    for key, item in value.items():
        if key not in hints:
            errors.append(f"{where}: unexpected key {key!r} ({shape.__name__} declares {', '.join(hints)})")
        else:
            errors += shape_errors(item, hints[key], f"{where}.{key}")
    return errors


def shape_errors(value: Any, shape: Any, where: str = "$") -> list[str]:
    """Every place where ``value`` departs from ``shape`` (empty when it conforms), as ``path: what`` lines."""
    if shape is Any or isinstance(shape, TypeVar):
        return []
    if is_typeddict(shape):
        return _typeddict_errors(value, shape, where)
    origin = get_origin(shape)
    if origin is Literal:
        return [] if value in get_args(shape) else [f"{where}: {value!r} is not one of {get_args(shape)}"]
    if origin in (Union, types.UnionType):
        options = get_args(shape)
        if any(not shape_errors(value, option, where) for option in options):
            return []
        return [f"{where}: {str(value)[:60]!r} matches none of {shape}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        (item,) = get_args(shape) or (Any,)
        return [error for index, entry in enumerate(value) for error in shape_errors(entry, item, f"{where}[{index}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        _, item = get_args(shape) or (str, Any)
        return [error for key, entry in value.items() for error in shape_errors(entry, item, f"{where}.{key}")]
    if shape is type(None) or shape is None:
        return [] if value is None else [f"{where}: expected null, got {type(value).__name__}"]
    if shape is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected a number, got {type(value).__name__}"]
    if shape is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{where}: expected an integer, got {type(value).__name__}"]
    if shape in (bool, str):
        return [] if isinstance(value, shape) else [f"{where}: expected {shape.__name__}, got {type(value).__name__}"]
    if isinstance(shape, type) and shape in (dict, list):
        return [] if isinstance(value, shape) else [f"{where}: expected {shape.__name__}, got {type(value).__name__}"]
    raise TypeError(f"{where}: cannot check against {shape!r}")


__all__ = ["shape_errors"]
