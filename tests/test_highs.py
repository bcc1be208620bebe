"""The one maker of HiGHS solvers: results do not depend on what ran before, the banner never
reaches stdout, and every HiGHS model status maps to the one result table."""

import os
import subprocess
import sys

import highspy
import numpy as np
import pytest

from topocoll.highs import solver, status_of
from topocoll.results import Status
from topocoll.throughput import link_throughput
from topocoll.topology import topology


def _tiny_mip(**options):
    """max x + y subject to x + 2y <= 3.5, x, y integer in [0, 3]: optimum 3 (x=3, y=0)."""
    h = solver(**options)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = 2, 1
    lp.col_cost_ = np.array([1.0, 1.0])
    lp.col_lower_, lp.col_upper_ = np.zeros(2), np.full(2, 3.0)
    lp.row_lower_, lp.row_upper_ = np.array([-highspy.kHighsInf]), np.array([3.5])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array([0, 1, 2])
    lp.a_matrix_.index_ = np.array([0, 0])
    lp.a_matrix_.value_ = np.array([1.0, 2.0])
    lp.integrality_ = [highspy.HighsVarType.kInteger] * 2
    h.passModel(lp)
    h.run()
    return status_of(h.getModelStatus()), h.getInfo().objective_function_value


def test_results_do_not_depend_on_what_ran_before():
    first = link_throughput(topology("ring:6", bandwidth=1.0))
    assert _tiny_mip(threads=2) == (Status.SUCCESS, 3.0)     # another thread count in between
    assert _tiny_mip() == (Status.SUCCESS, 3.0)
    again = link_throughput(topology("ring:6", bandwidth=1.0))
    assert first.status == again.status == Status.SUCCESS
    assert again.lam == pytest.approx(first.lam, rel=1e-9)


def test_the_banner_never_reaches_stdout():
    code = ("from topocoll.highs import solver\n"
            "h = solver(); h.run()\n"
            "from topocoll.throughput import throughput\n"
            "throughput('ring:4')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout == ""


def test_verbose_logs_go_to_stderr():
    code = "from topocoll.highs import solver\nsolver(verbose=True).run()\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout == ""


@pytest.mark.parametrize("name", [m for m in dir(highspy.HighsModelStatus)
                                  if m.startswith("k")])
def test_every_model_status_maps_to_the_table(name):
    status = status_of(getattr(highspy.HighsModelStatus, name))
    assert isinstance(status, Status)
    expected = {"kOptimal": 0, "kInfeasible": 4, "kTimeLimit": 1, "kIterationLimit": 1,
                "kSolveError": 5, "kUnbounded": 5, "kNotset": 5}
    if name in expected:
        assert status == expected[name]
