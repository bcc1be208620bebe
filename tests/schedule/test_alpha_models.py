"""The link model's alpha conventions against the step model (docs/math.md section 8).

Theorem: with alpha charged per message or per step, every transfer of step t ends by
``S_t = sum_{k <= t} (alpha_k + beta'_k)``, where ``beta'_k`` is the step model's beta with each
node pair's bandwidth replaced by its fastest link's (the step model itself on a network with
one link per pair). With alpha = 0 every convention gives the same times.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.collectives import COPY
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.schedule import Schedule, transfer_array, verify
from topocoll.schedule.cost import PipelinedCost, best_chunks, evaluate, pipelined_step_costs
from topocoll.schedule.linkmodel import ALPHA_CONVENTIONS, simulate, simulate_many
from topocoll.schedule.transforms import reverse
from topocoll.synth import generate
from topocoll.synth.trees import dbt_schedule
from topocoll.topology import Topology, topology

from tests.helpers import strongly_connected_digraphs


def _random_allgather(topo, seed):
    """A random valid allgather: every step, each link sends a random part of what its sender
    held before the step and its receiver neither holds nor gets from elsewhere in the step;
    pieces are halves of shards."""
    rng = np.random.default_rng(seed)
    n = topo.num_nodes
    held = np.zeros((n, n, 2), dtype=bool)
    held[np.arange(n), np.arange(n), :] = True
    rows, step = [], 0
    while not held.all():
        step += 1
        new = held.copy()
        sent = []
        for link in rng.permutation(topo.num_links):
            u, v = int(topo.src[link]), int(topo.dst[link])
            cand = np.argwhere(held[u] & ~new[v])
            pick = cand[rng.random(len(cand)) < 0.6]
            for shard, half in pick:
                sent.append((u, v, shard, half))
                new[v, shard, half] = True
        if not sent:           # nothing picked: send one piece on the first link that can
            for link in range(topo.num_links):
                u, v = int(topo.src[link]), int(topo.dst[link])
                cand = np.argwhere(held[u] & ~held[v])
                if len(cand):
                    shard, half = cand[0]
                    sent.append((u, v, shard, half))
                    new[v, shard, half] = True
                    break
        rows.extend((step, *x) for x in sent)
        held = new
    a = np.array(rows, dtype=np.int64)
    t = transfer_array(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4] / 2, (a[:, 4] + 1) / 2, COPY)
    return Schedule(topo, "allgather", t, algorithm="random")


def _random_schedule(topo, seed, kind):
    ag = _random_allgather(topo, seed)
    if kind == "allgather":
        return ag
    # a reduce-scatter: the allgather reversed in time on the reversed network
    back = Topology(topo.num_nodes, topo.dst, topo.src, topo.bandwidth, topo.latency,
                    name=topo.name + "^T")
    return reverse(ag.replace(topology=topo), "reduce_scatter", back, algorithm="random")


def _fastest_link_step_bound(schedule, size):
    """``sum_t (alpha_t + beta'_t)``: the step model with each pair's fastest link only."""
    topo = schedule.topology
    t = schedule.transfers
    n = topo.num_nodes
    frac = schedule.collective.shard_fraction(n)
    link_key = topo.src.astype(np.int64) * n + topo.dst
    total = 0.0
    for step in np.unique(t["step"]):
        m = t["step"] == step
        key = t["src"][m].astype(np.int64) * n + t["dst"][m]
        load = {}
        for k, b in zip(key, (t["hi"][m] - t["lo"][m]) * frac * size):
            load[k] = load.get(k, 0.0) + b
        total += max(topo.latency[link_key == k].max() for k in load)
        total += max(b / topo.bandwidth[link_key == k].max() for k, b in load.items())
    return total


def _one_link_per_pair(topo):
    keys = np.unique(topo.src.astype(np.int64) * topo.num_nodes + topo.dst, return_index=True)[1]
    return Topology(topo.num_nodes, topo.src[keys], topo.dst[keys], topo.bandwidth[keys],
                    topo.latency[keys], name=topo.name)


@settings(max_examples=25)
@given(strongly_connected_digraphs(max_nodes=6), st.integers(0, 1000),
       st.sampled_from(["allgather", "reduce_scatter"]))
def test_message_and_step_charges_never_exceed_the_step_model(topo, seed, kind):
    simple = _one_link_per_pair(topo)
    s = _random_schedule(simple, seed, kind)
    assert verify(s).valid, verify(s).summary()
    size = 600.0
    step_model = evaluate(s, size).time
    times = {a: simulate(s, size, alpha_per=a).time for a in ALPHA_CONVENTIONS}
    # one link per pair: the step model itself bounds the per-message and per-step charges
    assert times["step"] <= step_model * (1 + 1e-12)
    assert times["message"] <= step_model * (1 + 1e-12)
    # fewer latencies never finish later (one link per pair: no choice between links)
    assert times["step"] <= times["message"] * (1 + 1e-12)
    assert times["message"] <= times["transfer"] * (1 + 1e-12)


@settings(max_examples=25)
@given(strongly_connected_digraphs(max_nodes=6), st.integers(0, 1000))
def test_parallel_links_bound_by_the_fastest_link(topo, seed):
    s = _random_schedule(topo, seed, "allgather")
    size = 600.0
    bound = _fastest_link_step_bound(s, size)
    for a in ("message", "step"):
        assert simulate(s, size, alpha_per=a).time <= bound * (1 + 1e-12)


def test_parallel_links_can_beat_summed_bandwidth_only_in_the_step_model():
    # one transfer over a doubled cable: the step model splits it over both links, the link
    # model cannot split a transfer, so there the step model is no bound
    two = Topology(2, [0, 0, 1], [1, 1, 0], 1.0, 0.0)
    s = Schedule(two, "broadcast", transfer_array([1], [0], [1], [0], 0.0, 1.0, COPY), root=0)
    assert simulate(s, 2.0, alpha_per="step").time == pytest.approx(2.0)
    assert evaluate(s, 2.0).time == pytest.approx(1.0)


@settings(max_examples=25)
@given(strongly_connected_digraphs(max_nodes=6), st.integers(0, 1000),
       st.sampled_from(["allgather", "reduce_scatter"]))
def test_conventions_agree_without_latency(topo, seed, kind):
    s = _random_schedule(_one_link_per_pair(topo), seed, kind)
    ends = [simulate(s, 600.0, alpha=0.0, alpha_per=a).end for a in ALPHA_CONVENTIONS]
    for e in ends[1:]:
        np.testing.assert_allclose(e, ends[0], rtol=1e-12, atol=0)


def test_hand_computed_charges():
    # uniring:3, latency 0.5, 1 B/s; a broadcast of 6 bytes in halves of 3 s: step 1 sends both
    # halves 0 -> 1 (back to back), step 2 forwards them 1 -> 2
    ring = topology("uniring:3", bandwidth=1.0, latency=0.5)
    t = transfer_array([1, 1, 2, 2], [0, 0, 1, 1], [1, 1, 2, 2], [0, 0, 0, 0],
                       [0.0, 0.5, 0.0, 0.5], [0.5, 1.0, 0.5, 1.0], COPY)
    s = Schedule(ring, "broadcast", t, root=0)
    assert verify(s).valid
    got = {a: simulate(s, 6.0, alpha_per=a).end.tolist() for a in ALPHA_CONVENTIONS}
    # per transfer: every one pays 0.5; step 2 starts when node 1 holds the first half
    assert got["transfer"] == pytest.approx([3.5, 7.0, 7.0, 10.5])
    # per message: the second half of each step goes on back to back, without a latency
    assert got["message"] == pytest.approx([3.5, 6.5, 7.0, 10.0])
    assert got["step"] == pytest.approx([3.5, 6.5, 7.0, 10.0])
    # step model: 2 steps of 0.5 + 6 bytes / 1
    assert evaluate(s, 6.0).time == pytest.approx(13.0)


def test_message_pays_again_after_the_link_idled_but_a_step_does_not():
    # 0 -> 1 on two parallel links (1 and 0.25 B/s), 1 -> 2 at 4 B/s, latency 0.5; a broadcast
    # of 2 bytes in halves: step 1 sends both halves 0 -> 1, step 2 forwards them 1 -> 2
    topo = Topology(3, [0, 0, 1, 2], [1, 1, 2, 0], [1.0, 0.25, 4.0, 1.0], 0.5)
    t = transfer_array([1, 1, 2, 2], [0, 0, 1, 1], [1, 1, 2, 2], [0, 0, 0, 0],
                       [0.0, 0.5, 0.0, 0.5], [0.5, 1.0, 0.5, 1.0], COPY)
    s = Schedule(topo, "broadcast", t, root=0)
    assert verify(s).valid
    r = {a: simulate(s, 2.0, alpha_per=a).end.tolist() for a in ALPHA_CONVENTIONS}
    # step 1: the fast link (0.5 + 1 = 1.5), then the second half there too (the slow link
    # would end at 0.5 + 4): back to back 2.5, or 3.0 paying alpha again
    # step 2: the first half on 1 -> 2 ends at 1.5 + 0.5 + 0.25 = 2.25; the second is ready
    # only later, so the link idled: a new message pays alpha, the step's charge does not
    assert r["transfer"] == pytest.approx([1.5, 3.0, 2.25, 3.75])
    assert r["message"] == pytest.approx([1.5, 2.5, 2.25, 3.25])
    assert r["step"] == pytest.approx([1.5, 2.5, 2.25, 2.75])


def test_tenants_pay_their_own_latency():
    ring = topology("uniring:3", bandwidth=1.0, latency=0.5)
    a = generate(ring, "allgather", "ring")
    both = simulate_many([a, a], 3.0, alpha_per="step")
    alone = simulate(a, 3.0, alpha_per="step")
    # two tenants on every link in every step: each transfer pays alpha (another schedule's)
    assert both[1].time == pytest.approx(6.0)
    assert alone.time == pytest.approx(2 * 1.5)


def test_result_names_its_convention_and_bad_names_fail():
    s = generate("uniring:3", "allgather", "ring")
    assert simulate(s, "1KiB").to_dict()["alpha_per"] == "message"
    assert simulate(s, "1KiB", alpha_per="per-transfer").alpha_per == "transfer"
    with pytest.raises(UnsupportedError, match="alpha_per"):
        simulate(s, "1KiB", alpha_per="chunk")
    with pytest.raises(InputTypeError, match="alpha_per"):
        simulate(s, "1KiB", alpha_per=1)


def test_torus_allreduce_link_model_meets_the_step_model():
    # every step of BFB on a torus sends several pieces on each link: charged per transfer the
    # link model paid alpha on every one; per message it is the step model's time
    s = generate("torus:4x4", "allreduce", "bfb")
    step_model = evaluate(s, "1MiB").time
    per_message = simulate(s, "1MiB").time
    assert per_message == pytest.approx(step_model, rel=1e-9)
    assert simulate(s, "1MiB", alpha_per="transfer").time > 1.15 * step_model


# ------------------------------------------------------------------ pipelined step model
def _pipeline(schedule, k):
    """The schedule run as k pipelined chunks, built explicitly: chunk c is the schedule on
    the c-th k-th of every shard, c steps late."""
    t = schedule.transfers
    parts = []
    for c in range(k):
        x = t.copy()
        x["step"] = t["step"] + c
        x["lo"], x["hi"] = (c + t["lo"]) / k, (c + t["hi"]) / k
        parts.append(x)
    x = np.concatenate(parts)
    return schedule.replace(transfers=x[np.argsort(x["step"], kind="stable")])


@settings(max_examples=20)
@given(strongly_connected_digraphs(max_nodes=5), st.integers(0, 1000), st.integers(1, 9),
       st.sampled_from(["allgather", "reduce_scatter"]))
def test_pipelined_costs_are_the_step_model_of_the_pipelined_schedule(topo, seed, k, kind):
    s = _random_schedule(topo, seed, kind)
    p = _pipeline(s, k)
    assert verify(p).valid, verify(p).summary()
    e = evaluate(p, 1e6)
    steps, t_l, t_b = pipelined_step_costs(s, k)
    assert steps == e.steps
    assert t_l == pytest.approx(e.T_L, rel=1e-12)
    assert t_b * 1e6 == pytest.approx(e.T_B, rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
def test_dbt_chunks_are_the_pipelined_dbt(n):
    one = dbt_schedule(topology(f"dbt:{n}"), "allreduce")
    for k in (2, 3, 2 * n + 1):
        s = dbt_schedule(one.topology, "allreduce", chunks=k)
        assert verify(s).valid
        e = evaluate(s, 1e6)
        steps, t_l, t_b = pipelined_step_costs(one, k)
        assert (steps, t_l) == (e.steps, pytest.approx(e.T_L, rel=1e-12))
        assert t_b * 1e6 == pytest.approx(e.T_B, rel=1e-12)


def test_best_chunks_is_the_best_count():
    one = generate("dbt:16", "allreduce", "dbt")
    size = 2**26
    k, steps, t_l, t_b = best_chunks(one, size)
    best = t_l + t_b * size
    everything = [pipelined_step_costs(one, j) for j in range(1, 200)]
    assert best <= min(a + b * size for _, a, b in everything) * (1 + 1e-12)
    # the closed form (L + K - 1)(alpha + beta / K) with L = 8 steps, as in the trees module
    alpha, beta = one.topology.latency[0], 2**25 / one.topology.bandwidth[0]
    assert best == pytest.approx((8 + k - 1) * (alpha + beta / k), rel=1e-12)
    # pipelining pays: dbt:16 at 64 MiB is near the link model of the unpipelined schedule
    assert best < 0.25 * evaluate(one, size).time
    assert best < simulate(one, size).time
    # with alpha = 0 more chunks are always better: the cap
    free = one.replace(topology=one.topology.with_links(latency=0.0))
    assert best_chunks(free, size, max_chunks=64)[0] == 64


def test_pipelined_cost_is_the_least_piece():
    one = generate("dbt:8", "allreduce", "dbt")
    cost = PipelinedCost.of(one, [2**20], name="DBT")
    k = best_chunks(one, 2**20)[0]
    assert cost.best(2**20)[0] == k
    assert cost(2**20) == pytest.approx(min(p[2] + p[3] * 2**20 for p in cost.pieces))
    assert (cost.steps, cost.latency) == (evaluate(one, 1.0).steps, evaluate(one, 1.0).T_L)
    assert cost(2**30) < cost.latency + cost.per_byte * 2**30


# ------------------------------------------------------------------ compare's rows
def dbt_topo(row):
    return topology("dbt:16").with_links(latency=row.alpha, bandwidth=row.link_bandwidth)


def test_compare_prices_dbt_pipelined_and_names_the_model():
    from topocoll.studies.compare import compare

    r = compare([("dbt:16", "dbt"), ("dbt:16", "bfb")], sizes=["1MiB", "64MiB"],
                link_bandwidth="100Gbps")
    dbt, bfb = r.rows
    assert [c.chunks for c in dbt.sizes] == [best_chunks(generate("dbt:16", "allreduce", "dbt")
                                                         .replace(topology=dbt_topo(dbt)), m)[0]
                                             for m in (2**20, 2**26)]
    # 64 MiB, 10 us, 100 Gbps links: 21.6 ms unpipelined, 3.62 ms in 43 chunks
    assert dbt.time_at(2**26) == pytest.approx(dbt.sizes[1].time)
    assert dbt.sizes[1].time == pytest.approx(0.0036213, rel=1e-4)
    assert dbt.T_L + dbt.T_B_per_byte * 2**26 == pytest.approx(0.0215548, rel=1e-4)
    assert bfb.sizes[1].chunks is None
    assert {row.model for row in r.rows} == {"step"} and r.to_dict()["model"] == "step"


def test_compare_refuses_rows_of_different_models():
    from topocoll.studies.compare import compare, fastest

    rows = compare(["ring:8", "hypercube:3"], sizes=["1MiB"]).rows
    rows[1].model = "link"
    with pytest.raises(UnsupportedError, match="different models"):
        fastest(rows, 0)


def test_pipelined_cost_from_loads_and_from_dict():
    one = generate("dbt:8", "allreduce", "dbt")
    t = one.topology
    tr = one.transfers
    # per transfer rows (duplicates of a (step, pair) add up)
    pairs = tr["src"].astype(np.int64) * t.num_nodes + tr["dst"]
    bw = {}                                  # parallel links add up
    for a, b, w in zip(t.src, t.dst, t.bandwidth):
        bw[(int(a), int(b))] = bw.get((int(a), int(b)), 0.0) + float(w)
    per_byte = [(h - l) / t.num_nodes / bw[(int(a), int(b))]
                for a, b, l, h in zip(tr["src"], tr["dst"], tr["lo"], tr["hi"])]
    a = PipelinedCost.from_loads("x", tr["step"], pairs, per_byte,
                                 np.full(tr.size, t.latency[0]), [2**20])
    b = PipelinedCost.of(one, [2**20], name="x")
    assert len(a.pieces) == len(b.pieces)
    assert all(p == pytest.approx(q, rel=1e-12) for p, q in zip(a.pieces, b.pieces))
    assert PipelinedCost.from_dict(b.to_dict()) == b
