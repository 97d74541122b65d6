"""What the study reasons about: a model config, a GPU, and a deployment (one type each).

``load_model("kimi-k3" | "kimi-k2" | "deepseek-v3")`` → :class:`ModelConfig` (the published
config, validated; MLA + MoE, with KDA linear attention and a latent MoE where the model has
them). ``load_gpu("mi355x")`` → :class:`GPU` (``data/hardware.yaml``, units in every field
name, each value's source in ``.provenance``). :class:`Deployment` is the one serving
layout used by memory plans, throughput tables and the roofline alike: a GPU, a count, TP ×
PP (the rest are replicas), decode context parallelism, and sglang's EP / DP-attention
switches.
"""

from __future__ import annotations

import re
import reprlib

import dataclasses
from dataclasses import dataclass, field

from . import data, limits
from .spelling import did_you_mean
from .model.config import ModelConfig, model_from_dict  # noqa: F401  (re-exported: specs.ModelConfig)

GB = 10**9
GiB = 2**30

#: model name → its config's name in :data:`k3lab.data.SCHEMAS` (``data/model/*_config.json``;
#: each file carries its ``_provenance``).
MODEL_FILES = {
    "kimi-k3": "kimi_k3_config",
    "kimi-k2": "kimi_k2_config",
    "deepseek-v3": "deepseek_v3_config",
}

def known_models() -> list[str]:
    return sorted(MODEL_FILES)


def load_model(name: str = "kimi-k3") -> ModelConfig:
    """A model config from ``data/model`` (:data:`MODEL_FILES`), read and checked by
    :mod:`k3lab.data` (one line naming the file and field for a broken one)."""
    key = str(name).lower()
    if key not in MODEL_FILES:
        raise ValueError(f"unknown model {name!r}{did_you_mean(name, known_models())}; known models: {', '.join(known_models())}")
    return _model(key)


@data.cached
def _model(key: str) -> ModelConfig:
    """Cached until :func:`k3lab.data.clear_cache` (the loader's copy is validated once, and
    checked against data/model/published.yaml)."""
    from .model import published  # counts the model's tensors: imports this module

    where = f"data/{data.SCHEMAS[MODEL_FILES[key]][0]}"
    cfg = model_from_dict(data.load(MODEL_FILES[key]), name=key, where=where)
    published.check(cfg, where)  # against the figures the model is published with
    return cfg


# --------------------------------------------------------------------------- GPUs


@dataclass(frozen=True)
class GPU:
    """One GPU's facts. Units are in the field names (GB = 1e9 B, TB/s = 1e12 B/s, TFLOPS
    dense, W board power, Gb/s = 1e9 bit/s). ``dense_fp4_tflops`` is 0 for a GPU without FP4.
    ``hbm_label_gb``: the vendor's label, in ``hbm_label_unit`` (GiB for every GPU here);
    ``usable_hbm_gb``: what the driver exposes, in 1e9 B (every fit uses this)."""

    key: str
    name: str
    vendor: str
    arch: str
    hbm_label_gb: float
    usable_hbm_gb: float
    hbm_bw_tb_s: float
    dense_fp4_tflops: float
    dense_fp8_tflops: float
    dense_bf16_tflops: float
    board_power_w: float
    scale_up: str
    scale_up_domain_gpus: int
    scale_up_gb_s_per_direction: float
    scale_out_gbit_s_per_gpu: float
    provenance: dict = field(default_factory=dict, compare=False, repr=False, hash=False)
    base: str = ""  # the data/hardware.yaml key (``key`` may be a label such as "b200@192GB")
    hbm_label_unit: str = "GiB"

    def __post_init__(self):
        if not self.base:
            object.__setattr__(self, "base", self.key)

    @property
    def usable_hbm_bytes(self) -> int:
        """Usable HBM in bytes (what an allocator can hand out)."""
        return int(round(self.usable_hbm_gb * GB))

    @property
    def usable_hbm_gib(self) -> float:
        """Usable HBM in GiB (2**30 bytes)."""
        return self.usable_hbm_gb * GB / GiB

    @property
    def short(self) -> str:
        """The name used in labels: ``MI355X``, ``B300``."""
        return self.key.upper()

    @property
    def peak_dense_flops(self) -> float:
        """The fastest dense peak it has (FP4 where it exists), FLOP/s."""
        return max(self.dense_fp4_tflops, self.dense_fp8_tflops, self.dense_bf16_tflops) * 1e12

    def with_hbm_gb(self, gb: float, label: str | None = None) -> "GPU":
        """A copy with a different usable capacity (e.g. the article's 192 GB B200)."""
        data.check_finite("HBM capacity (GB)", gb)
        return dataclasses.replace(self, key=label or f"{self.key}@{gb:g}GB", usable_hbm_gb=float(gb))


