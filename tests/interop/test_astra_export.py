"""``export_msccl(..., astra=True)``: files that ASTRA-sim's MSCCL-to-Chakra converter accepts.

:func:`converter_problems` restates, as checks on a parsed program, what that converter (the
``msccl`` input of ``et_converter`` in ASTRA-sim's Chakra, ``mscclang2chakra_converter.py``)
requires of a file; a file that breaks one is refused with an error or crashes it:

* ``coll`` on ``<algo>`` is one of allreduce, allgather, alltoall, reduce_scatter, reduce,
  broadcast (spelled so: ``reducescatter`` is refused);
* every ``<gpu>`` has an integer ``i_chunks`` (and ``o_chunks``, used when ``i_chunks`` is 0);
  every ``<tb>`` integer ``id``, ``send``, ``recv`` and ``chan``;
* every ``<step>`` has integer ``s``, ``cnt``, ``srcoff``, ``dstoff``, ``depid``, ``deps``,
  ``hasdep``, and ``srcoff == dstoff``;
* only ``s``, ``r``, ``rrc`` and ``nop`` steps become trace nodes (anything else leaves a hole
  that a later dependency lookup falls into);
* a block's steps are numbered ``0, 1, ...`` in order (a step depends on step ``s - 1``);
* a dependency ``(depid, deps)`` names an existing step of that rank that is not a ``nop``;
  the ``nop`` steps right before a step hand their dependency to it, so theirs must exist too.

On top of those, a trace only runs in the simulator when every send has its receive: per
channel and direction the counts and sizes must pair up.
"""

import re

import pytest

from topocoll.errors import UnsupportedError
from topocoll.interop import export_msccl, lint_msccl, parse_msccl
from topocoll.interop.export import ASTRA_COLLECTIVES, astra_command
from topocoll.results import Status
from topocoll.synth import generate
from topocoll.topology import topology

CONVERTER_COLLECTIVES = {"allreduce", "allgather", "alltoall", "reduce_scatter", "reduce",
                         "broadcast"}
STEP_INTS = ("s", "cnt", "srcoff", "dstoff", "depid", "deps", "hasdep")


def _int(attrs, key):
    try:
        return int(attrs[key])
    except (KeyError, ValueError):
        return None


