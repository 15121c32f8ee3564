"""A two-layer ReLU MLP regressing random targets with MSE and SGD: the smallest real model to import."""
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    x, y = torch.randn(32, 16), torch.randn(32, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, (x, y), nn.functional.mse_loss, optimizer
