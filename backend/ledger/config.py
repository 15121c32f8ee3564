"""The ledger's input: a transformer config, parsed from strings or JSON values, with caps and per-field errors.

Every field has a default (GPT-2 small: 12 layers, hidden 768, 12 heads, MLP 4×, vocab 50,257, tied embeddings,
learned positions, context 1,024; at batch 8, fp32, naive attention, dropout on, Adam; on one GPU) and every size
has a cap, so
a query can never ask for an unbounded amount of arithmetic or a number a browser cannot hold. The fields are
backend.models.fields' Fields, checked and worded as a spec's are; a query's strings are read with int()/float()
only after matching a strict pattern: nothing a user sends is evaluated.
"""
import math
import re
from dataclasses import asdict, dataclass

from backend.models.caps import cap
from backend.models.fields import Field
from backend.problems import Problems, unknown_field

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
# The dtype names the engine's trace reports (numpy's), so ledger rows can be matched against it.
DTYPE_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ITEM_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "bool": 1, "int64": 8}

GIB = 1 << 30
MIB = 1 << 20


class LedgerConfigError(ValueError):
    """A config that failed validation; `problems` holds a {"path", "message"} per bad field (backend.problems)."""

    def __init__(self, problems):
        self.problems = Problems.of(problems)
        super().__init__("; ".join(f"{p['path']}: {p['message']}" for p in self.problems))


@dataclass(frozen=True)
class LedgerConfig:
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    mlp_ratio: float = 4.0
    vocab: int = 50257
    batch: int = 8
    seq: int = 1024
    dtype: str = "fp32"
    attention: str = "naive"
    dropout: bool = True
    tied_embeddings: bool = True
    position_embeddings: bool = True
    optimizer: str = "adam"
    mixed_precision: bool = False
    device_gib: float = 24.0
    # the Llama family's shape (defaults: GPT's)
    mlp: str = "gelu"
    norm: str = "layernorm"
    kv_heads: int = 0             # 0: as many as heads (no grouped-query attention)
    bias: bool = True
    rotary: bool = False
    embedding_dropout: bool = False
    masks: str = "bool"
    # how the step is spread over GPUs (parallel.py) and the cluster the fits table searches (fits.py)
    dp: int = 1
    zero: int = 0
    tp: int = 1
    sp: bool = False
    loss_parallel: bool = True
    pp: int = 1
    micro_batches: int = 1
    vpp: int = 1
    recompute: str = "none"
    gpus: int = 8

    @property
    def tokens(self):
        return self.batch * self.seq

    @property
    def head_dim(self):
        return self.hidden // self.heads

    @property
    def kv_groups(self):
        """Key/value heads: kv_heads, or every head when it is 0."""
        return self.kv_heads or self.heads

    @property
    def mask_dtype(self):
        """A dropout mask's dtype: bool (CUDA's fused dropout, this engine) or the activations' (torch on CPU)."""
        return "bool" if self.masks == "bool" else self.dtype_name

    @property
    def mlp_hidden(self):
        return round(self.mlp_ratio * self.hidden)

    @property
    def dtype_name(self):
        return DTYPE_NAMES[self.dtype]

    @property
    def device_bytes(self):
        return int(self.device_gib * GIB)

    def to_dict(self):
        return asdict(self)


# Named model shapes for the ledger's Model menu: GPT-2's four published sizes (learned positions, tied
# embeddings, vocab 50,257, context 1,024), the reference stack the published per-layer figure is for (12 × 2048,
# 16 heads, no position table; korthikanti.py) and Llama 2 7B (32 × 4,096, SwiGLU MLP of 11,008, RMSNorm, rotary
# positions, untied embeddings, vocab 32,000, context 4,096, no biases, no dropout). Picking one sets only these
# fields, over PRESET_COMMON.
MODEL_PRESETS = {
    "llama2-7b": {"title": "Llama 2 7B", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 0,
                  "mlp_ratio": 2.6875, "vocab": 32000, "seq": 4096, "tied_embeddings": False,
                  "position_embeddings": False, "rotary": True, "mlp": "swiglu", "norm": "rmsnorm", "bias": False,
                  "dropout": False},
    "reference": {"title": "reference GPT, 12 × 2048", "layers": 12, "hidden": 2048, "heads": 16,
                  "position_embeddings": False},
    "gpt2-small": {"title": "GPT-2 small", "layers": 12, "hidden": 768, "heads": 12, "position_embeddings": True},
    "gpt2-medium": {"title": "GPT-2 medium", "layers": 24, "hidden": 1024, "heads": 16, "position_embeddings": True},
    "gpt2-large": {"title": "GPT-2 large", "layers": 36, "hidden": 1280, "heads": 20, "position_embeddings": True},
    "gpt2-xl": {"title": "GPT-2 XL", "layers": 48, "hidden": 1600, "heads": 25, "position_embeddings": True},
}
PRESET_COMMON = {"mlp_ratio": 4, "vocab": 50257, "tied_embeddings": True, "seq": 1024, "kv_heads": 0, "mlp": "gelu",
                 "norm": "layernorm", "bias": True, "rotary": False, "dropout": True}