def converter_problems(program):
    """What ASTRA-sim's MSCCL converter would refuse or trip over in ``program`` (see the
    module docstring); an empty list when it takes the file."""
    out = []
    coll = program.attrs.get("coll")
    if coll not in CONVERTER_COLLECTIVES:
        out.append(f"coll={coll!r} is not one of the converter's collectives")
    sends, recvs = {}, {}
    for gpu in program.gpus:
        rank = _int(gpu.attrs, "id")
        if rank is None or _int(gpu.attrs, "i_chunks") is None:
            out.append(f"gpu {gpu.attrs.get('id')}: id and i_chunks must be integers")
            continue
        if _int(gpu.attrs, "i_chunks") == 0 and not _int(gpu.attrs, "o_chunks"):
            out.append(f"gpu {rank}: i_chunks and o_chunks are both 0")
        steps = {}
        for tb in gpu.blocks:
            ints = [_int(tb.attrs, k) for k in ("id", "send", "recv", "chan")]
            if None in ints:
                out.append(f"gpu {rank} tb {tb.attrs.get('id')}: id, send, recv and chan must "
                           "be integers")
                continue
            bid, send, recv, chan = ints
            if bid in steps:
                out.append(f"gpu {rank}: two blocks with id {bid}")
            steps[bid] = {}
            for pos, st in enumerate(tb.steps):
                a = st.attrs
                if any(_int(a, k) is None for k in STEP_INTS):
                    out.append(f"gpu {rank} tb {bid} step {pos}: {', '.join(STEP_INTS)} must be "
                               "integers")
                    continue
                if int(a["s"]) != pos:
                    out.append(f"gpu {rank} tb {bid}: step {pos} is numbered s={a['s']}")
                if int(a["srcoff"]) != int(a["dstoff"]):
                    out.append(f"gpu {rank} tb {bid} step {pos}: srcoff {a['srcoff']} != dstoff "
                               f"{a['dstoff']}")
                kind = a.get("type")
                if kind not in ("s", "r", "rrc", "nop"):
                    out.append(f"gpu {rank} tb {bid} step {pos}: type {kind!r} becomes no node")
                if kind == "s":
                    if send < 0:
                        out.append(f"gpu {rank} tb {bid} step {pos}: a send in a block with "
                                   "send=-1")
                    sends.setdefault((rank, send, chan), []).append(int(a["cnt"]))
                if kind in ("r", "rrc"):
                    if recv < 0:
                        out.append(f"gpu {rank} tb {bid} step {pos}: a receive in a block with "
                                   "recv=-1")
                    recvs.setdefault((recv, rank, chan), []).append(int(a["cnt"]))
                steps[bid][pos] = (kind, int(a["depid"]), int(a["deps"]))

        def target(depid, deps):
            return steps.get(depid, {}).get(deps, (None,))[0]

        for bid, block in steps.items():
            for pos, (kind, depid, deps) in block.items():
                if kind == "nop":
                    continue
                if depid != -1 and target(depid, deps) in (None, "nop"):
                    out.append(f"gpu {rank} tb {bid} step {pos}: depends on ({depid}, {deps}), "
                               "which is missing or a nop")
                prev = pos - 1
                while prev >= 0 and block[prev][0] == "nop":
                    _, nd, ns = block[prev]
                    if nd == -1 or target(nd, ns) in (None, "nop"):
                        out.append(f"gpu {rank} tb {bid} nop {prev}: its dependency ({nd}, {ns}) "
                                   "is missing or a nop")
                    prev -= 1
    for key in sorted(set(sends) | set(recvs)):
        if sends.get(key, []) != recvs.get(key, []):
            out.append(f"{key[0]}->{key[1]} channel {key[2]}: sends {sends.get(key, [])} but "
                       f"receives {recvs.get(key, [])}")
    return out


CASES = [
    ("ring:4", "allgather", "bfb", None, {}),
    ("torus:3x3", "allgather", "bfb", None, {}),
    ("mesh:3x3", "allgather", "ten", None, {"chunks": 2}),
    ("uniring:5", "allgather", "ring", None, {"channels": 2}),
    ("torus:3x3", "reduce_scatter", "bfb", None, {}),
    ("uniring:5", "reduce_scatter", "ring", None, {}),
    ("torus:2x3", "allreduce", "bfb", None, {}),
    ("torus:3x3", "allreduce", "ten", None, {}),
    ("uniring:6", "allreduce", "ring", None, {}),
    ("dbt:7", "allreduce", "dbt", None, {}),
    ("hypercube:3", "allreduce", "rhd", None, {}),
    ("ring:5", "broadcast", "bfb", 0, {}),
    ("ring:5", "reduce", "bfb", 2, {}),
]


@pytest.mark.parametrize("spec, coll, algorithm, root, kwargs", CASES,
                         ids=[f"{c[1]}-{c[0]}-{c[2]}" for c in CASES])
def test_the_converter_takes_it_and_it_is_a_correct_in_place_collective(spec, coll, algorithm,
                                                                        root, kwargs):
    s = generate(topology(spec), coll, algorithm, root=root)
    res = export_msccl(s, astra=True, **kwargs)
    assert res.status == Status.SUCCESS and not res.warning
    program = parse_msccl(res.text)            # what the converter reads: the written file
    assert converter_problems(program) == []
    assert program.attrs["coll"] == coll       # reduce_scatter, as the converter spells it
    # every collective with an in-place call is written in-place only: no local copies needed
    assert (program.attrs["inplace"], program.attrs["outofplace"]) == ("1", "0")
    report = lint_msccl(program)
    assert report.correct, report.problems
    if coll == "reduce_scatter":
        # the GPU runtime spells it reducescatter; that is the only rule the file breaks
        assert [f.rule for f in report.errors] == ["coll"]
        program.attrs["coll"] = "reducescatter"
        report = lint_msccl(program)
    assert report.valid, (report.errors, report.problems)


