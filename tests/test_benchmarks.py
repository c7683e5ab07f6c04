"""The benchmark suite runs end to end in quick mode, its correctness check passes and its JSON
has every key.  No time is ever asserted."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import spec  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _env():
    env = dict(os.environ)
    import dyngrad
    src = str(Path(dyngrad.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), src, env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def quick_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "result.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--threads", "1",
                           "--json", str(out)], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_quick_suite_completes_and_agrees(quick_result):
    res, stdout = quick_result
    assert res["ok"] is True
    assert "Ratios beside their goals" in stdout
    run = res["runs"]["1"]
    assert run["threads"] == 1
    assert run["env"]["OMP_NUM_THREADS"] == "1"
    assert set(run["workloads"]) == set(spec.KEYS)
    for key, w in run["workloads"].items():
        assert w["ok"], (key, w)
        assert {"description", "check", "backends", "ratios", "goal", "ok"} <= set(w)
        assert {"dyngrad/torch", "dyngrad/numpy", "dyngrad/torch cpu",
                "dyngrad/numpy cpu"} <= set(w["ratios"])
        assert w["backends"]["numpy"]["status"] == "ok"
        assert {"min_s", "median_s", "inner", "repeats"} <= set(w["backends"]["numpy"])
        dg = w["backends"]["dyngrad"]["status"]
        assert dg == "ok" or dg.startswith("unavailable: "), (key, dg)
        if dg == "ok":
            assert w["check"]["dyngrad"]["ok"]
            assert w["check"]["dyngrad"]["max_abs_diff_grad"] <= 1e-3
        tstat = w["backends"]["torch"]["status"]
        assert tstat == "ok" if HAVE_TORCH else tstat.startswith("skipped")


def test_quick_suite_extras(quick_result):
    res, _ = quick_result
    m = res["machine"]
    assert {"cpu_model", "logical_cpus", "python", "versions"} <= set(m)
    assert m["versions"]["numpy"] == np.__version__
    imp = res["import_time"]
    assert {"dyngrad", "torch", "numpy", "goal_s", "goal_met"} <= set(imp)
    assert imp["dyngrad"] > 0
    mem = res["memory"]
    assert mem["workload"] == "wide-mlp-step"
    for be in ("dyngrad", "numpy"):
        assert mem["backends"][be]["status"] == "ok"
        assert mem["backends"][be]["rss_delta_mb"] >= 0


def test_mismatch_is_detected():
    from benchmarks import worker
    g = [np.ones((2, 2), np.float32)]
    bad = [np.ones((2, 2), np.float32) * 1.01]
    out = worker.compare({"numpy": (1.0, "float32", g), "dyngrad": (1.0, "float32", bad),
                          "torch": (1.0, "torch.float32", [np.ones((2, 2), np.float64)])})
    assert out["numpy"]["ok"]
    assert not out["dyngrad"]["ok"] and "max abs diff" in out["dyngrad"]["problems"][0]
    assert not out["torch"]["ok"] and "dtype" in out["torch"]["problems"][0]


def test_missing_op_is_reported_unavailable():
    import types
    from benchmarks import worker
    from benchmarks.workloads import WORKLOADS
    fake = types.ModuleType("fakegrad")
    fake.nn = types.ModuleType("fakegrad.nn")
    wl = WORKLOADS["conv-step"]
    status, got = worker.check_one(wl, "dyngrad", fake, {})
    assert status == "unavailable: fakegrad.nn.Conv2d" and got is None


def test_bench_command(tmp_path, capsys):
    from dyngrad import cli
    out = tmp_path / "r.json"
    rc = cli.main(["bench", "--quick", "--threads", "2", "--only", "tiny-chain",
                   "--backends", "dyngrad,numpy", "--no-extras", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["runs"]["2"]["env"]["OPENBLAS_NUM_THREADS"] == "2"
    assert res["runs"]["2"]["workloads"]["tiny-chain"]["check"]["dyngrad"]["ok"]
    assert "tiny-chain" in capsys.readouterr().out


def test_bench_command_without_the_suite(monkeypatch, capsys):
    from dyngrad import cli
    from dyngrad.commands import bench
    monkeypatch.setattr(bench, "_suite", lambda: None)
    assert cli.main(["bench", "--quick", "--only", "tiny-chain"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "benchmarks/ suite is not here" in err[0]