def _field(name, type, help, **bounds):
    """A ledger field (backend.models.fields.Field), its default LedgerConfig's."""
    return Field(name, type, help, default=getattr(LedgerConfig, name), **bounds)


FIELDS = {field.name: field for field in (
    _field("layers", "integer", low=1, cap="ledger_layers", help="transformer blocks"),
    _field("hidden", "integer", low=1, cap="ledger_hidden", help="model width h"),
    _field("heads", "integer", low=1, cap="ledger_heads", help="attention heads a; hidden must be a multiple of it"),
    _field("mlp_ratio", "number", low=0.25, cap="ledger_mlp_ratio", help="MLP width as a multiple of hidden"),
    _field("vocab", "integer", low=1, cap="ledger_vocab", help="vocabulary size"),
    _field("batch", "integer", low=1, cap="ledger_batch", help="micro-batch b (sequences)"),
    _field("seq", "integer", low=1, cap="ledger_seq", help="sequence length s"),
    _field("dtype", "choice", options=tuple(DTYPE_BYTES), help="activation and weight dtype"),
    _field("attention", "choice", options=("naive", "flash"), help="naive keeps the seq×seq matrices"),
    _field("dropout", "boolean", help="dropout after attention probabilities, projection and MLP"),
    _field("tied_embeddings", "boolean", help="the output head reuses the token embedding"),
    _field("position_embeddings", "boolean", help="learned position embeddings (seq × hidden parameters)"),
    _field("optimizer", "choice", options=("sgd", "adam", "adam8bit"), help="optimizer state kept per parameter"),
    _field("mixed_precision", "boolean", help="16-bit compute with an fp32 master copy of the weights"),
    _field("device_gib", "number", low=0.001, cap="ledger_device_gib",
           help="device memory in GiB for the max-batch search"),
    _field("mlp", "choice", options=("gelu", "swiglu"),
           help="gelu: fc1, GELU, fc2 (GPT); swiglu: down(SiLU(gate(x)) · up(x)) (Llama)"),
    _field("norm", "choice", options=("layernorm", "rmsnorm"), help="LayerNorm (weight, bias) or RMSNorm (weight)"),
    _field("kv_heads", "integer", low=0, cap="ledger_heads",
           help="key/value heads (grouped-query attention); 0: as many as heads"),
    _field("bias", "boolean", help="the linear layers have biases (GPT-2 yes, Llama no)"),
    _field("rotary", "boolean", help="rotary positions (Llama): no parameters, one cos and one sin table saved"),
    _field("embedding_dropout", "boolean", help="dropout after the embeddings (nanoGPT's drop)"),
    _field("masks", "choice", options=("bool", "dtype"),
           help="a dropout mask's dtype: bool (CUDA's fused dropout) or the activations' (torch on CPU)"),
    _field("dp", "integer", low=1, cap="ledger_gpus", help="data-parallel ranks"),
    _field("zero", "integer", low=0, high=3,
           help="ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also parameters"),
    _field("tp", "integer", low=1, cap="ledger_model_parallel",
           help="tensor-parallel ranks (Megatron's column and row split)"),
    _field("sp", "boolean",
           help="sequence parallel: the residual stream's saves split over the tensor-parallel ranks"),
    _field("loss_parallel", "boolean",
           help="the loss over vocabulary-split logits (Megatron's, torch's loss_parallel); no: the logits "
                "gathered whole on every tensor-parallel rank first"),
    _field("pp", "integer", low=1, cap="ledger_model_parallel", help="pipeline stages (1F1B)"),
    _field("micro_batches", "integer", low=1, cap="ledger_batch", help="micro-batches per step through the pipeline"),
    _field("vpp", "integer", low=1, cap="ledger_virtual_stages",
           help="virtual stages per GPU (the interleaved 1F1B schedule)"),
    _field("recompute", "choice", options=("none", "full"),
           help="full: keep only each block's input and recompute the block in backward"),
    _field("gpus", "integer", low=1, cap="ledger_gpus", help="GPUs in the cluster the fits table searches"),
)}

