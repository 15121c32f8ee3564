"""A spec's layers replayed in torch op for op on our parameters (x @ W + b, relu / relu_, tanh, detach, no_grad,
residual, repeat), with our parameter paths: the torch side of the tests that compare a traced model with it."""


def torch_layers(torch, layers, h, params, base="layers"):
    """`h` through `layers` (normalized spec layers), `params` mapping our parameter names to torch tensors."""
    for i, layer in enumerate(layers):
        path = f"{base}[{i}]"
        kind = layer["type"]
        if kind == "linear":
            h = h @ params[f"{path}.weight"]
            if layer["bias"]:
                h = h + params[f"{path}.bias"]
        elif kind == "tanh":
            h = torch.tanh(h)
        elif kind == "relu":
            h = h.relu_() if layer.get("inplace") else torch.relu(h)
        elif kind == "detach":
            h = h.detach()
        elif kind == "no_grad":
            with torch.no_grad():
                h = torch_layers(torch, layer["layers"], h, params, f"{path}.layers")
        elif kind == "residual":
            h = h + torch_layers(torch, layer["layers"], h, params, f"{path}.layers")
        elif kind == "repeat":
            for j in range(layer["times"]):
                h = torch_layers(torch, layer["layers"], h, params, f"{path}[{j}]")
        else:
            raise AssertionError(f"no torch replay for {kind}")
    return h
