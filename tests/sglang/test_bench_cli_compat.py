"""k3lab.live.bench_serving's command line is accepted by the real sglang 0.5.16 bench_serving parser."""

import argparse
import sys

import pytest

from k3lab.live import bench_serving as bench


class _Parsed(Exception):
    def __init__(self, ns):
        self.ns = ns


@pytest.fixture
def parse_with_sglang(monkeypatch):
    """Run sglang's own ``cli_main`` up to its ``parse_args`` and return the namespace."""
    import sglang.benchmark.serving as serving

    original = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        raise _Parsed(original(self, args, namespace))

    def parse(argv):
        monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
        monkeypatch.setattr(sys, "argv", ["bench_serving", *argv])
        with pytest.raises(_Parsed) as got:
            serving.cli_main()
        return got.value.ns

    return parse


def test_sweep_point_parses_in_sglang(parse_with_sglang, tmp_path):
    cmd = bench.build_command("http://127.0.0.1:30000", 24, tmp_path / "out.jsonl")
    assert cmd[1:3] == ["-m", "sglang.bench_serving"]
    ns = parse_with_sglang(cmd[3:])
    assert ns.backend == "sglang-oai"
    assert ns.base_url == "http://127.0.0.1:30000"
    assert ns.dataset_name == "random-ids"
    assert (ns.random_input_len, ns.random_output_len, ns.random_range_ratio) == (1024, 400, 1.0)
    assert (ns.num_prompts, ns.max_concurrency) == (96, 24)
    assert ns.output_file == str(tmp_path / "out.jsonl")


def test_unknown_option_is_refused_by_sglang(parse_with_sglang):
    with pytest.raises(SystemExit):
        parse_with_sglang(["--no-such-option", "1"])