def test_allgather_keeps_each_ranks_own_chunk():
    """The out-of-place form without local copies left each rank's own shard out of its output;
    the in-place form holds it where the output expects it."""
    s = generate(topology("torus:3x3"), "allgather", "bfb")
    res = export_msccl(s, astra=True)
    report = lint_msccl(res.program)
    assert report.valid and report.correct and not report.problems
    # a send of a rank's own chunk reads it at its place in the one buffer, offset = chunk
    k = res.chunks
    for gpu in res.program.gpus:
        rank = int(gpu.attrs["id"])
        offs = {int(st.attrs["srcoff"]) for tb in gpu.blocks for st in tb.steps
                if st.attrs["type"] == "s"}
        assert all(st.attrs["srcbuf"] in ("o", "s") for tb in gpu.blocks for st in tb.steps
                   if st.attrs["type"] == "s")
        assert offs & set(range(rank * k, rank * k + k))


def test_alltoall_is_accepted_but_says_it_is_not_self_contained():
    s = generate(topology("torus:2x3"), "alltoall", "ten")
    res = export_msccl(s, astra=True)
    assert converter_problems(parse_msccl(res.text)) == []
    assert (res.program.attrs["inplace"], res.program.attrs["outofplace"]) == ("0", "1")
    assert res.status == Status.NOT_PROVEN     # usable, but not what lint can prove
    assert "not self-contained" in res.warning and res.warning in res.message
    assert res.to_dict()["warning"] == res.warning
    # what lint finds missing is exactly each rank's own block
    report = lint_msccl(res.program)
    assert report.errors == [] and not report.correct
    k = res.chunks
    assert report.problems
    for p in report.problems:
        m = re.search(r"rank (\d+) output chunk (\d+) holds nothing", p)
        assert m, p
        rank, chunk = int(m[1]), int(m[2])
        assert rank * k <= chunk < rank * k + k, p


@pytest.mark.parametrize("coll, root", [("gather", 1), ("scatter", 3)])
def test_collectives_the_converter_does_not_take_are_refused(coll, root):
    s = generate(topology("ring:5"), coll, "ten", root=root)
    with pytest.raises(UnsupportedError, match="ASTRA-sim"):
        export_msccl(s, astra=True)
    assert coll not in ASTRA_COLLECTIVES
    export_msccl(s)                      # the GPU runtime's form is still there


def test_the_printed_command_has_the_converters_flags():
    cmd = astra_command("/x/a.xml", "/x/a").split()
    assert cmd[:3] == ["python3", "-m", "et_converter.et_converter"]
    flags = dict(zip(cmd[3::2], cmd[4::2]))
    assert flags == {"--input_type": "msccl", "--input_filename": "/x/a.xml",
                     "--output_filename": "/x/a", "--num_dims": "1"}


def test_cli_prints_the_command_and_the_warning(tmp_path):
    from tests.cli.conftest import run_cli

    for coll in ("allgather", "alltoall"):
        made = run_cli(["schedule", "torus:2x3", "-c", coll, "-o", f"{coll}.json"], tmp_path)
        assert made.returncode == 0, made
        out = run_cli(["export", f"{coll}.json", "--astra", "-o", f"{coll}.xml"], tmp_path)
        assert out.returncode == 0, out
        xml = (tmp_path / f"{coll}.xml").resolve()
        stem = str(xml)[:-len(".xml")]
        assert astra_command(str(xml), stem) in out.stderr
        assert "--collective" not in out.stderr and "--coll_size" not in out.stderr
        assert ("warning: not self-contained" in out.stderr) == (coll == "alltoall")
        assert converter_problems(parse_msccl(xml.read_text())) == []
