"""The one result convention: one status table, the same core fields everywhere."""

from dataclasses import dataclass

import pytest

from topocoll.errors import TopocollError
from topocoll.results import STATUS, Result, Status


def test_the_table_names_every_code_once():
    assert [int(s) for s in Status] == list(range(6))
    assert set(STATUS) == set(Status)
    assert len(set(STATUS.values())) == len(STATUS)


@pytest.mark.parametrize("status, usable", [(0, True), (1, True), (2, True), (3, False),
                                            (4, False), (5, False)])
def test_success_means_usable(status, usable):
    r = Result(status=status, message="m")
    assert r.success is usable
    assert r.status is Status(status) and r.status_name == Status(status).name
    assert r.to_dict() == {"success": usable, "status": status,
                           "status_name": Status(status).name, "message": "m"}


def test_unknown_status_is_refused():
    with pytest.raises(ValueError):
        Result(status=7, message="no such code")


def test_subclass_keeps_core_fields_first():
    @dataclass
    class Mine(Result):
        value: float

        def to_dict(self):
            return {**super().to_dict(), "value": self.value}

    r = Mine(2.5, status=Status.NOT_PROVEN, message="heuristic")
    assert list(r.to_dict())[:4] == ["success", "status", "status_name", "message"]
    assert r.to_dict()["value"] == 2.5 and r.success


def test_bad_input_errors_are_value_or_type_errors():
    import topocoll.errors as errors

    classes = [getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    assert len(classes) > 5
    for cls in classes:
        assert issubclass(cls, TopocollError)
        # the runtime's process-group failures and the kernel's refusals while an emulated
        # network is built are not bad input; everything else is
        if cls is not TopocollError and not issubclass(cls, (errors.ProcessGroupError,
                                                             errors.EmulationError)):
            assert issubclass(cls, (ValueError, TypeError)), cls


@pytest.mark.parametrize("where, name", [
    ("topocoll.finder", "FindResult"), ("topocoll.synth.ten.ilp", "IlpResult"),
    ("topocoll.throughput", "AlltoallResult"), ("topocoll.throughput", "RewireResult"),
    ("topocoll.gossip.analysis", "GossipAnalysis"), ("topocoll.studies.compare", "CompareResult"),
])
def test_every_solver_like_entry_point_returns_a_result(where, name):
    import importlib

    cls = getattr(importlib.import_module(where), name)
    assert issubclass(cls, Result)
    # no class keeps a status table of its own
    assert "status" not in cls.__dict__.get("__annotations__", {})
