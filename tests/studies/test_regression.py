"""The cost-model fit of docs/math.md section 13: exact constants from exact rows, the noise's
size from noisy ones, the refusals (with the rule), rows from run records and schedules, and
``topocoll fit-model``."""

import json

import numpy as np
import pytest

from topocoll.errors import FitError, InputTypeError, NotIdentifiableError
from topocoll.schedule.io import save_schedule
from topocoll.studies import fit_cost_model, load_runs, run_rows, schedule_row
from topocoll.synth import generate
from topocoll.topology import topology

from ..cli.conftest import run_cli

ALPHA, INV_BETA, GAMMA, OVERHEAD = 3e-6, 1 / 12.5e9, 2e-11, 2e-5


def model_rows(noise=0.0, seed=0, reduced=True):
    """Rows of the model at every step count and size, reduced bytes not proportional to the
    bandwidth bytes (``reduced``) or none at all; multiplicative noise of relative size
    ``noise``."""
    rng = np.random.default_rng(seed)
    rows = []
    for steps in (2, 3, 5, 8, 12):
        for size in (1e3, 1e5, 1e7, 1e9):
            bw = 2 * size * (1 + steps % 3)
            red = size * (1 + steps % 2) if reduced else 0.0
            seconds = OVERHEAD + ALPHA * steps + INV_BETA * bw + GAMMA * red
            rows.append((steps, bw, red, seconds * (1 + noise * rng.standard_normal())))
    return rows


def test_exact_rows_give_the_constants_exactly():
    fit = fit_cost_model(model_rows(), gamma=True)
    assert fit.alpha == pytest.approx(ALPHA, rel=1e-9)
    assert fit.inverse_beta == pytest.approx(INV_BETA, rel=1e-9)
    assert fit.gamma == pytest.approx(GAMMA, rel=1e-6)
    assert fit.overhead == pytest.approx(OVERHEAD, rel=1e-9)
    assert fit.beta == pytest.approx(12.5e9, rel=1e-9)
    assert fit.max_relative_error < 1e-9
    steps, bw, red, seconds = model_rows()[7]
    assert fit.predict(steps, bw, red) == pytest.approx(seconds, rel=1e-9)


