"""Command-line flags made from the fields of a config dataclass, and configs made from parsed flags.

Each field's metadata (``dcgmm_tf.config.setting``) gives the flag its help text, its choices (an enum flag),
its bounds (``lower_bound``/``upper_bound``) or its rule (a validator), so the command line and the Python
API accept the same values and say so with the same words.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from absl import flags

Config = TypeVar("Config")
ALIASES = {"num_pairs": "num_constraints"}  # another name a flag is accepted under, silently: the field


def define_flags(config_class: type, flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Defines one flag per field of ``config_class``, with the field's default, help and allowed values."""
    for field in dataclasses.fields(config_class):
        meta, name, default = field.metadata, field.name, field.default
        kind = meta.get("kind") or type(default)
        args = {"flag_values": flag_values}
        if meta.get("choices") is not None:
            flags.DEFINE_enum(name, default, list(meta["choices"]), meta["help"], **args)
        elif kind is bool:
            flags.DEFINE_boolean(name, default, meta["help"], **args)
        elif kind in (int, float):
            define = flags.DEFINE_integer if kind is int else flags.DEFINE_float
            define(name, default, meta["help"], lower_bound=meta.get("lower"), upper_bound=meta.get("upper"), **args)
        elif kind is tuple:
            flags.DEFINE_list(name, [str(v) for v in default], meta["help"], **args)
        else:
            flags.DEFINE_string(name, default, meta["help"], **args)
        if meta.get("rule") is not None:
            check, text = meta["rule"]
            flags.register_validator(
                name,
                lambda v, check=check, default=default: _holds(check, v, default),
                message=f"--{name} must be {text}.",
                flag_values=flag_values,
            )
    names = {f.name for f in dataclasses.fields(config_class)}
    for alias, name in ALIASES.items():
        if name in names and alias not in flag_values:
            flags.DEFINE_string(alias, None, f"Another name of --{name}.", flag_values=flag_values)


def _holds(check: Any, flag_value: Any, default: Any) -> bool:
    """Whether a field's rule holds for a flag value (False when the value does not convert)."""
    try:
        return bool(check(_value(flag_value, default)))
    except (TypeError, ValueError):
        return False


def _value(flag_value: Any, default: Any) -> Any:
    """A flag's value in the type of the field's default (a list flag becomes a tuple of the items' type)."""
    if isinstance(default, tuple):
        item = type(default[0]) if default else str
        return tuple(item(v) for v in flag_value)
    return flag_value


def config_from_flags(
    config_class: type[Config], flag_values: flags.FlagValues = flags.FLAGS, **overrides: Any
) -> Config:
    """An instance of ``config_class`` from the parsed flags of its fields, with ``overrides`` on top."""
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    values = {name: _value(flag_values[name].value, f.default) for name, f in fields.items()}
    for alias, name in ALIASES.items():
        if name in values and alias in flag_values and flag_values[alias].present:
            if flag_values[name].present:
                raise ValueError(f"--{alias} is another name of --{name}: give one of them, not both.")
            values[name] = _value(flag_values[name].parser.parse(flag_values[alias].value), fields[name].default)
    return config_class(**{**values, **overrides})


def replaced(config: Config, flag_values: flags.FlagValues, **texts: str) -> Config:
    """``config`` with fields replaced by values given as command-line text (e.g. ``epochs="30"``), each parsed
    and checked by its flag; an unknown field name raises ``ValueError``."""
    fields = {f.name: f for f in dataclasses.fields(config)}
    unknown = sorted(set(texts) - set(fields))
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown} of {type(config).__name__}")
    values = {}
    for name, text in texts.items():
        try:
            parsed = flag_values[name].parser.parse(text)
        except ValueError as e:
            raise ValueError(f"{name}={text!r}: {e}") from None
        values[name] = _value(parsed, fields[name].default)
    return dataclasses.replace(config, **values)
