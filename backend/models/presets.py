"""Preset models, each a spec: from the seed's 5-op tape to a two-block transformer."""
import copy

PRESETS = {
    "seed-tape": {
        "description": "The tape chapter's 5-op tape: L = sum(relu(x@W1 + b) @ W2), x [64,1], W1 [1,64], b [64], W2 [64,1].",
        "spec": {"name": "seed-tape", "seed": 0, "dtype": "float32", "batch": 64,
                 "input": {"kind": "features", "size": 1},
                 "layers": [{"type": "linear", "out": 64, "bias": True}, {"type": "relu"},
                            {"type": "linear", "out": 1, "bias": False}],
                 "loss": {"type": "sum"}, "optimizer": {"type": "none"}},
    },
    "lab1-mlp": {
        "description": "Lab 1: a two-layer ReLU net learning y = x² with MSE and SGD (lr 0.1), float64, Lab 1's init.",
        "spec": {"name": "lab1-mlp", "seed": 0, "dtype": "float64", "batch": 64, "init_std": 0.5,
                 "input": {"kind": "features", "size": 1},
                 "layers": [{"type": "linear", "out": 64, "bias": True}, {"type": "relu"},
                            {"type": "linear", "out": 1, "bias": False}],
                 "loss": {"type": "mse", "target": "square"}, "optimizer": {"type": "sgd", "lr": 0.1}},
    },
    "residual-unit": {
        "description": "One residual unit: the hidden state is used twice, so its gradient is the skip's share plus the branch's.",
        "spec": {"name": "residual-unit", "seed": 0, "dtype": "float32", "batch": 8,
                 "input": {"kind": "features", "size": 4},
                 "layers": [{"type": "linear", "out": 8, "bias": True, "name": "x"},
                            {"type": "residual", "layers": [{"type": "linear", "out": 8}, {"type": "tanh"},
                                                            {"type": "linear", "out": 8}]}],
                 "loss": {"type": "mse", "target": "random"}, "optimizer": {"type": "none"}},
    },
    "deep-mlp": {
        "description": "16 linear+tanh layers of width 64 at batch 256: a long chain whose activations outweigh its weights, to checkpoint.",
        "spec": {"name": "deep-mlp", "seed": 0, "dtype": "float32", "batch": 256,
                 "input": {"kind": "features", "size": 16},
                 "layers": [{"type": "repeat", "times": 16,
                             "layers": [{"type": "linear", "out": 64}, {"type": "tanh"}]},
                            {"type": "linear", "out": 1}],
                 "loss": {"type": "mse", "target": "random"}, "optimizer": {"type": "sgd", "lr": 0.01}},
    },
    "gradient-penalty": {
        "description": "WGAN-GP's penalty λ(‖∂L/∂x‖ − 1)² on a tanh/relu MLP: the first backward is recorded "
                       "(create_graph), so its intermediates stay saved for backward-2 — about twice the peak.",
        "spec": {"name": "gradient-penalty", "seed": 0, "dtype": "float32", "batch": 64,
                 "input": {"kind": "features", "size": 16},
                 "layers": [{"type": "linear", "out": 64}, {"type": "tanh"},
                            {"type": "linear", "out": 64}, {"type": "relu"},
                            {"type": "linear", "out": 1}],
                 "loss": {"type": "mse", "target": "random", "gradient_penalty": {"weight": 10.0}},
                 "optimizer": {"type": "sgd", "lr": 0.01}},
    },
    "mixed-precision": {
        "description": "8 linear+tanh layers (width 64, small init) in float16 under autocast with a dynamic loss "
                       "scale: float32 master weights, float16 copies saved for backward, and gradients small enough "
                       "to underflow without the scale.",
        "spec": {"name": "mixed-precision", "seed": 0, "dtype": "float32", "batch": 64, "init_std": 0.03,
                 "input": {"kind": "features", "size": 32},
                 "layers": [{"type": "repeat", "times": 8,
                             "layers": [{"type": "linear", "out": 64}, {"type": "tanh"}]},
                            {"type": "linear", "out": 1}],
                 "loss": {"type": "mse", "target": "random"}, "optimizer": {"type": "adam", "lr": 0.001},
                 "precision": {"compute": "float16", "loss_scale": "dynamic", "growth_interval": 2000}},
    },
    "transformer-tiny": {
        "description": "Embedding, 2 pre-LN transformer blocks (d=32, 4 heads, causal), seq 16, batch 2, vocab 50, dropout 0.1.",
        "spec": {"name": "transformer-tiny", "seed": 0, "dtype": "float32", "batch": 2,
                 "input": {"kind": "tokens", "vocab": 50, "seq": 16},
                 "layers": [{"type": "embedding", "dim": 32},
                            {"type": "transformer_block", "heads": 4, "mlp_ratio": 4, "dropout": 0.1,
                             "impl": "naive", "causal": True},
                            {"type": "transformer_block", "heads": 4, "mlp_ratio": 4, "dropout": 0.1,
                             "impl": "naive", "causal": True},
                            {"type": "layernorm"}, {"type": "linear", "out": 50}],
                 "loss": {"type": "cross_entropy"}, "optimizer": {"type": "adam", "lr": 0.001}},
    },
    "version-error": {
        "description": "Lab 4's version error: relu_ overwrites the output tanh saved for its backward, so backward stops at TanhBackward with torch's RuntimeError. Fix: relu out of place (untick inplace), or put the in-place op before the op that saves.",
        "spec": {"name": "version-error", "seed": 0, "dtype": "float32", "batch": 16,
                 "input": {"kind": "features", "size": 4},
                 "layers": [{"type": "linear", "out": 16}, {"type": "tanh"}, {"type": "relu", "inplace": True},
                            {"type": "linear", "out": 1}],
                 "loss": {"type": "mse", "target": "random"}, "optimizer": {"type": "sgd", "lr": 0.1}},
    },
    "frozen-backbone": {
        "description": "Fine-tuning a head: two frozen linear+tanh layers under a trainable one, with Adam. Nothing before the first parameter that needs grad is recorded or saved, and the frozen weights get no grad or Adam state.",
        "spec": {"name": "frozen-backbone", "seed": 0, "dtype": "float32", "batch": 128,
                 "input": {"kind": "features", "size": 32},
                 "layers": [{"type": "linear", "out": 128, "frozen": True}, {"type": "tanh"},
                            {"type": "linear", "out": 128, "frozen": True}, {"type": "tanh"},
                            {"type": "linear", "out": 10}],
                 "loss": {"type": "cross_entropy"}, "optimizer": {"type": "adam", "lr": 0.001}},
    },
}


PRESETS["grad-accumulation"] = {
    "description": "deep-mlp with its batch of 256 as 4 micro-batches of 64 (accumulate 4): four forward/backward "
                   "humps, .grad summing across them, one step; deep-mlp's gradients at about half its peak.",
    "spec": {**PRESETS["deep-mlp"]["spec"], "name": "grad-accumulation", "accumulate": 4},
}


def get(preset_id):
    """A fresh copy of a preset's spec; KeyError for an unknown id."""
    return copy.deepcopy(PRESETS[preset_id]["spec"])


def listing():
    return [{"id": key, "name": key, "description": value["description"], "spec": get(key)}
            for key, value in PRESETS.items()]