def test_rows_as_dicts_and_without_overhead():
    rows = [{"steps": s, "bw_bytes": b, "seconds": ALPHA * s + INV_BETA * b}
            for s, b, _, _ in model_rows(reduced=False)]
    fit = fit_cost_model(rows, overhead=False)
    assert fit.overhead is None and fit.gamma is None
    assert fit.alpha == pytest.approx(ALPHA, rel=1e-9)
    assert fit.inverse_beta == pytest.approx(INV_BETA, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_rows_give_the_constants_within_the_noise(seed):
    fit = fit_cost_model(model_rows(noise=0.01, seed=seed), gamma=True)
    assert fit.alpha == pytest.approx(ALPHA, rel=0.05)
    assert fit.inverse_beta == pytest.approx(INV_BETA, rel=0.05)
    assert fit.overhead == pytest.approx(OVERHEAD, rel=0.05)
    assert 0.002 < fit.mean_relative_error < 0.02 and fit.max_relative_error < 0.05
    assert fit.max_relative_error >= fit.mean_relative_error


def test_constants_stay_non_negative():
    """Rows that a negative overhead would fit best: the overhead is held at 0."""
    rows = [(s, b, 0.0, ALPHA * s + INV_BETA * b - 1e-6) for s, b, _, _ in
            model_rows(reduced=False) if b > 1e4]
    unbounded = np.linalg.lstsq(np.array([[1, s, b] for s, b, _, _ in rows]),
                                np.array([r[3] for r in rows]), rcond=None)[0]
    assert unbounded[0] < 0                       # the plain solution would go negative
    fit = fit_cost_model(rows)
    assert fit.overhead == 0.0 and fit.alpha > 0 and fit.inverse_beta > 0


def test_one_step_count_is_refused_with_the_rule():
    rows = [(4, b, 0.0, OVERHEAD + 4 * ALPHA + INV_BETA * b) for b in (1e3, 1e6, 1e9)]
    with pytest.raises(NotIdentifiableError, match="alpha is not identifiable: every run takes "
                                                  "the same number of steps"):
        fit_cost_model(rows)
    # without the overhead one step count does determine alpha
    assert fit_cost_model(rows, overhead=False).alpha > 0


def test_bw_optimal_allreduces_cannot_fit_gamma():
    """Corollary 8.1: reduced bytes are half the bandwidth bytes in every BW-optimal allreduce,
    so gamma and 1/beta are one column."""
    rows = []
    for spec in ("torus:3x3", "hypercube:3", "circulant:10:1,3"):
        s = generate(topology(spec), "allreduce", "bfb")
        for size in (1e4, 1e7):
            row = schedule_row(s, size, 1e-5 + 1e-9 * size)
            assert row["reduced_bytes"] == pytest.approx(row["bw_bytes"] / 2, rel=1e-9)
            rows.append(row)
    with pytest.raises(NotIdentifiableError, match="gamma is not identifiable"):
        fit_cost_model(rows, gamma=True)
    assert fit_cost_model(rows).inverse_beta > 0


@pytest.mark.parametrize(("rows", "error", "words"), [
    ([(1, 1e3, 0, 1e-5)], NotIdentifiableError, "need at least 4 runs, got 1"),
    ([(1, 1e3, 0, 1e-5), (2, 1e4, 0, 0.0), (3, 1e5, 0, 1e-4)], FitError, "seconds positive"),
    ([(1, -1e3, 0, 1e-5)] * 3, FitError, "non-negative"),
    ([(1, 1e3, 1e-5)] * 3, InputTypeError, "four numbers"),
    ([{"steps": 1, "seconds": 1.0}] * 3, InputTypeError, "missing bw_bytes"),
    ([(s, 1e3 * s * s, 0, 1e-5 * s) for s in (1, 2, 3, 4)], NotIdentifiableError,
     "gamma is not identifiable: every run has reduced_bytes 0"),
])
def test_bad_rows_are_refused(rows, error, words):
    with pytest.raises(error, match=words):
        fit_cost_model(rows, gamma=True)


def test_schedule_rows_and_run_records(tmp_path):
    """uniring:4 ring allreduce: 6 steps, T_B x B = 2 (3/4) M, a node reduces 3/4 M."""
    s = generate(topology("uniring:4", bandwidth=1e9), "allreduce", "ring")
    row = schedule_row(s, 4e6, 0.5)
    assert row == {"steps": 6, "bw_bytes": pytest.approx(6e6), "reduced_bytes":
                   pytest.approx(3e6), "seconds": 0.5}
    save_schedule(s, tmp_path / "r.json")
    records = [{"time": 0.5, "bytes": 4e6, "algorithm": "ring"}]
    assert run_rows(records, [str(tmp_path / "r.json")]) == [row]
    with pytest.raises(InputTypeError, match="time and bytes"):
        run_rows([{"seconds": 1}], [s])
    (tmp_path / "runs.json").write_text(json.dumps(
        {"runs": [dict(records[0], schedule="r.json"), [2, 1e3, 0, 1e-5]]}))
    assert load_runs(tmp_path / "runs.json") == [row, [2, 1e3, 0, 1e-5]]


def test_cli_fits_and_refuses_in_one_line(tmp_path):
    fields = ("steps", "bw_bytes", "reduced_bytes", "seconds")
    (tmp_path / "runs.json").write_text(json.dumps([dict(zip(fields, r)) for r in model_rows()]))
    done = run_cli(["fit-model", "runs.json", "--fit-gamma", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["alpha"] == pytest.approx(ALPHA, rel=1e-9) and doc["runs"] == 20
    assert doc["gamma"] == pytest.approx(GAMMA, rel=1e-6)
    table = run_cli(["fit-model", "runs.json", "--fit-gamma"], tmp_path)
    assert table.returncode == 0 and "alpha 3us" in table.stdout
    assert "gamma 2e-11 s/B (reduction at 400Gbps)" in table.stdout
    (tmp_path / "same.json").write_text(json.dumps([[3, b, 0, 1e-5 * b] for b in (1, 2, 3)]))
    bad = run_cli(["fit-model", "same.json"], tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    assert "alpha is not identifiable" in bad.stderr
