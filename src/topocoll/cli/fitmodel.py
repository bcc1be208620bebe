"""``topocoll fit-model``: the cost model's constants fitted to measured runs."""

import click

from ..results import Status, document
from ..units import format_bandwidth, format_time
from .common import out_console, print_json

__all__ = ["fit_model"]


@click.command("fit-model")
@click.argument("runs", type=click.Path(dir_okay=False))
@click.option("--fit-gamma", is_flag=True, help="Fit the reduction cost gamma too (needs runs "
              "whose reduced bytes are not a fixed multiple of their bandwidth bytes).")
@click.option("--no-overhead", is_flag=True, help="Fit no fixed cost per call (the model's "
              "constant term).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def fit_model(runs, fit_gamma, no_overhead, as_json):
    """Fit alpha, 1/beta (and gamma) to measured runs by least squares.

    RUNS is a JSON list (or {"runs": [...]}) of rows {"steps", "bw_bytes", "reduced_bytes",
    "seconds"} and of run records (topocoll run --json documents: "time", "bytes") with a
    "schedule" key naming the schedule file each ran, relative to RUNS. Each run is modelled
    as overhead + alpha x steps + bw_bytes / beta + gamma x reduced_bytes; the constants are
    non-negative and fitted on relative errors, whose mean and maximum are printed.

    --json prints one object: the status keys, alpha, inverse_beta, beta, gamma, overhead
    (null where not fitted), runs, mean_relative_error, max_relative_error, measured and
    fitted (seconds per run).
    """
    from ..studies.regression import fit_cost_model, load_runs

    fit = fit_cost_model(load_runs(runs), gamma=fit_gamma, overhead=not no_overhead)
    said = (f"{len(fit.measured)} runs: alpha {format_time(fit.alpha)}, 1/beta "
            f"{fit.inverse_beta:.4g} s/B (beta {format_bandwidth(fit.beta)}), relative error "
            f"mean {fit.mean_relative_error:.2%}, max {fit.max_relative_error:.2%}")
    if as_json:
        print_json(document(Status.SUCCESS, said, fit.to_dict()))
        return
    out_console.print(said, markup=False)
    if fit.overhead is not None:
        out_console.print(f"overhead {format_time(fit.overhead)} per call", markup=False)
    if fit.gamma is not None:
        rate = format_bandwidth(1.0 / fit.gamma) if fit.gamma > 0 else "free"
        out_console.print(f"gamma {fit.gamma:.4g} s/B (reduction at {rate})", markup=False)
