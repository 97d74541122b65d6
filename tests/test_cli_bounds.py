"""Numbers and names at the command line, as a hostile user typed them (attack on main, cases
7-13): a draft block of ten million, latencies past k3lab's own cap, a layout part given twice,
a refused value shown rounded onto its limit, a pipeline stage without a KV pool, a price of
1e308 in data/prices.yaml, a missing claims file, the domain of queued requests."""

import json
import re

import pytest

from k3lab import cli, data, limits, memory, specs

PREDICT = ["predict", "--input-len", "1024", "--output-len", "400"]


def _run(capsys, *argv):
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:  # argparse's usage errors (one line, exit 2)
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(capsys, *argv) -> str:
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == "" and "Traceback" not in err, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --------------------------------------------------------------------------- 7: the draft block, latency caps


def test_a_draft_block_of_ten_million_is_refused_at_the_door(capsys):
    line = _one_line_error(capsys, *PREDICT, "--layout", "8xb300 tp8", "--concurrency", "8", "--spec", "dspark",
                           "--block-size", "10000000")
    assert "--block-size: must be 2 to 64 draft tokens per step" in line and "got 10000000" in line
    assert "5,087,683" not in line


def test_block_size_help_states_draft_tokens_not_requests(capsys):
    with pytest.raises(SystemExit):
        cli.main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    block = text[text.index("--block-size BLOCK_SIZE DSpark"):]
    block = block[:block.index("--attention-backend")]
    assert "(2 to 64 draft tokens per step)" in block and "requests" not in block


def test_the_largest_block_allowed_still_answers(capsys):
    rc, out, err = _run(capsys, *PREDICT, "--layout", "8xb300 tp8", "--concurrency", "8", "--spec", "dspark",
                        "--block-size", "64", "--json")
    assert rc == 0, err
    d = json.loads(out)
    cap = limits.CAPS["latency_ms"].high
    assert d["output_tok_s"] > 0 and 0 < d["tpot_ms"] <= cap and 0 < d["ttft_ms"] <= cap


def test_a_spec_with_a_block_past_the_cap_is_refused_by_the_model_too():
    from k3lab.serving.model import Spec

    with pytest.raises(ValueError, match="the draft block must be 2 to 64"):
        Spec("dspark", 2.0, 65)


@pytest.mark.parametrize("layout, input_len, conc", [
    ("8xb300 tp8", "100000", "100000"),        # a queue whose TTFT is hours
    ("8xb300 tp8", "1024", "10000000"),
])
def test_a_latency_past_the_cap_is_never_printed_as_a_number(capsys, layout, input_len, conc):
    line = _one_line_error(capsys, "predict", "--layout", layout, "--input-len", input_len, "--output-len", "1",
                           "--concurrency", conc)
    assert "beyond 600,000 ms" in line and "TTFT" in line


# --------------------------------------------------------------------------- 8: a layout part twice


@pytest.mark.parametrize("layout, part", [("16xmi355x tp8 pp2 pp1", "pp"), ("8xmi355x tp8 dcp2 dcp4", "dcp"),
                                          ("8xmi355x tp8 tp4", "tp"), ("8xb300 tp8 hbm288 hbm100", "hbm"),
                                          ("8xb300 tp8 ep ep", "ep"), ("16×B200 TP8×PP2 pp2", "pp")])
def test_a_layout_part_given_twice_is_refused(capsys, layout, part):
    with pytest.raises(ValueError) as ei:
        specs.parse_layout(layout)
    assert str(ei.value) == f"layout {layout!r}: {part} given twice"
    line = _one_line_error(capsys, *PREDICT, "--layout", layout, "--concurrency", "8")
    assert f"{part} given twice" in line


def test_a_layout_with_each_part_once_still_reads():
    d = specs.parse_layout("16xb200 tp8 pp2")
    assert (d.num_gpus, d.tp, d.pp) == (16, 8, 2)


# --------------------------------------------------------------------------- 9: the value as typed


@pytest.mark.parametrize("argv, typed", [
    (["quote", "--max-tpot", "600001"], "600001"),
    (["fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--mem-fraction", "1.0000001"], "1.0000001"),
    (PREDICT + ["--layout", "8xmi355x tp8", "--concurrency", "1", "--spec", "dspark", "--accept-len", "8.0000001"],
     "8.0000001"),
    (["fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--hbm-gb", "4096.5"], "4096.5"),
    (["fit", "--gpu", "mi355x", "--gpus", "8", "--tp", "8", "--init-overhead-gib", "4096.4"], "4096.4"),
    (["compare", "--usd-per-gpu-hour", "mi355x=1000.004"], "1000.004"),
    (["compare", "--tok-s", "mi355x=1000000.4"], "1000000.4"),
])
def test_a_refused_value_is_shown_as_typed(capsys, argv, typed):
    line = _one_line_error(capsys, *argv)
    assert line.endswith(f"got {typed}"), line


