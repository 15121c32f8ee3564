"""Field checks for specs: each records a {path, message} problem instead of raising, so all are reported."""


def join(path, key):
    """A problem's path: "batch" at the top level, "layers[3].out" below it."""
    return f"{path}.{key}" if path else key


class Problems(list):
    def add(self, path, message):
        self.append({"path": path, "message": message})


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
            problems.add(join(path, key), "is not a field here; allowed: " + ", ".join(sorted(allowed)))
