"""Lab 1 of the tape chapter, on Tapescope's engine: a two-layer net learns y = x² with SGD (float64)."""
import numpy as np

from backend.tape import SGD, parameter, tensor


def train(steps=500, log_every=100, report=print):
    rng = np.random.default_rng(0)
    x = tensor(rng.uniform(-1, 1, (64, 1)))
    w1, b1, w2 = (parameter(rng.normal(0, 0.5, shape)) for shape in [(1, 64), (64,), (64, 1)])
    optimizer = SGD([w1, b1, w2], lr=0.1)
    target = x * x

    def predict():
        return ((x @ w1 + b1).relu()) @ w2

    losses = {}
    for step in range(steps):
        diff = predict() - target
        loss = (diff * diff).sum() * (1.0 / 64)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % log_every == 0:
            losses[step] = loss.item()
            report(f"step {step:3d}  loss {loss.item():9.6f}")
    max_error = float(np.abs(predict().data - x.data ** 2).max())
    report(f"final max |pred - x^2| = {max_error:.6f}")
    return losses, max_error


if __name__ == "__main__":
    train()
