"""The suite's own wiring: a module marked with an xdist_group runs on one worker under `make test`'s --dist
loadgroup, so its expensive module fixtures (a torch run on many ranks, a recorded run.json) are built once.

pytest 9.2 with pytest-xdist 3.8 silently broke this: xdist names the group by appending "@group" to each test's
node id, which pytest 9 no longer reads back, so every group was split across the workers and its fixtures built on
each (measured: test_distributed's 20 s fixture built twice in one run)."""
import pytest

pytestmark = pytest.mark.xdist_group("suite-self-check")


def test_a_grouped_test_carries_its_group_to_the_scheduler(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not under pytest-xdist's --dist loadgroup: nothing is scheduled by group")
    assert request.node.nodeid.endswith("@suite-self-check"), request.node.nodeid
