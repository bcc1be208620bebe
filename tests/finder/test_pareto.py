"""The Pareto frontier against a brute-force dominance check."""

from hypothesis import given, strategies as st

from topocoll.finder import pareto_frontier


def dominated(p, points):
    return any(q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1]) for q in points)


points = st.lists(st.tuples(st.integers(1, 12), st.sampled_from([0.5, 0.75, 0.9, 1.0, 1.25,
                                                                 1.5, 2.0, 3.0])),
                  max_size=40)


@given(points)
def test_frontier_is_exactly_the_non_dominated_points(pts):
    front = pareto_frontier(pts)
    expected = [p for p in pts if not dominated(p, pts)]
    assert sorted(front) == sorted(expected)
    # fewest steps first, then strictly decreasing bandwidth time across steps
    assert [p[0] for p in front] == sorted(p[0] for p in front)
    for a, b in zip(front, front[1:]):
        assert a[0] < b[0] and a[1] > b[1] or a == b


@given(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 100, allow_nan=False)), max_size=60))
def test_float_points_and_tie_handling(pts):
    front = pareto_frontier(pts)
    assert sorted(front) == sorted(p for p in pts if not dominated(p, pts))
    single = pareto_frontier(pts, keep_ties=False)
    assert sorted(set(single)) == sorted(set(front)) and len(single) == len(set(front))


def test_key_tolerance_and_order():
    items = [{"n": "a", "s": 3, "t": 1.0}, {"n": "b", "s": 3, "t": 1.0 + 1e-12},
             {"n": "c", "s": 2, "t": 1.5}, {"n": "d", "s": 4, "t": 1.0}]
    key = lambda x: (x["s"], x["t"])                                         # noqa: E731
    assert [x["n"] for x in pareto_frontier(items, key=key)] == ["c", "a"]
    assert [x["n"] for x in pareto_frontier(items, key=key, tol=1e-9)] == ["c", "a", "b"]
    assert [x["n"] for x in pareto_frontier(items, key=key, tol=1e-9, keep_ties=False)] == \
        ["c", "a"]
    assert pareto_frontier([]) == []