# A query's strings, read by strict patterns (never evaluated): "-1" is read to be said out of range, "1e3" is not
# a number here.
_INT = re.compile(r"^\s*-?\d{1,12}\s*$", re.ASCII)
_FLOAT = re.compile(r"^\s*-?(\d{1,12}(\.\d{1,12})?|\.\d{1,12})\s*$", re.ASCII)
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _from_query(field, raw):
    """The JSON value a query string spells for `field` ("24" → 24, "off" → False, "BF16" → "bf16"); anything
    else is passed on as sent, for the field's check (backend.models.fields) to say what is wrong with it."""
    if not isinstance(raw, str):
        whole = field.type == "integer" and isinstance(raw, float) and raw.is_integer()
        return int(raw) if whole else raw
    word = raw.strip().lower()
    if field.type == "integer" and _INT.match(raw):
        return int(raw)
    if field.type == "number" and _FLOAT.match(raw):
        return float(raw)
    if field.type == "boolean" and word in _TRUE | _FALSE:
        return word in _TRUE
    return word if field.type == "choice" else raw


def parse_config(values):
    """A LedgerConfig from a mapping of field -> value (strings from a query, or JSON values); defaults fill gaps.

    Raises LedgerConfigError listing every problem at once: unknown fields, unparsable or out-of-range values,
    and combinations that make no model (heads not dividing hidden, mixed precision at fp32, too many tokens).
    A combination is only judged when every field it involves parsed.
    """
    problems = Problems()
    parsed, bad = {}, set()
    for name, raw in values.items():
        field = FIELDS.get(name)
        if field is None:
            unknown_field(problems, name, FIELDS)
            continue
        before = problems.count
        parsed[name] = field.check(_from_query(field, raw), name, problems)
        if problems.count > before:
            bad.add(name)
    config = LedgerConfig(**parsed)
    for involved, path, check in COMBINATIONS:
        message = None if bad & set(involved) else check(config)
        if message:
            problems.add(path, message)
    if problems:
        raise LedgerConfigError(problems)
    return config


def _heads_divide_hidden(config):
    if config.hidden % config.heads:
        return f"must divide hidden ({config.hidden:,}) evenly; {config.heads} heads leave a remainder"


def _whole_mlp(config):
    product = config.mlp_ratio * config.hidden
    if config.mlp_hidden < 1 or not math.isclose(product, config.mlp_hidden, abs_tol=1e-6):
        return f"times hidden must be a whole number; {config.mlp_ratio:g} × {config.hidden:,} is not"


def _mixed_needs_16_bits(config):
    if config.mixed_precision and config.dtype == "fp32":
        return "needs a 16-bit dtype (fp16 or bf16): at fp32 there is nothing to mix"


def _token_cap(config):
    if config.tokens > cap("ledger_tokens"):
        return f"times seq must be at most {cap('ledger_tokens'):,} tokens; {config.batch:,} × {config.seq:,} = {config.tokens:,}"


def _kv_heads_divide_heads(config):
    if config.kv_heads and config.heads % config.kv_heads:
        return f"must divide heads ({config.heads}) evenly: each key/value head serves a group of query heads"


def _tp_divides(config):
    if config.tp == 1:
        return None
    split = {"heads": config.heads, "kv heads": config.kv_groups, "the MLP width": config.mlp_hidden}
    uneven = [f"{name} ({count:,})" for name, count in split.items() if count % config.tp]
    if uneven:
        return f"must divide {' and '.join(uneven)} evenly; {config.tp} tensor-parallel ranks leave a remainder"


def _stages_divide_layers(config):
    chunks = config.pp * config.vpp
    if config.layers % chunks:
        return (f"must divide evenly into pp × vpp = {chunks} stages' chunks; {config.layers} layers leave "
                f"{config.layers % chunks}")


def _interleaving_needs_stages(config):
    if config.vpp > 1 and config.pp == 1:
        return "needs pp > 1: virtual stages interleave a pipeline"
    if config.vpp > 1 and config.micro_batches % config.pp:
        return (f"needs micro batches a multiple of pp ({config.pp}), as the interleaved schedule does; "
                f"got {config.micro_batches}")


# (fields involved, the path a problem is reported at, check returning a message or None)
COMBINATIONS = (
    (("hidden", "heads"), "heads", _heads_divide_hidden),
    (("heads", "kv_heads"), "kv_heads", _kv_heads_divide_heads),
    (("tp", "heads", "kv_heads", "hidden", "mlp_ratio"), "tp", _tp_divides),
    (("layers", "pp", "vpp"), "layers", _stages_divide_layers),
    (("vpp", "pp", "micro_batches"), "vpp", _interleaving_needs_stages),
    (("hidden", "mlp_ratio"), "mlp_ratio", _whole_mlp),
    (("dtype", "mixed_precision"), "mixed_precision", _mixed_needs_16_bits),
    (("batch", "seq"), "batch", _token_cap),
)
