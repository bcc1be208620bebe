"""``--gamma`` on ``compare`` and ``survey`` (``gamma=`` on their API): every time they print
is the step model's ``T_L + T_B + T_gamma``, the same as ``evaluate`` and ``simulate
--comm-model step`` give the same schedule with the same gamma (docs/math.md, the reduction
cost gamma)."""

import json

import pytest

from topocoll import compare, defaults
from topocoll.schedule.cost import evaluate
from topocoll.schedule.io import save_schedule
from topocoll.schedule.verify import verify
from topocoll.studies.survey import survey
from topocoll.synth import generate
from topocoll.topology import topology

from tests.cli.conftest import run_cli
from tests.cli.test_cli import assert_one_line_error

GAMMA = "100GB/s"
SIZES = [4096.0, 2.0**20, 2.0**26]


def _fair(spec):
    """The topology as compare prices it by default: every link alpha and 100 Gbps."""
    return topology(spec).with_links(latency=defaults.ALPHA, bandwidth=defaults.LINK_BANDWIDTH)


@pytest.mark.parametrize("gamma", [GAMMA, 3e-11])
def test_compared_times_are_evaluates_times(gamma):
    specs = ["ring:8", "hypercube:3", "torus:4x4"]
    result = compare(specs, sizes=SIZES, algorithms=["bfb", "ring"], gamma=gamma)
    priced = [r for r in result.rows if r.priced]
    assert len(priced) >= 4 and result.gamma > 0
    for row in priced:
        spec, algorithm = row.name.split()
        s = generate(_fair(spec), "allreduce", algorithm)
        assert verify(s).valid
        for c in row.sizes:
            e = evaluate(s, c.size, gamma=gamma)
            assert e.T_gamma > 0
            assert c.T_gamma == pytest.approx(e.T_gamma, rel=1e-12)
            assert c.time == pytest.approx(e.time, rel=1e-12)
            assert row.time_at(c.size) == pytest.approx(e.time, rel=1e-12)
            assert c.time_lower_bound <= c.time     # the gamma-free bound stays a bound


def test_pipelined_dbt_is_the_pipelined_schedule_priced_with_gamma():
    # compare prices dbt as K pipelined chunks without building them; with gamma each size's
    # time must be what evaluate gives the dbt schedule built with that K
    for spec in ("dbt:8", "dbt:13"):
        row = compare([spec], sizes=SIZES, algorithms=["dbt"], gamma=GAMMA).rows[0]
        assert row.priced and row.pipelined
        for c in row.sizes:
            e = evaluate(generate(_fair(spec), "allreduce", "dbt", chunks=c.chunks), c.size,
                         gamma=GAMMA)
            assert e.T_gamma > 0
            assert c.T_gamma == pytest.approx(e.T_gamma, rel=1e-9)
            assert c.time == pytest.approx(e.time, rel=1e-9)
            assert row.time_at(c.size) <= c.time * (1 + 1e-12)


def test_survey_times_are_evaluates_times():
    result = survey(8, specs=["hypercube:3"], sizes=[2.0**20], gamma=GAMMA)
    assert [r.algorithm for r in result.rows] == ["bfb", "biring", "ring"]
    for row in result.rows:
        s = generate(_fair(row.topology), "allreduce", row.algorithm)
        assert row.sizes[0].time == pytest.approx(evaluate(s, 2**20, gamma=GAMMA).time,
                                                  rel=1e-12)


@pytest.mark.parametrize("spec", ["ring:8", "hypercube:3"])
def test_gamma_raises_allreduce_and_leaves_allgather(spec):
    for collective, grows in (("allreduce", True), ("allgather", False)):
        plain, reducing = (compare([spec], sizes=SIZES, collective=collective, gamma=g)
                           for g in (None, GAMMA))
        for a, b in zip(plain.rows[0].sizes, reducing.rows[0].sizes):
            assert a.T_gamma == 0
            if grows:
                assert b.time > a.time and b.T_gamma > 0
                assert b.time == pytest.approx(a.time + b.T_gamma, rel=1e-12)
            else:
                assert b.time == a.time and b.T_gamma == 0
    # gamma = 0 is no reduction cost at all
    assert compare([spec], sizes=SIZES, gamma=0).to_dict()["rows"] == \
        compare([spec], sizes=SIZES).to_dict()["rows"]


def _json(args, cwd):
    done = run_cli(args + ["--json"], cwd)
    assert done.returncode == 0, done
    return json.loads(done.stdout)     # exactly one document, or this raises


def test_cli_compare_matches_cli_evaluate_and_simulate(tmp_path):
    s = generate(_fair("hypercube:3"), "allreduce", "bfb")
    save_schedule(s, tmp_path / "s.json")
    sizes = ["--size", "1KiB", "--size", "1MiB"]
    doc = _json(["compare", "s.json", "ring:8", *sizes, "--gamma", GAMMA], tmp_path)
    assert doc["gamma"] == pytest.approx(1e-11)
    ev = _json(["evaluate", "s.json", *sizes, "--gamma", GAMMA], tmp_path)
    row = doc["rows"][0]
    assert [c["time"] for c in row["sizes"]] == pytest.approx(
        [e["time"] for e in ev["sizes"]], rel=1e-12)
    assert [c["T_gamma"] for c in row["sizes"]] == pytest.approx(
        [e["T_gamma"] for e in ev["sizes"]], rel=1e-12)
    sim = _json(["simulate", "s.json", "--size", "1MiB", "--comm-model", "step",
                 "--gamma", GAMMA], tmp_path)
    assert row["sizes"][1]["time"] == pytest.approx(sim["time"], rel=1e-12)
    plain = _json(["compare", "s.json", "ring:8", *sizes], tmp_path)
    assert plain["gamma"] == 0
    for a, b in zip(plain["rows"], doc["rows"]):
        assert all(y["time"] > x["time"] for x, y in zip(a["sizes"], b["sizes"]))


def test_cli_survey_gamma(tmp_path):
    args = ["survey", "-n", "8", "--topology", "hypercube:3", "--size", "1MiB"]
    plain, doc = _json(args, tmp_path), _json(args + ["--gamma", GAMMA], tmp_path)
    assert doc["gamma"] == pytest.approx(1e-11)
    for a, b in zip(plain["rows"], doc["rows"]):
        assert b["sizes"][0]["time"] > a["sizes"][0]["time"]
    done = run_cli(args + ["--gamma", GAMMA], tmp_path)
    assert done.returncode == 0 and "T_gamma" in done.stdout


@pytest.mark.parametrize("command", [["compare", "ring:4"],
                                     ["survey", "-n", "8", "--topology", "ring:8"]])
@pytest.mark.parametrize("value", ["fast", "-1", "nan", "0GB/s", "-5GB/s"])
def test_bad_gamma_is_one_line_error(command, value, tmp_path):
    done = run_cli(command + ["--size", "1KiB", "--gamma", value], tmp_path)
    assert done.returncode == 2, done
    assert_one_line_error(done, "--gamma")
