"""Time limits of the all-to-all solvers: the whole call gets the limit (each solve gets what is
left), and when it runs out the best flow so far comes back with status LIMIT and its certified
gap. A fake clock decides when time runs out, so nothing here depends on the machine's speed."""

import pytest

from topocoll.errors import ResourceLimitError
from topocoll.results import Status
from topocoll.throughput import link_throughput, lp, path_throughput
from topocoll.topology import topology

SPECS = ["randomregular:16,3:1", "randomdigraph:16,2:1", "genkautz:20,3"]


def _fake_clock(monkeypatch, times):
    """The clock reads ``times`` in turn, then stays at the last one; records what HiGHS got."""
    seen = list(times)
    monkeypatch.setattr(lp, "clock", lambda: seen.pop(0) if len(seen) > 1 else seen[0])
    limits = []
    real = lp.solve_lp

    def solve(*args, **kwargs):
        limits.append(kwargs.get("time_limit"))
        return real(*args, **kwargs)
    for module in ("topocoll.throughput.linklp", "topocoll.throughput.pathlp"):
        monkeypatch.setattr(f"{module}.solve_lp", solve)
    return limits


@pytest.mark.parametrize("spec", SPECS)
def test_link_lp_out_of_time_returns_the_restricted_flow_with_limit(monkeypatch, spec):
    t = topology(spec, bandwidth=1.0)
    full = link_throughput(t)
    limits = _fake_clock(monkeypatch, [0.0, 1.0, 2000.0])   # runs out after the first solve
    r = link_throughput(t, restrict=True, time_limit=1000)
    assert limits == [999.0]                                # the solve got what was left
    assert r.status == Status.LIMIT and r.success and "time limit of 1000 s" in r.message
    assert 0 < r.lam < full.lam * (1 + 1e-6)                # feasible, so at most the optimum
    assert r.dual_bound >= full.lam * (1 - 1e-6)            # and still a certificate
    assert r.flows.shape == (t.num_nodes, t.pairs[0].size)


def test_link_lp_out_of_time_before_any_flow_fails_with_the_reason(monkeypatch):
    _fake_clock(monkeypatch, [0.0, 2000.0])
    r = link_throughput(topology("ring:6", bandwidth=1.0), time_limit=10)
    assert r.status == Status.FAILED and not r.success and "before any flow" in r.message


@pytest.mark.parametrize("spec", SPECS)
def test_path_lp_out_of_time_returns_the_last_complete_master(monkeypatch, spec):
    t = topology(spec, bandwidth=1.0)
    full = link_throughput(t)
    limits = _fake_clock(monkeypatch, [0.0, 1.0, 2000.0])
    r = path_throughput(t, time_limit=1000)
    assert limits == [999.0]                                # one master, no vertex re-solve
    assert r.status == Status.LIMIT and "time limit of 1000 s" in r.message
    assert 0 < r.lam <= full.lam * (1 + 1e-6) and r.dual_bound >= full.lam * (1 - 1e-6)
    assert r.paths is not None and len(r.paths) >= t.num_nodes * (t.num_nodes - 1)


def test_without_a_limit_the_clock_is_not_consulted_for_solves(monkeypatch):
    limits = _fake_clock(monkeypatch, [0.0])
    r = path_throughput(topology("torus:3x3", bandwidth=1.0))
    assert r.status == Status.SUCCESS and set(limits) == {None}


def test_an_lp_too_large_for_memory_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "100MiB")
    with pytest.raises(ResourceLimitError, match=r"link LP of torus:16x16 .* needs about"):
        link_throughput(topology("torus:16x16"))
    with pytest.raises(ResourceLimitError, match=r"path LP of torus:64x64"):
        path_throughput(topology("torus:64x64"))


@pytest.mark.parametrize("rounds", [1, 2])
def test_path_lp_round_limit_returns_the_last_solved_master(rounds):
    # the last round adds paths after its master is solved: the flow reported is that master's,
    # feasible on its own paths (it used to be read against the longer path list and crash)
    t = topology("randomdigraph:16,2:1", bandwidth=1.0)
    r = path_throughput(t, vertex=False, max_rounds=rounds)
    full = path_throughput(t, vertex=False)
    assert r.success and r.rounds == rounds and full.status == Status.SUCCESS
    assert 0 < r.lam <= full.lam * (1 + 1e-9) <= r.dual_bound * (1 + 1e-9)
    assert r.paths.share.size and abs(r.utilization.max() - 1.0) < 1e-6
