"""The ES modules a page's entry scripts import, directly or not, read from their import lines.

The explorer preloads them all (`<link rel="modulepreload">`): without the list, the browser finds the ~60 modules one
import depth at a time, a round trip per depth, before the page can start.
"""
import re
from pathlib import Path

# `import … from "./x.js"`, `export … from "./x.js"` and `import "./x.js"`, over several lines: the page's modules
# import only their neighbours in static/js.
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;"']*?["']\./([\w.-]+\.js)["']""", re.MULTILINE)


def module_closure(folder: Path, entries: tuple[str, ...]) -> list[str]:
    """The file names of `entries` and every module they import, in the order first reached; missing files are skipped."""
    order: list[str] = []
    pending = list(entries)
    while pending:
        name = pending.pop(0)
        path = folder / name
        if name in order or not path.is_file():
            continue
        order.append(name)
        pending.extend(IMPORT.findall(path.read_text(encoding="utf-8")))
    return order
