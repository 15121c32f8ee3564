"""Command line: `python -m backend.driver PRESET_OR_SPEC_FILE` prints the trace document (schema_version 2) as JSON."""
import json
import sys
from pathlib import Path

from backend.models import SpecError, presets
from backend.driver import trace_spec
from backend.trace.document_versions import pack


def main(argv):
    if len(argv) != 1:
        print("usage: python -m backend.driver PRESET_OR_SPEC_FILE   (presets: "
              + ", ".join(presets.PRESETS) + ")", file=sys.stderr)
        return 2
    source = argv[0]
    if source in presets.PRESETS:
        spec = presets.get(source)
    elif Path(source).is_file():
        try:
            spec = json.loads(Path(source).read_text())
        except json.JSONDecodeError as error:
            print(f"{source}: not valid JSON ({error})", file=sys.stderr)
            return 2
    else:
        print(f"{source}: neither a preset nor a file", file=sys.stderr)
        return 2
    try:
        document = trace_spec(spec)
    except SpecError as error:
        for problem in error.problems:
            print(f"{problem['path']}: {problem['message']}", file=sys.stderr)
        return 1
    json.dump(pack(document), sys.stdout, separators=(",", ":"))
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
