"""``python -m k3lab compare`` and :func:`k3lab.compare.compare_rows`.

Expected values come from outside the code under test:

- DeepSeek-V3: 671B parameters in the target model, 685B with the 14B MTP module, and an
  FP8 checkpoint of 688.6 GB (the deepseek-ai/DeepSeek-V3 model card and its safetensors
  listing); sglang's DeepSeek-V3 usage page: "Full precision FP8 (recommended) — 8 x H200 /
  8 x B200 / 8 x MI300X / 2 x 8 x H100". sglang does not load the MTP module into the target
  model, so the weights a rank holds are about 671/685 of the checkpoint over TP.
- Kimi K3: a 1.56 TB checkpoint (the article); over 8 GPUs at least 1.56e12 / 8 = 195 GB
  per GPU, more than a B200's 192.27 GB usable (nvidia-smi 183,359 MiB) and less than a
  B300's 288.4 GB (275,040 MiB) or an MI355X's 309.2 GB.
- Prices: the article's B200 at $4.25/GPU-hour, so 8 × 4.25 = $34.00/hour for a node.
"""

import json
import math
import subprocess
import sys

import pytest

from k3lab import compare, memory
from k3lab.specs import GB, GiB, load_model

DS_CHECKPOINT_GB = 688.6          # FP8 weights incl. MTP (model card / safetensors listing)
DS_TARGET_FRACTION = 671 / 685    # target model without the 14B MTP module


@pytest.fixture(scope="module")
def ds():
    return compare.compare_rows(load_model("deepseek-v3"), include_all=True)


@pytest.fixture(scope="module")
def k3():
    return compare.compare_rows(load_model("kimi-k3"), include_all=True)


def row(df, gpu, n, tp, pp=1):
    sel = df[(df.gpu == gpu) & (df.num_gpus == n) & (df.tp == tp) & (df.pp == pp)]
    assert len(sel) == 1, (gpu, n, tp, pp)
    return sel.iloc[0]


def test_deepseek_v3_weights_per_gpu_at_tp8_follow_from_the_published_checkpoint(ds):
    lo = DS_CHECKPOINT_GB * DS_TARGET_FRACTION / 8 * 0.985   # a pure 1/8 shard of the target model
    hi = DS_CHECKPOINT_GB / 8 * 1.05                          # plus replicated norms/router, never more
    for gpu in ("h100", "h200", "b200", "mi300x"):
        w_gb = row(ds, gpu, 8, 8).weights_gib_per_gpu * GiB / GB
        assert lo < w_gb < hi, (gpu, w_gb, lo, hi)


@pytest.mark.parametrize("gpu", ["h200", "b200", "mi300x"])
def test_deepseek_v3_fits_one_8_gpu_node_per_sglang_docs(ds, gpu):
    r = row(ds, gpu, 8, 8)
    assert r.weights_fit and r.fits and r.full_context_requests >= 1


def test_deepseek_v3_needs_two_h100_nodes_per_sglang_docs(ds):
    assert not row(ds, "h100", 8, 8).weights_fit
    assert "weights do not fit" in row(ds, "h100", 8, 8).reason
    assert row(ds, "h100", 16, 16).fits and row(ds, "h100", 16, 8, 2).fits


def test_deepseek_v3_default_listing_holds_the_documented_nodes_only():
    df = compare.compare_rows(load_model("deepseek-v3"))
    eight = set(df[(df.num_gpus == 8) & (df.tp == 8)].gpu)
    assert {"h200", "b200", "mi300x"} <= eight and "h100" not in eight
    assert df.fits.all()
    assert df.attrs["context_tokens"] == 163840  # the published config's max_position_embeddings


@pytest.mark.parametrize("gpu,fits", [("b200", False), ("mi355x", True), ("b300", True)])
def test_kimi_k3_weights_on_one_8_gpu_node(k3, gpu, fits):
    r = row(k3, gpu, 8, 8)
    assert bool(r.weights_fit) is fits
    assert r.weights_gib_per_gpu * GiB > 1.56e12 / 8   # at least a pure 1/8 of the checkpoint


def test_kimi_k3_aiter_k3_opt_gives_the_articles_191_gib_and_leaves_nvidia_alone(k3):
    opt = compare.compare_rows(load_model("kimi-k3"), variants=("aiter-k3-opt",), include_all=True)
    # the article: "at TP8 the model needs about 191 GiB of weights per GPU" (no AITER expert padding)
    assert row(opt, "mi355x", 8, 8).weights_gib_per_gpu == pytest.approx(191, rel=0.01)
    assert row(opt, "mi355x", 8, 8).weights_gib_per_gpu < row(k3, "mi355x", 8, 8).weights_gib_per_gpu
    assert row(opt, "b300", 8, 8).weights_gib_per_gpu == row(k3, "b300", 8, 8).weights_gib_per_gpu


def test_rows_are_smallest_first(ds):
    n = list(ds.num_gpus)
    assert n == sorted(n)
    for _, g in ds[ds.shardable].groupby("num_gpus"):
        w = list(g.weights_gib_per_gpu)
        assert w == sorted(w)


def test_price_per_hour_and_cost_at_bound_by_hand():
    df = compare.compare_rows(load_model("deepseek-v3"), tiers=["article"], overrides={"mi300x": 1.5})
    b200 = row(df, "b200", 8, 8)
    assert b200["usd_per_hour[article]"] == pytest.approx(8 * 4.25)
    assert math.isnan(b200["usd_per_hour[override]"])
    assert row(df, "mi300x", 8, 8)["usd_per_hour[override]"] == pytest.approx(8 * 1.5)
    # $/M tokens = $/hour * 1e6 / (tok/s * 3600)
    assert b200["usd_per_million_tokens_at_bound[article]"] == pytest.approx(
        34.0 * 1e6 / (b200.decode_bound_tok_s * 3600))
    assert 1 <= b200.bound_concurrency <= 64


