"""Field checks, and the one sentence for each kind of problem a sent value can have, wherever it is sent.

A spec (/api/trace), a snapshot or session body (/api/snapshots, /api/session) and a ledger query
(/api/ledger) are all checked here. Each check records a {path, message} problem instead of raising, so all are reported, and says
it in one of these sentences: `is missing: give …`, `must be …, not …` (the wrong type), `must be …; got …` (out of
range, or not one of the choices), `is not a field here; …` (an unknown key, backend.problems.unknown_field).
"""
import math

from backend.problems import join, unknown_field

SHOWN_CHARACTERS = 24       # a sent string quoted back in a problem is cut here


def report(problems, path, expected, value, of_type=True, got=None):
    """Record the one sentence for `value` at `path` failing to be `expected` (said as "a whole number from 1 to
    4,096"): missing when it is absent or null, the wrong type when not `of_type`, else out of range (`got`, when
    given, says what was sent instead of the value itself: "300 characters")."""
    if value is None:
        problems.add(path, f"is missing: give {expected}")
    elif not of_type:
        problems.add(path, f"must be {expected}, not {shown(value)}")
    else:
        problems.add(path, f"must be {expected}; got {got or shown(value)}")


def shown(value):
    """A sent value as a problem names it: short, never a huge string echoed back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        cut = value if len(value) <= SHOWN_CHARACTERS else value[:SHOWN_CHARACTERS] + "…"
        return f'"{cut}"'
    if isinstance(value, (int, float)):
        return plain(value)
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value):,}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def plain(value):
    """A number as a problem writes it: 4,096, 0.25, 1e-06; nan and inf as they are."""
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        return f"{int(value):,}"
    return f"{value:g}"


def is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    """A finite int or float (JSON has no nan or inf; Python's parser lets them in)."""
    return (is_integer(value) or isinstance(value, float)) and math.isfinite(value)


def whole_number(low, high):
    return f"a whole number from {plain(low)} to {plain(high)}"


def a_number(low, high, high_open=False, hint=None):
    return f"a number from {_bounds(low, high, high_open)}" + (f" ({hint})" if hint else "")


def _bounds(low, high, high_open):
    return f"{plain(low)}, below {plain(high)}" if high_open else f"{plain(low)} to {plain(high)}"


def text_of(max_length, min_length=0, what="text"):
    if min_length:
        return f"{what} of {plain(min_length)} to {plain(max_length)} characters"
    return f"{what} of at most {plain(max_length)} characters"


def integer(value, path, problems, low, high, fallback=None):
    if is_integer(value) and low <= value <= high:
        return value
    report(problems, path, whole_number(low, high), value, of_type=is_integer(value))
    return fallback if isinstance(fallback, int) else low


def number(value, path, problems, low, high, fallback=None, high_open=False, hint=None):
    if _in_range(value, low, high, high_open):
        return float(value)
    report(problems, path, a_number(low, high, high_open, hint), value, of_type=is_number(value))
    return fallback if fallback is not None else low


def number_pair(value, path, problems, low, high, fallback, high_open=False, hint=None):
    """A [a, b] pair of numbers in one range (Adam's betas): a problem at `path` for the shape, at `path[i]` per
    number out of range."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        expected = f"a pair of two numbers from {_bounds(low, high, high_open)}, such as {list(fallback)}"
        report(problems, path, expected, value, of_type=isinstance(value, (list, tuple)))
        return list(fallback)
    return [number(item, f"{path}[{i}]", problems, low, high, float(fallback[i]), high_open, hint)
            for i, item in enumerate(value)]


def _in_range(value, low, high, high_open):
    if not is_number(value):
        return False
    return low <= value < high if high_open else low <= value <= high


def boolean(value, path, problems, fallback):
    if isinstance(value, bool):
        return value
    report(problems, path, "true or false", value, of_type=False)
    return fallback


def choice(value, path, problems, options, fallback=None):
    if isinstance(value, str) and value in options:
        return value
    report(problems, path, "one of " + ", ".join(f'"{o}"' for o in options), value)
    return fallback if fallback is not None else options[0]


def text(value, path, problems, max_length, fallback="", min_length=0, what="text"):
    """A string of min_length to max_length characters; `what` names it in the problem ("a node id")."""
    if isinstance(value, str) and min_length <= len(value) <= max_length:
        return value
    report(problems, path, text_of(max_length, min_length, what), value, of_type=isinstance(value, str),
           got=f"{len(value):,} characters" if isinstance(value, str) else None)
    return fallback


def mapping(value, path, problems):
    if not isinstance(value, dict):
        report(problems, path, "an object", value, of_type=False)
        return {}
    return value


def unknown_keys(obj, allowed, path, problems):
    for key in obj:
        if key not in allowed:
            unknown_field(problems, join(path, str(key)), allowed)


class Field:
    """One spec field declared once: its name, type, range or options, default and one-line help.

    `read` checks and normalizes it (through the checks above); `describe` is its entry in GET /api/schema. A
    range's top may name a cap in backend/models/caps.py (`cap="batch"`): it is looked up on every use.
    `step` makes the editor draw a slider. `optional` fields are left out of the normalized spec when absent (or
    null) instead of taking the default.
    """

    TYPES = ("integer", "number", "pair", "boolean", "choice", "text")

    def __init__(self, name, type, help, default=None, low=None, high=None, cap=None, options=(), high_open=False,
                 hint=None, optional=False, step=None, required=False):
        assert type in self.TYPES, type
        self.name, self.type, self.help, self.default = name, type, help, default
        self.low, self._high, self.cap, self.options = low, high, cap, tuple(options)
        self.high_open, self.hint, self.optional = high_open, hint, optional
        self.step = step               # a slider's step in the editor; None: a number box
        self.required = required       # no fallback: a spec must give it (`default` is then the editor's start)

    @property
    def high(self):
        from backend.models.caps import cap
        return cap(self.cap) if self.cap else self._high

    def present(self, obj):
        return not self.optional or obj.get(self.name) is not None

    def read(self, obj, path, problems):
        """This field of `obj` checked and normalized (its default when absent; a problem at path.name when bad)."""
        return self.check(obj.get(self.name, None if self.required else self.default), join(path, self.name),
                          problems)

    def check(self, value, path, problems):
        """`value` checked as this field at `path`: the value normalized, or a fallback and a problem."""
        fallback = None if self.required else self.default
        if self.type == "integer":
            return integer(value, path, problems, self.low, self.high, fallback)
        if self.type == "number":
            return number(value, path, problems, self.low, self.high, fallback, self.high_open, self.hint)
        if self.type == "pair":
            return number_pair(value, path, problems, self.low, self.high, self.default, self.high_open, self.hint)
        if self.type == "boolean":
            return boolean(value, path, problems, self.default)
        if self.type == "choice":
            return choice(value, path, problems, self.options, self.default)
        return text(value, path, problems, self.high, self.default)

    def describe(self):
        entry = {"name": self.name, "type": self.type, "help": self.help, "default": _plain(self.default)}
        if self.type in ("integer", "number", "pair"):
            entry.update({"min": self.low, "max": self.high, "max_open": self.high_open})
            if self.step is not None:
                entry["step"] = self.step
        if self.type == "text":
            entry["max_length"] = self.high
        if self.options:
            entry["options"] = list(self.options)
        if self.cap:
            entry["cap"] = self.cap
        if self.optional:
            entry["optional"] = True
        if self.required:
            entry["required"] = True
        return entry


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def read_fields(declared, obj, path, problems, out):
    """Read every declared field of `obj` that is present into `out`; returns the declared names."""
    for field in declared:
        if field.present(obj):
            out[field.name] = field.read(obj, path, problems)
    return [field.name for field in declared]


class Group:
    """An optional object of declared fields inside another (loss.gradient_penalty = {weight}): absent or null
    leaves it out; present, each field is read with its default. GET /api/schema describes it, so the editor draws it
    as a switch with its fields."""

    def __init__(self, name, help, fields):
        self.name, self.help, self.fields = name, help, tuple(fields)

    def read(self, value, path, problems):
        path = join(path, self.name)
        value = mapping(value, path, problems)
        unknown_keys(value, {field.name for field in self.fields}, path, problems)
        out = {}
        read_fields(self.fields, value, path, problems, out)
        return out

    def describe(self):
        return {"name": self.name, "help": self.help, "optional": True,
                "fields": [field.describe() for field in self.fields]}


class Variants:
    """A spec object whose fields depend on one choice among its options (input.kind, loss.type,
    optimizer.type): each option declares its own fields, with help, in one place.

    `ignored` names keys an option tolerates without using them (an optimizer "none" may keep an lr); `groups` are
    optional sub-objects any option may carry (a loss's gradient penalty).
    """

    def __init__(self, name, key, help, options, default, ignored=(), groups=()):
        self.name, self.key, self.help, self.default = name, key, help, default
        self.options = dict(options)              # option -> (help, fields)
        self.ignored = tuple(ignored)
        self.groups = tuple(groups)

    def fields_of(self, option):
        return self.options[option][1]

    def read(self, value, problems):
        path = self.name
        value = mapping(value, path, problems)
        option = choice(value.get(self.key, self.default), join(path, self.key), problems, tuple(self.options),
                        self.default)
        declared = self.fields_of(option)
        named = {self.key, *(field.name for field in declared), *(group.name for group in self.groups)}
        allowed = named | set(self.ignored)
        strays = {}
        for key in [k for k in value if k not in allowed]:
            owners = [o for o in self.options if key in {field.name for field in self.fields_of(o)}]
            if not owners:
                strays[key] = value[key]
                continue
            owned = ", ".join(owners[:-1]) + " and " + owners[-1] if len(owners) > 1 else owners[0]
            problems.add(join(path, key), f'is a field of {owned}, not {option}: remove it, or set '
                                          f'{path}.{self.key} to "{owners[0]}"')
        unknown_keys(strays, named, path, problems)
        normalized = {self.key: option}
        read_fields(declared, value, path, problems, normalized)
        for group in self.groups:
            if value.get(group.name) is not None:
                normalized[group.name] = group.read(value[group.name], path, problems)
        return normalized

    def describe(self):
        entry = {"key": self.key, "help": self.help, "default": self.default,
                 "options": {option: {"help": help, "fields": [field.describe() for field in declared]}
                             for option, (help, declared) in self.options.items()}}
        if self.groups:
            entry["groups"] = [group.describe() for group in self.groups]
        return entry
