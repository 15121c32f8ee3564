"""Field checks for specs: each records a {path, message} problem instead of raising, so all are reported."""
from backend.problems import join, unknown_field


def integer(obj, key, path, problems, low, high, default=None):
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.add(join(path, key), f"must be an integer from {low} to {high:,}" if low != 1
                     else f"must be a positive integer ≤ {high:,}")
        return default if isinstance(default, int) else low
    return value


def number(obj, key, path, problems, low, high, default=None, high_open=False, hint=None):
    value = obj.get(key, default)
    if not _in_range(value, low, high, high_open):
        bound = f"below {high}" if high_open else f"at most {high}"
        problems.add(join(path, key), f"must be a number from {low}, {bound}" + (f" ({hint})" if hint else ""))
        return default if default is not None else low
    return float(value)


def number_pair(obj, key, path, problems, low, high, default, high_open=False, hint=None):
    """A [a, b] pair of numbers in one range (Adam's betas): a problem at `key` for the shape, at `key[i]` per
    number out of range."""
    value = obj.get(key, default)
    bound = f"below {high}" if high_open else f"at most {high}"
    example = f", such as {list(default)}"
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        problems.add(join(path, key), f"must be a pair of two numbers from {low}, {bound}{example}")
        return list(default)
    pair = []
    for i, item in enumerate(value):
        if _in_range(item, low, high, high_open):
            pair.append(float(item))
        else:
            problems.add(f"{join(path, key)}[{i}]", f"must be a number from {low}, {bound}" + (f" ({hint})" if hint else ""))
            pair.append(float(default[i]))
    return pair


def _in_range(value, low, high, high_open):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return False
    return low <= value < high if high_open else low <= value <= high


def boolean(obj, key, path, problems, default):
    value = obj.get(key, default)
    if not isinstance(value, bool):
        problems.add(join(path, key), "must be true or false")
        return default
    return value


def choice(obj, key, path, problems, options, default=None):
    value = obj.get(key, default)
    if value not in options:
        problems.add(join(path, key), "must be one of " + ", ".join(f'"{o}"' for o in options))
        return default if default is not None else options[0]
    return value


def text(obj, key, path, problems, max_length, default=""):
    value = obj.get(key, default)
    if not isinstance(value, str) or len(value) > max_length:
        problems.add(join(path, key), f"must be text of at most {max_length} characters")
        return default
    return value


def mapping(value, path, problems):
    if not isinstance(value, dict):
        problems.add(path, "must be an object")
        return {}
    return value


def unknown_keys(obj, allowed, path, problems):
    for key in obj:
        if key not in allowed:
            unknown_field(problems, join(path, key), allowed)


class Field:
    """One spec field declared once: its name, type, range or options, default and one-line help.

    `read` checks and normalizes it (through the checks above); `describe` is its entry in GET /api/schema. A
    range's top may name a cap in backend/models/caps.py (`cap="batch"`): it is looked up on every use.
    `step` makes the editor draw a slider. `optional` fields are left out of the normalized spec when absent (or null) instead of taking the default.
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
        key = self.name
        if self.type == "integer":
            return integer(obj, key, path, problems, self.low, self.high, None if self.required else self.default)
        if self.type == "number":
            return number(obj, key, path, problems, self.low, self.high, None if self.required else self.default,
                          self.high_open, self.hint)
        if self.type == "pair":
            return number_pair(obj, key, path, problems, self.low, self.high, self.default, self.high_open, self.hint)
        if self.type == "boolean":
            return boolean(obj, key, path, problems, self.default)
        if self.type == "choice":
            return choice(obj, key, path, problems, self.options, self.default)
        return text(obj, key, path, problems, self.high, self.default)

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
        option = choice(value, self.key, path, problems, tuple(self.options), default=self.default)
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