def known_gpus() -> list[str]:
    """Names accepted by :func:`load_gpu`."""
    return sorted(data.load("hardware").gpus)


def load_gpu(name: str) -> GPU:
    """Load one GPU from ``data/hardware.yaml``; ValueError listing the known GPUs otherwise."""
    hw = data.load("hardware")
    key = str(name).lower()
    if key not in hw.gpus:
        raise ValueError(f"unknown GPU {name!r}{did_you_mean(name, known_gpus())}; known GPUs: {', '.join(known_gpus())}")
    e = hw.gpus[key]
    cells = {k: getattr(e, k) for k in type(e).model_fields if k not in ("name", "vendor", "arch", "hbm_label_unit")}
    values = {k: (c.value if c.value is not None else 0.0) for k, c in cells.items()}
    prov = {k: hw.sources[c.source].title for k, c in cells.items()}
    return GPU(key=key, name=e.name, vendor=e.vendor, arch=e.arch, provenance=prov, hbm_label_unit=e.hbm_label_unit,
               **{k: (v if isinstance(v, str) else (int(v) if k == "scale_up_domain_gpus" else float(v)))
                  for k, v in values.items()})


def scale_out_link(name: str = "roce_b200_article") -> dict:
    """A scale-out link from ``data/hardware.yaml`` → {gbit_s, gbyte_s, source}."""
    hw = data.load("hardware")
    if name not in hw.scale_out:
        raise ValueError(f"unknown scale-out link {name!r}; known: {', '.join(sorted(hw.scale_out))}")
    link = hw.scale_out[name]
    return {"gbit_s": link.gbit_s.value, "gbyte_s": link.gbit_s.value / 8.0,
            "source": hw.sources[link.gbit_s.source].title}


# --------------------------------------------------------------------------- deployments


