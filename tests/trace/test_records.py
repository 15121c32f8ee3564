"""What the document builder reads from a recorder is what backend/trace/records.py's RecordedRun declares: both
recorders satisfy it, and a document built through a proxy that hands out only its attributes is the document."""
import pytest

from backend.models import presets, validate_spec
from backend.trace import run
from backend.trace.recorder import Recorder
from backend.trace.records import RecordedRun

DECLARED = frozenset(RecordedRun.__annotations__)


class OnlyDeclared:
    """A recorder seen through RecordedRun: reading any other attribute fails the test, naming it."""

    def __init__(self, recorder):
        self._recorder = recorder

    def __getattr__(self, name):
        if name not in DECLARED:
            raise AssertionError(f"the document builder read recorder.{name}, which RecordedRun does not declare "
                                 f"(it declares {', '.join(sorted(DECLARED))})")
        return getattr(self._recorder, name)


def through_the_declaration(monkeypatch, module, *names):
    """Within `module`, the builder functions `names` are handed each recorder as OnlyDeclared."""
    for name in names:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda recorder, *args, _real=real, **kwargs:
                            _real(OnlyDeclared(recorder), *args, **kwargs))


def test_the_proxy_refuses_what_is_not_declared():
    with pytest.raises(AssertionError, match="recorder.phase"):
        OnlyDeclared(Recorder()).phase


def test_the_engines_recorder_is_a_recorded_run():
    assert isinstance(Recorder(), RecordedRun)


@pytest.mark.parametrize("preset", ["transformer-tiny", "mixed-precision", "grad-accumulation", "gradient-penalty"])
def test_the_engines_documents_read_only_the_declared_attributes(monkeypatch, preset):
    spec = validate_spec(presets.get(preset))
    plain, _ = run.record(spec)
    plain_peak = run.record_peak(spec)[:2]
    through_the_declaration(monkeypatch, run, "build_document", "peak_of")
    assert run.record(spec)[0] == plain
    assert run.record_peak(spec)[:2] == plain_peak