def test_a_layout_the_model_cannot_shard_is_skipped_unless_all(monkeypatch):
    monkeypatch.setattr(compare, "candidate_layouts", lambda gpu: [(8, 8, 1), (24, 24, 1)])
    cfg = load_model("deepseek-v3")  # 128 heads: TP24 does not divide them
    assert 24 not in set(compare.compare_rows(cfg, tiers=["article"]).tp)
    full = compare.compare_rows(cfg, tiers=["article"], include_all=True)
    bad = full[full.tp == 24]
    assert len(bad) and not bad.shardable.any() and bad.reason.str.contains("heads").all()


def test_bad_inputs_raise_one_line_value_errors():
    cfg = load_model("deepseek-v3")
    for kw in ({"context_tokens": 0}, {"context_tokens": 10**9}, {"kv_dtype": "fp4"}, {"mem_fraction": 1.5},
               {"variants": ("nope",)}, {"variants": ("aiter-k3-opt", "aiter-moe-pad")}, {"tiers": ["nope"]},
               {"overrides": {"tpu": 1.0}}, {"overrides": {"h100": -1.0}}, {"concurrency": 0}):
        with pytest.raises(ValueError) as e:
            compare.compare_rows(cfg, **kw)
        assert "\n" not in str(e.value), kw


def _cli(capsys, *argv):
    try:
        rc = compare.cli_main(list(argv))
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv", [
    ["--model", "nope"], ["--usd-per-gpu-hour", "tpu=3"], ["--usd-per-gpu-hour", "h100=-2"],
    ["--usd-per-gpu-hour", "h100=abc"], ["--usd-per-gpu-hour", "h100"], ["--price-tier", "nope"],
    ["--context", "0"], ["--kv-dtype", "fp4"], ["--bogus"], ["--mem-fraction", "nan"],
])
def test_cli_bad_input_exits_2_with_one_line(capsys, argv):
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("k3lab compare: error: "), err


def test_cli_json_rows(capsys):
    rc, out, _ = _cli(capsys, "--model", "deepseek-v3", "--json", "--price-tier", "article")
    rows = json.loads(out)
    assert rc == 0 and rows
    for r in rows:
        assert {"gpu", "num_gpus", "tp", "pp", "weights_fit", "max_kv_tokens", "usd_per_hour"} <= set(r)
        assert isinstance(r["usd_per_hour"], dict)
    b200 = next(r for r in rows if r["gpu"] == "b200" and r["num_gpus"] == 8)
    assert b200["usd_per_hour"] == {"article": pytest.approx(34.0)}


def test_cli_csv(capsys):
    rc, out, _ = _cli(capsys, "--model", "deepseek-v3", "--csv", "--price-tier", "article")
    header = out.splitlines()[0].split(",")
    assert rc == 0 and {"gpu", "num_gpus", "tp", "pp", "usd_per_hour[article]"} <= set(header)


def test_default_table_through_python_m_labels_the_bound_a_model():
    p = subprocess.run([sys.executable, "-m", "k3lab", "compare"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[0]
    assert "kimi-k3" in head and "1,048,576" in head and "bf16" in head
    assert "MODEL bound" in p.stdout and "not a measurement" in p.stdout


# --------------------------------------------------------------------------- fits with (the state pool)


def test_fits_with_says_defaults_a_setting_or_why_not(k3):
    """8×B300 TP8 holds 990,592 tokens with sglang's default state pool, short of 1,048,576:
    the row names the state-pool setting under which one request fits; 8×MI355X (ROCm default
    padding, 227k tokens) has none; 8×B200's weights do not load; 16×B300 TP8×PP2 fits as is."""
    b300 = row(k3, "b300", 8, 8)
    assert not b300.fits and b300.fits_with.startswith("--mamba-full-memory-ratio ")
    r = float(b300.fits_with.split()[-1])
    assert 0 < r < 0.9   # less than the default share goes to state, so the KV pool grows
    assert memory.plan(load_model("kimi-k3"), "b300", 8, 8, mamba_full_memory_ratio=r).fits
    assert row(k3, "mi355x", 8, 8).fits_with == "no setting"
    assert row(k3, "b200", 8, 8).fits_with == "weights do not fit"
    assert row(k3, "b300", 16, 8, 2).fits_with == "defaults"


def test_default_listing_adds_the_layouts_that_fit_only_with_a_setting():
    df = compare.compare_rows(load_model("kimi-k3"), tiers=["article"])
    only = df[~df.fits]
    assert len(only) and only.fits_with.str.startswith("--").all()
    assert (df[df.fits].fits_with == "defaults").all()
    assert "b300" in set(only[(only.num_gpus == 8)].gpu)
    text = compare.format_table(df)
    assert f"; {len(only)} more only with the state-pool setting in 'fits with'" in text.splitlines()[1]
    assert "fits with" in text.splitlines()[4]
    ds = compare.compare_rows(load_model("deepseek-v3"), tiers=["article"])
    assert (ds.fits_with == "defaults").all()   # no state pool: every listed row fits as is


def test_fit_matrix_cell_names_the_setting(k3):
    html = compare.fit_matrix_html(k3)
    b300 = row(k3, "b300", 8, 8)
    assert f"fits only with <code>{b300.fits_with}</code>" in html
    assert html.count("fits only with <code>") == int((~k3.fits & k3.fits_with.str.startswith("--")).sum())