@dataclass(frozen=True)
class Deployment:
    """A serving layout: ``num_gpus`` GPUs of one kind as ``tp`` × ``pp`` ranks (any GPUs
    beyond tp·pp are replicas), ``dcp``-way decode context parallelism (KV sharded over
    ``dcp`` of the TP ranks), and sglang's switches ``ep`` (expert parallelism over the TP
    group with an all-to-all backend, ``--ep-size tp --moe-a2a-backend …``) and
    ``dp_attention`` (``--enable-dp-attention``: attention data-parallel across the TP group).

    ``gpus_per_node``: GPUs sharing one scale-up domain (default: the GPU's
    ``scale_up_domain_gpus``). ``hbm_gb``: a capacity override per GPU (e.g. the article's
    "192GB" B200). ``label``: the name shown in tables (from data where the article names
    it; built from the fields otherwise).
    """

    gpu: str
    num_gpus: int
    tp: int
    pp: int = 1
    dcp: int = 1
    ep: bool = False
    dp_attention: bool = False
    gpus_per_node: int | None = None
    hbm_gb: float | None = None
    id: str = ""
    label: str = ""

    def __post_init__(self):
        g = load_gpu(self.gpu)  # unknown GPU → ValueError naming the known ones
        for k in ("num_gpus", "tp", "pp", "dcp"):  # plain ints from here on (a DataFrame row gives np.int64)
            object.__setattr__(self, k, data.check_count(f"deployment {k}", getattr(self, k)))
        if self.gpus_per_node is None:
            object.__setattr__(self, "gpus_per_node", g.scale_up_domain_gpus)
        data.check_count("deployment gpus_per_node", self.gpus_per_node)
        for k in ("ep", "dp_attention"):
            if not isinstance(getattr(self, k), bool):
                raise ValueError(f"deployment {k} must be true or false, got {getattr(self, k)!r}")
        if self.num_gpus % (self.tp * self.pp):
            raise ValueError(f"deployment: num_gpus={self.num_gpus} is not a multiple of "
                             f"tp x pp = {self.tp * self.pp}")
        if self.tp % self.dcp:
            raise ValueError(f"deployment: dcp={self.dcp} must divide tp={self.tp}")
        if self.hbm_gb is not None:
            data.check_finite("deployment hbm_gb", self.hbm_gb)
        if not self.label:
            object.__setattr__(self, "label", self.default_label())
        if not self.id:
            object.__setattr__(self, "id", self.default_label().lower().replace("×", "x").replace(" ", "_"))

    def default_label(self) -> str:
        s = f"{self.num_gpus}×{load_gpu(self.gpu).short} TP{self.tp}"
        s += f"×PP{self.pp}" if self.pp > 1 else ""
        s += f"+DCP{self.dcp}" if self.dcp > 1 else ""
        s += " EP" if self.ep else ""
        s += " DP-attn" if self.dp_attention else ""
        s += f" ({self.hbm_gb:g} GB)" if self.hbm_gb is not None else ""
        return s

    @property
    def gpu_spec(self) -> GPU:
        """The GPU, with the capacity override applied."""
        g = load_gpu(self.gpu)
        return g if self.hbm_gb is None else g.with_hbm_gb(self.hbm_gb)

    @property
    def replicas(self) -> int:
        return self.num_gpus // (self.tp * self.pp)

    @property
    def num_nodes(self) -> int:
        """Scale-up domains (nodes) the deployment spans."""
        return -(-self.num_gpus // self.gpus_per_node)

    @property
    def tp_nodes(self) -> int:
        """Nodes one TP group spans."""
        return max(1, -(-self.tp // self.gpus_per_node))


_LAYOUT_HELP = ("'<N>x<gpu> tp<T> [pp<P>] [dcp<D>] [ep] [dp-attention] [hbm<GB>]', "
                "e.g. '16xb200 tp8 pp2' or '8xmi355x tp8'")


def parse_layout(text: str) -> Deployment:
    """A deployment from a short string (:data:`_LAYOUT_HELP`) — how notebooks, profiles and
    the CLIs name layouts; a table's label (:meth:`Deployment.default_label`, e.g.
    ``16×B200 TP8×PP2``, ``8×B300 TP8+DCP8``) reads back as the same deployment. ValueError
    naming the part it cannot read."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a layout must be a string like {_LAYOUT_HELP}, got {text!r}")
    norm = text.lower().replace("×pp", " pp").replace("×", "x").replace("+", " ")
    norm = re.sub(r"\bdp-attn\b", "dp-attention", re.sub(r"\((\d+(?:\.\d+)?) gb\)", r"hbm\1", norm))
    head, *rest = norm.split()
    n, sep, gpu = head.partition("x")
    if not sep or not n.isdigit():
        raise ValueError(f"layout {reprlib.repr(text)}: cannot read '<N>x<gpu>' from {reprlib.repr(head)}; "
                         f"expected {_LAYOUT_HELP}")
    # the same caps as --gpus / --tp / --hbm-gb: a layout string is no way around them
    n = limits.parse("gpus", n, f"layout {reprlib.repr(text)}: the GPU count")
    kw: dict = {}
    for part in rest:
        for key, field_, kind in (("tp", "tp", "parallel"), ("pp", "pp", "parallel"), ("dcp", "dcp", "parallel"),
                                  ("hbm", "hbm_gb", "hbm_gb")):
            if part.startswith(key) and part[len(key):].replace(".", "", 1).isdigit():
                if field_ in kw:  # the last would win silently
                    raise ValueError(f"layout {reprlib.repr(text)}: {key} given twice")
                kw[field_] = limits.parse(kind, part[len(key):], f"layout {reprlib.repr(text)}: {key}")
                break
        else:
            if part in ("ep", "dp-attention"):
                if part.replace("-", "_") in kw:
                    raise ValueError(f"layout {reprlib.repr(text)}: {part} given twice")
                kw[part.replace("-", "_")] = True
            else:
                raise ValueError(f"layout {reprlib.repr(text)}: unknown part {reprlib.repr(part)}; "
                                 f"expected {_LAYOUT_HELP}")
    if "tp" not in kw:
        raise ValueError(f"layout {reprlib.repr(text)}: no tp<T>; expected {_LAYOUT_HELP}")
    return Deployment(gpu, n, **kw)
