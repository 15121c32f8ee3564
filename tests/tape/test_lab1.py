"""The tape chapter's Lab 1 on our engine reproduces its printed losses digit for digit."""
from examples.lab1 import train


def test_lab1_reproduces_the_reference_run():
    lines = []
    losses, max_error = train(report=lines.append)
    assert lines == [
        "step   0  loss  2.364331",
        "step 100  loss  0.000659",
        "step 200  loss  0.000406",
        "step 300  loss  0.000301",
        "step 400  loss  0.000238",
        "final max |pred - x^2| = 0.041189",
    ]