def test_a_cap_of_a_million_reads_as_a_million():
    assert limits.CAPS["tok_s_per_gpu"].text() == "0.01 to 1,000,000 tok/s per GPU"


def test_a_float_checked_without_its_text_is_shown_exactly():
    with pytest.raises(ValueError) as ei:
        limits.check("fraction", 1.0000001, "x")
    assert str(ei.value).endswith("got 1.0000001")


# --------------------------------------------------------------------------- 10: a stage without a KV pool


@pytest.mark.parametrize("argv, pp", [
    (["fit", "--gpu", "b300", "--gpus", "32", "--tp", "1", "--pp", "32"], 32),
    (PREDICT + ["--layout", "744xb300 tp8 pp93", "--concurrency", "8"], 93),
])
def test_a_pipeline_stage_without_an_mla_layer_is_named(capsys, argv, pp):
    line = _one_line_error(capsys, *argv)
    assert "cell_bytes_per_token" not in line
    assert f"over pp{pp}: pipeline stage 0 (layers 0-" in line and "holds no full-attention (MLA) layer" in line
    assert "no KV pool" in line


def test_the_named_stage_really_has_no_mla_layer():
    """Stage 0 of pp32 and of pp93, from the published config itself: sglang gives the extra layers
    of 93 = 32 x 2 + 29 to the last 29 stages, so stage 0 holds layers 1-2 (pp93: layer 1), and the
    config's full-attention layers (1-based) are 4, 8, ..., 92, 93."""
    text = json.loads((data.DATA_DIR / "model" / "kimi_k3_config.json").read_text(encoding="utf-8"))
    full = set(text.get("text_config", text)["linear_attn_config"]["full_attn_layers"])
    assert min(full) == 4
    for pp, first_stage in ((32, {1, 2}), (93, {1})):
        assert not full & first_stage
        with pytest.raises(ValueError, match=f"over pp{pp}: pipeline stage 0 "):
            memory.fit(specs.load_model("kimi-k3"), specs.Deployment("b300", 8 * pp if pp == 93 else 32,
                                                                      8 if pp == 93 else 1, pp))


# --------------------------------------------------------------------------- 11: a huge price in data/prices.yaml


def test_a_price_of_1e308_names_the_file_and_the_row(data_copy, capsys):
    f = data_copy / "prices.yaml"
    text = f.read_text(encoding="utf-8")
    assert "usd_per_gpu_hour: 2.95," in text
    f.write_text(text.replace("usd_per_gpu_hour: 2.95,", "usd_per_gpu_hour: 1.0e+308,", 1), encoding="utf-8")
    data.clear_cache()
    line = _one_line_error(capsys, "quote")
    assert line.startswith("k3lab quote: error: data/prices.yaml: prices.") and ".usd_per_gpu_hour:" in line
    assert "less than or equal to 1000" in line and "inf" not in line
    row = int(re.search(r"prices\.(\d+)\.usd_per_gpu_hour", line).group(1))
    import yaml

    assert yaml.safe_load(f.read_text(encoding="utf-8"))["prices"][row]["usd_per_gpu_hour"] == 1.0e308


# --------------------------------------------------------------------------- 12: a missing claims file


def test_report_with_a_missing_claims_file_says_so(capsys, tmp_path):
    missing = tmp_path / "nonexistent.csv"
    line = _one_line_error(capsys, "report", "--readme", str(tmp_path / "README.md"), "--claims", str(missing))
    assert f"--claims {str(missing)!r} does not exist" in line and "make reproduce" in line
    assert "k3lab results folder" not in line and "no such folder" not in line


# --------------------------------------------------------------------------- 13: the domain of what runs


def test_speed_domain_is_judged_on_the_requests_running(capsys):
    rc, out, err = _run(capsys, *PREDICT, "--layout", "8xmi355x tp8 [aiter-k3-opt]", "--concurrency", "400",
                        "--max-running-requests", "64", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert (d["concurrency_asked"], d["concurrency"]) == (400, 64)
    assert not any("concurrency" in g for g in d["outside_validated_domain"])   # 64 run: the speed's question
    assert d["speed_in_validated_domain"] is True
    assert any(g.startswith("concurrency 400 ") for g in d["ttft_outside_validated_domain"])  # 400 queue: TTFT's
