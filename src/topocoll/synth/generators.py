"""The generators behind :func:`generate`: one table, one signature.

Every generator is a function

``make(topology, collective, *, root=None, progress=None, **options)``

that returns a :class:`~topocoll.schedule.model.Schedule`. Its options are declared here, each
an :class:`~topocoll.synth.options.Option` (parser, default, one-line doc), so :func:`generate`
checks and converts them the same way for every generator (``-O chunks=4`` on the command
line, ``chunks=4`` from Python) and :func:`show_options` lists them. The ``ten`` generator's
table is :data:`topocoll.synth.ten.options.TEN_OPTIONS`, which ``synthesize`` and ``topocoll
synth`` read too.

>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
>>> generate("torus:3x5", "allgather", "torusrings", multiport="no").meta["multiport"]
False
>>> sorted(ALGORITHMS["dbt"].options)
['chunks']
>>> print(show_options("dbt"))
dbt: NCCL double binary tree on dbt:N, half of each shard per tree (option chunks)
  chunks = 1
      chunks per shard: each tree pipelines its half in this many parts
>>> s = generate("ring:4", "alltoall", "lp", rounds=2)
>>> s.algorithm, s.meta["rounds"]
('alltoall-pipelined', 2)
"""

import importlib
import inspect
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Callable

from ..collectives import COLLECTIVES, collective as _collective
from ..errors import UnsupportedError
from ..limits import require_memory
from ..schedule.compact import compact_schedule
from ..schedule.forms import FORMS, check_form
from ..schedule.model import BUILD_BYTES_PER_TRANSFER
from ..schedule.traffic import traffic_of
from ..schedule.symmetric import (EXPLICIT_TRANSFER_LIMIT, SYMMETRIC_COLLECTIVES,
                                  symmetric_schedule)
from ..topology.symmetry import translation_group
from ..topology import topology as _topology
from ..units import format_size
from .options import (Option, any_option, bool_option, dims_option, fraction_option,
                      int_option, size_option, take_options)

__all__ = ["Generator", "ALGORITHMS", "generate", "step_traffic", "show_options",
           "lp_alltoall_schedule", "FORMS"]


@dataclass(frozen=True)
class Generator:
    """One schedule generator.

    Attributes
    ----------
    name : str
        The algorithm's name (``generate(..., algorithm=name)``, ``topocoll schedule -a``).
    collectives : tuple of str
        The collectives it makes.
    summary : str
        One line saying what it is.
    make : callable
        ``make(topology, collective, *, root=None, progress=None, **options)``. A generator
        that can build the symmetric form itself takes the keyword ``form`` (``"explicit"`` or
        ``"symmetric"``) or ``symmetric`` (``True``): then it returns a
        :class:`~topocoll.schedule.symmetric.SymmetricSchedule` (the hook
        ``generate(..., form="symmetric")`` calls); without one, :func:`generate` makes the
        explicit schedule and converts it.
    options : dict
        Option name -> :class:`~topocoll.synth.options.Option` (its parser, default and
        one-line doc; a bare parser ``parser(algorithm, name, value)`` works too, without a
        default or doc to show).
    summed : callable or None
        ``summed(topology, collective, *, root=None, **options)``: what ``make`` would send
        per step and pair (a :class:`~topocoll.schedule.traffic.StepTraffic`), summed as the
        rows are made without holding them (:func:`step_traffic`); None: taken from the
        schedule.
    transfers : callable or None
        ``transfers(topology, collective, *, root=None, **options)``: the most transfers
        ``make`` holds in the explicit form, counted without making them; the memory guard of
        :func:`generate` asks for them (and ``form="auto"`` decides by them). None: the
        generator holds about :func:`least_transfers` (twice that for an allreduce), or guards
        its own build (as ``trees``, once it has chosen its chunks).
    """

    name: str
    collectives: tuple
    summary: str
    make: Callable = field(repr=False)
    options: dict = field(default_factory=dict, repr=False)
    summed: Callable = field(default=None, repr=False)
    transfers: Callable = field(default=None, repr=False)


def lp_alltoall_schedule(topology, collective, *, root=None, progress=None, rounds=None,
                         size=None):
    """The ``lp`` generator: the all-to-all path LP's optimal routes
    (:func:`topocoll.throughput.alltoall_routes`), pipelined in ``rounds`` rounds to near the
    LP's time (:func:`topocoll.throughput.schedule.pipelined_alltoall_schedule`).

    ``rounds`` defaults to the fewest that come within 5% of the LP time in the step model;
    with the buffer ``size`` M, also at most as many as keep the links' latencies within 5% of
    the LP time at M (without it, rounds are chosen as if latencies were free). ``topocoll
    schedule -c alltoall`` uses this generator by default, at its ``--size``.
    """
    from ..throughput import alltoall_routes
    from ..throughput.schedule import pipelined_alltoall_schedule

    if _collective(collective).name != "alltoall":
        raise UnsupportedError(f"algorithm lp makes alltoall, not {_collective(collective).name}")
    res = alltoall_routes(topology, progress=progress)
    if not res.success:
        raise UnsupportedError(f"{topology.name}: {res.message}")
    return pipelined_alltoall_schedule(res, topology, rounds=rounds, size=size)


class _Table(MutableMapping):
    """Generators by name, each made (and its module imported) when first looked up:
    ``topocoll schedule -a bfb`` loads BFB's module and not every generator's (start-up
    time). Listing the names imports nothing; a dict otherwise (entries can be set)."""

    def __init__(self, makers):
        self._makers = makers
        self._made = {}

    def __getitem__(self, name):
        if name not in self._made:
            self._made[name] = self._makers[name]()
        return self._made[name]

    def __setitem__(self, name, generator):
        self._makers.setdefault(name, lambda: generator)
        self._made[name] = generator

    def __delitem__(self, name):
        del self._makers[name]
        self._made.pop(name, None)

    def __iter__(self):
        return iter(self._makers)

    def __len__(self):
        return len(self._makers)

    def __repr__(self):
        return f"<generators {', '.join(self._makers)}>"


#: The ``shift`` option of the ShiftedRing generators.
_SHIFT = Option(int_option(1), None, "the second ring's offset s (default: the circulant's "
                "second offset)")


def _trees_options(forest):
    """The options of the ``trees`` generator, their defaults the packing's own."""
    return {"chunks": Option(int_option(1), None,
                             "chunks per tree K (default: the smallest power of two within "
                             "tolerance of the optimum)"),
            "tolerance": Option(fraction_option, forest.DEFAULT_TOLERANCE,
                                "how close to the optimal T_B the chosen K must come"),
            "max_chunks": Option(int_option(1), forest.DEFAULT_MAX_CHUNKS,
                                 "the most chunks per tree K may be"),
            "depth_slack": Option(int_option(0), forest.DEFAULT_DEPTH_SLACK,
                                  "levels a tree may have beyond the shortest possible"),
            "size": Option(size_option, None,
                           "buffer size: choose K for it, trading latency for bandwidth "
                           "(default: bandwidth only)")}


def _module(name):
    return importlib.import_module(f"{__package__}.{name}")


def _bfb():
    bfb = _module("bfb")
    return Generator("bfb", bfb.BFB_COLLECTIVES,
                     "breadth-first broadcast, per-(node, step) load balancing", bfb.bfb_schedule,
                     {"symmetry": Option(bool_option, True,
                                         "solve node 0's problems and map them to every node "
                                         "where the topology has a translation symmetry"),
                      "workers": Option(int_option(1), None,
                                        "processes for the load-balancing problems (default: "
                                        "every core)"),
                      "size": Option(size_option, None,
                                     "buffer size M: each link's latency joins its load "
                                     "(default: bandwidth only)"),
                      "chunks": Option(int_option(1), None,
                                       "cut every shard into this many equal chunks "
                                       "(default: exact fractions)"),
                      "via": Option(_module("options").choice_option(
                          *_module("allreduce_forms").VIAS), "reduce_scatter",
                          "allreduce as reduce_scatter + allgather, reduce_broadcast (reduce "
                          "to --root, default 0, then broadcast) or alltoall (whole buffers "
                          "along shortest routes, one step)")})


def _ring():
    baselines = _module("baselines")
    return Generator("ring", baselines.RING_COLLECTIVES,
                     "classic unidirectional ring (links i -> i+1)", baselines.ring_schedule)


def _biring():
    baselines = _module("baselines")
    return Generator("biring", baselines.RING_COLLECTIVES,
                     "bidirectional ring, half of each shard each way",
                     baselines.biring_schedule)


def _shiftedring():
    classic = _module("classic")
    return Generator("shiftedring", classic.SHIFTED_RING_COLLECTIVES,
                     "TopoOpt ShiftedRing: rings i->i+1 and i->i+s on shiftedring:N, half of "
                     "each shard per bidirectional ring (option shift)",
                     classic.shifted_ring_schedule, {"shift": _SHIFT})


def _shiftedbfbring():
    classic = _module("classic")
    return Generator("shiftedbfbring", classic.SHIFTED_RING_COLLECTIVES,
                     "ShiftedRing topology with the BFB ring schedule on each ring (half the "
                     "steps; option shift)", classic.shifted_bfb_ring_schedule,
                     {"shift": _SHIFT})


def _dbt():
    trees = _module("trees")
    return Generator("dbt", trees.DBT_COLLECTIVES,
                     "NCCL double binary tree on dbt:N, half of each shard per tree (option "
                     "chunks)", trees.dbt_schedule,
                     {"chunks": Option(int_option(1), 1, "chunks per shard: each tree "
                                       "pipelines its half in this many parts")})


def _trees():
    packing = _module("packing")
    return Generator("trees", packing.TREES_COLLECTIVES,
                     "spanning-tree packing at the exact cut optimum, any topology and link "
                     "speeds, pipelined in K chunks (options chunks, size, tolerance, "
                     "max_chunks)", packing.trees_schedule,
                     _trees_options(_module("packing.forest")))


def _rhd():
    classic = _module("classic")
    return Generator("rhd", classic.RHD_COLLECTIVES,
                     "recursive halving-doubling on hypercube:k, one link per step",
                     classic.rhd_schedule)


def _swing():
    swing = _module("swing")
    choice_option = _module("options").choice_option
    return Generator("swing", swing.SWING_COLLECTIVES,
                     "Swing (NSDI'24): peers at distance 1, -1, 3, -5, ... through routes; "
                     "bandwidth- or latency-optimal (options variant, size, dims)",
                     swing.swing_schedule,
                     {"variant": Option(choice_option(*swing.SWING_VARIANTS), None,
                                        "bandwidth (reduce-scatter + allgather) or latency "
                                        "(whole vectors; default: latency for an allreduce "
                                        "below 64 KiB, else bandwidth)"),
                      "size": Option(size_option, None,
                                     "buffer size: chooses the variant when none is given"),
                      "dims": Option(dims_option, None,
                                     "dimension sizes such as 4x6, for a topology that is not "
                                     "a torus, mesh or ring by name (default: from its name, "
                                     "else one dimension)"),
                      "multiport": Option(bool_option, False,
                                          "2D parts per shard, rotated and mirrored walks "
                                          "through the dimensions at once (the paper's "
                                          "multiport Swing)")},
                     summed=swing.swing_traffic, transfers=swing.swing_transfers)


def _bine():
    bine = _module("bine")
    return Generator("bine", bine.BINE_COLLECTIVES,
                     "Bine trees (SC'25): binomial trees and butterflies on negabinary "
                     "distances, through routes (option dims)", bine.bine_schedule,
                     {"dims": Option(dims_option, None,
                                     "dimension sizes such as 4x6, for a topology that is not "
                                     "a torus, mesh or ring by name (default: from its name, "
                                     "else one dimension)")},
                     summed=bine.bine_traffic)


def _rankring():
    routed = _module("routed_baselines")
    return Generator("rankring", routed.RANKRING_COLLECTIVES,
                     "the ring in rank order (r -> r+1 mod N) on any topology, through routes "
                     "(what NCCL/gloo run on a torus; TACOS's Ring baseline; option routing)",
                     routed.rankring_schedule, {"routing": _routing_option()},
                     summed=routed.rankring_traffic)


def _routing_option():
    return Option(_module("options").choice_option("shortest", "xy"), "shortest",
                  "routes of the pairs that share no link: shortest, or xy (dimension order; "
                  "mesh, torus or ring)")


def _direct():
    direct = _module("direct")
    return Generator("direct", direct.DIRECT_COLLECTIVES,
                     "TACOS's Direct baseline: every node sends each shard straight to every "
                     "other at once, through routes (option routing)", direct.direct_schedule,
                     {"routing": _routing_option()}, summed=direct.direct_traffic,
                     transfers=direct.direct_transfers)


def _rd():
    routed = _module("routed_baselines")
    choice_option = _module("options").choice_option
    return Generator("rd", routed.RD_COLLECTIVES,
                     "recursive doubling / halving-doubling in rank order (partners r xor 2^s) "
                     "on any topology, through routes; non-powers of two folded (option "
                     "variant)", routed.rd_schedule,
                     {"variant": Option(choice_option(*routed.RD_VARIANTS), "bandwidth",
                                        "bandwidth (recursive halving + doubling) or latency "
                                        "(recursive doubling of whole vectors, allreduce "
                                        "only)")},
                     summed=routed.rd_traffic, transfers=routed.rd_transfers)


def _pat():
    routed = _module("routed_baselines")
    return Generator("pat", routed.PAT_COLLECTIVES,
                     "NCCL PAT: Bruck reversed (far partners first) in rank order on any "
                     "topology, through routes; ceil(log2 N) steps, any N",
                     routed.pat_schedule, summed=routed.pat_traffic)


def _ten():
    # the one table synthesize and `topocoll synth` read too
    return Generator("ten", tuple(COLLECTIVES),
                     "time-expanded-network synthesis (TACOS greedy; options method=ilp, "
                     "chunks, seed, restarts, size ...); also `topocoll synth`",
                     _module("ten.synthesis").synthesize, _module("ten.options").TEN_OPTIONS)


def _tacclike():
    ten = _module("ten.options").TEN_OPTIONS
    return Generator("tacclike", tuple(COLLECTIVES),
                     "TACOS's TACCL-like baseline: TEN synthesis ignoring link contention "
                     "(every chunk on its earliest-arrival tree), priced with congestion "
                     "(options chunks, size, time_step, unwind_degree)",
                     _module("ten.nocongestion").uncongested_synthesize,
                     {name: ten[name] for name in ("chunks", "size", "time_step",
                                                   "unwind_degree")})


def _torusrings():
    torus_rings = _module("torus_rings")
    return Generator("torusrings", torus_rings.TORUS_RINGS_COLLECTIVES,
                     "traditional torus schedule: ring collectives dimension after dimension "
                     "(options multiport, dims)", torus_rings.torus_rings_schedule,
                     {"multiport": Option(bool_option, True,
                                          "D rotated parts per shard, one per dimension at a "
                                          "time (false: one part, dimension after dimension)"),
                      "dims": Option(dims_option, None,
                                     "dimension sizes such as 4x6, for a topology that is not "
                                     "a torus by name (default: from its name)")},
                     transfers=torus_rings.torus_rings_transfers)


def _expand():
    expanded = _module("expanded")
    return Generator("expand", expanded.EXPAND_COLLECTIVES,
                     "a composite spec (line(...), degree(...,m=M), power(...,n=P), "
                     "bidir(...), product(...)): its leaf's schedule taken through the "
                     "expansions, as the finder builds (options leaf, spec)",
                     expanded.expand_schedule_of,
                     {"leaf": Option(any_option, "bfb", "the generator of the innermost specs' "
                                     "schedules (products: always bfb)"),
                      "spec": Option(any_option, None, "the composite spec (default: the "
                                     "topology's name)")})


def _lp():
    return Generator("lp", ("alltoall",),
                     "the all-to-all path LP's optimal routes, pipelined to near the LP's time "
                     "(options rounds, size)", lp_alltoall_schedule,
                     {"rounds": Option(int_option(1), None,
                                       "pipelining rounds (default: the fewest within 5% of "
                                       "the LP time)"),
                      "size": Option(size_option, None,
                                     "buffer size M: also keep the links' latencies within 5% "
                                     "of the LP time (default: latencies free)")})


#: Every generator, by name (a mapping; each is made when first looked up).
ALGORITHMS = _Table({"bfb": _bfb, "ring": _ring, "biring": _biring, "shiftedring": _shiftedring,
                     "shiftedbfbring": _shiftedbfbring, "dbt": _dbt, "trees": _trees,
                     "rhd": _rhd, "swing": _swing, "ten": _ten, "torusrings": _torusrings,
                     "rankring": _rankring, "rd": _rd, "pat": _pat, "direct": _direct,
                     "tacclike": _tacclike,
                     "bine": _bine,
                     "lp": _lp, "expand": _expand})


def generate(topology, collective, algorithm="bfb", *, root=None, progress=None, form="auto",
             **options):
    """Make a schedule.

    Parameters
    ----------
    topology : Topology or str
        A topology or a spec string (``"torus:4x4"``) or topology file path.
    collective : str
        One of the eight collectives.
    algorithm : str
        A key of :data:`ALGORITHMS`.
    root : int, optional
        Root node of rooted collectives (default 0).
    progress : callable, optional
        Called as ``progress(done, total)`` during long work.
    form : str
        ``"explicit"`` (a :class:`~topocoll.schedule.model.Schedule`),
        ``"symmetric"`` (a :class:`~topocoll.schedule.symmetric.SymmetricSchedule`: the
        generator's own symmetric hook, else the explicit schedule converted; allgather,
        reduce-scatter and allreduce on a topology with a translation group), ``"compact"``
        (a :class:`~topocoll.schedule.compact.CompactSchedule`: whole-chunk copies; made by a
        generator that takes ``form``, such as ``ten``, else the explicit schedule converted),
        or ``"auto"``: the default: symmetric where the explicit form would hold more than
        :data:`~topocoll.schedule.symmetric.EXPLICIT_TRANSFER_LIMIT` transfers (2**25: at least
        4 GiB to build) and the generator has a symmetric hook, compact there for a collective
        that only copies where the generator makes that form, else explicit. The one list of
        forms is :data:`topocoll.schedule.forms.FORMS`.
    **options
        Options of the algorithm (e.g. ``shift`` for shiftedring, ``chunks`` for dbt,
        ``multiport`` for torusrings; see ``ALGORITHMS[name].options``); one it does not know
        raises ``UnsupportedError`` naming it.
    """
    topo, coll, generator, root, parsed = _request(topology, collective, algorithm, root,
                                                   options)
    fewest = _expected_transfers(generator, topo, coll, root, parsed)
    hook = symmetric_hook(generator)
    form = _form(form, topo, coll, hook, fewest)
    if form == "compact":
        return _compact(generator, hook, topo, coll, root, progress, parsed)
    if form == "symmetric" and hook is not None:
        require_memory(fewest // topo.num_nodes * BUILD_BYTES_PER_TRANSFER,
                       f"the symmetric {coll.name} schedule on {topo.num_nodes} nodes (about "
                       f"{fewest // topo.num_nodes:,} representatives)")
        ask = {"form": "symmetric"} if hook == "form" else {"symmetric": True}
        made = generator.make(topo, coll, root=root, progress=progress, **ask, **parsed)
        return symmetric_schedule(made)
    require_memory(fewest * BUILD_BYTES_PER_TRANSFER, f"the {algorithm} {coll.name} schedule on "
                   f"{topo.num_nodes} nodes (about {fewest:,} transfers)")
    ask = {"form": "explicit"} if hook == "form" else {}
    made = generator.make(topo, coll, root=root, progress=progress, **ask, **parsed)
    if form == "symmetric":
        return symmetric_schedule(made)
    return made.unfolded()


def _request(topology, collective, algorithm, root, options):
    """What :func:`generate` and :func:`step_traffic` are asked for, checked: ``(topology,
    collective, generator, root, parsed options)``."""
    topo = _topology(topology)
    topo.require_no_switches("schedule generation")
    topo.require_nodes(2, "a collective schedule")
    coll = _collective(collective)
    generator = _generator(algorithm)
    if coll.name not in generator.collectives:
        raise UnsupportedError(f"algorithm {algorithm} makes {', '.join(generator.collectives)}; "
                               f"not {coll.name}")
    if coll.rooted:
        root = 0 if root is None else root
        if not 0 <= int(root) < topo.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root}")
    parsed = take_options(algorithm, options, generator.options)
    if not coll.rooted and root is not None and parsed.get("via") != "reduce_broadcast":
        raise UnsupportedError(f"{coll.name} takes no root")
    return topo, coll, generator, root, parsed


def step_traffic(topology, collective, algorithm="bfb", *, root=None, **options):
    """What the schedule ``generate(topology, collective, algorithm, **options)`` sends in each
    step between each ordered pair of nodes: a
    :class:`~topocoll.schedule.traffic.StepTraffic`, which
    :func:`~topocoll.schedule.cost.step_costs` prices exactly as the schedule.

    A generator that writes its rows to a sink (``Generator.summed``: swing, bine, rankring,
    rd, pat) sums them as they are made and never holds them, so a schedule far too large to
    hold as rows is priced (Swing's latency variant on a 64x64 torus: 201 million transfers,
    49,152 traffic rows); any other is made (in the form :func:`generate` picks) and summed.
    Nothing verifies traffic: verify the generator's schedules where they fit.

    >>> from topocoll.schedule.cost import step_costs
    >>> t = step_traffic("torus:8x8", "allreduce", "swing", variant="latency")
    >>> s = generate("torus:8x8", "allreduce", "swing", variant="latency")
    >>> [a.tolist() == b.tolist() for a, b in zip(step_costs(t), step_costs(s))]
    [True, True, True]
    """
    topo, coll, generator, root, parsed = _request(topology, collective, algorithm, root,
                                                   options)
    if generator.summed is not None:
        return generator.summed(topo, coll, root=root, **parsed)
    return traffic_of(generate(topo, coll, algorithm, root=root, **options))


def show_options(algorithm=None):
    """The options of one generator (of every generator when ``algorithm`` is None) as text,
    as :func:`scipy.optimize.show_options` lists a solver's: the generator's name and summary,
    then one entry per option, ``name = default`` and its one-line doc. The text is returned,
    not printed (library code never prints): ``print(show_options("ten"))``.

    >>> print(show_options("lp").splitlines()[1])
      rounds = None
    """
    names = list(ALGORITHMS) if algorithm is None else [algorithm]
    return "\n\n".join(_options_text(name, _generator(name)) for name in names)


def _options_text(name, generator):
    lines = [f"{name}: {generator.summary}"]
    for option, parser in generator.options.items():
        default = getattr(parser, "default", None)
        shown = format_size(default) if getattr(parser, "parse", None) is size_option \
            and default is not None else repr(default)
        lines.append(f"  {option} = {shown}")
        if getattr(parser, "doc", ""):
            lines.append(f"      {parser.doc}")
    if not generator.options:
        lines.append("  (no options)")
    return "\n".join(lines)


def _generator(algorithm):
    """The generator named ``algorithm``; an unknown name is refused, the known ones listed."""
    generator = ALGORITHMS.get(algorithm)
    if generator is None:
        raise UnsupportedError(f"unknown algorithm {algorithm!r}; choose one of "
                               f"{', '.join(ALGORITHMS)}")
    return generator


def symmetric_hook(generator):
    """How the generator builds the symmetric form itself: ``"form"`` (it takes
    ``form="symmetric"``), ``"symmetric"`` (it takes ``symmetric=True``) or ``None``."""
    try:
        params = inspect.signature(generator.make).parameters
    except (TypeError, ValueError):
        return None
    return next((name for name in ("form", "symmetric") if name in params), None)


def _form(form, topo, coll, hook, fewest):
    """``form`` checked, with ``"auto"`` decided: symmetric iff the explicit form would hold
    more than EXPLICIT_TRANSFER_LIMIT transfers and a symmetric one can be made cheaply; else
    compact where the generator makes that form itself and the collective only copies."""
    if check_form(form) != "auto":
        return form
    big = fewest > EXPLICIT_TRANSFER_LIMIT
    if big and coll.name in SYMMETRIC_COLLECTIVES and hook is not None \
            and translation_group(topo) is not None:
        return "symmetric"
    if big and hook == "form" and not coll.combining:
        return "compact"
    return "explicit"


def _compact(generator, hook, topo, coll, root, progress, parsed):
    """The compact form: made by a generator that takes ``form``, else the explicit schedule
    converted (whole-chunk copies only; anything else is refused in one line)."""
    if coll.combining:
        raise UnsupportedError(f"form='compact' holds copies only; {coll.name} combines")
    if hook == "form":
        return generator.make(topo, coll, root=root, progress=progress, form="compact",
                              **parsed)
    return compact_schedule(generator.make(topo, coll, root=root, progress=progress, **parsed))


def _expected_transfers(generator, topo, coll, root, parsed):
    """The transfers the explicit form will hold: the generator's own count where it has
    one, else the fewest any schedule has (twice that for an allreduce: a reduce-scatter and
    an allgather)."""
    if generator.transfers is not None:
        return int(generator.transfers(topo, coll.name, root=root, **parsed))
    return least_transfers(coll.name, topo.num_nodes) * (2 if coll.name == "allreduce" else 1)


def least_transfers(collective, n):
    """The fewest transfers of any schedule of ``collective`` on ``n`` nodes (a transfer
    carries a piece of one shard): in an allgather each node receives each of the ``n - 1``
    shards it lacks at least once, in a reduce-scatter or allreduce each node's contribution to
    each of the other ``n - 1`` shards leaves it in at least one transfer of that shard, in an all-to-all every pair's shard moves,
    and a rooted collective moves at least one transfer per non-root node.

    >>> least_transfers("allgather", 4), least_transfers("allreduce", 4), least_transfers("reduce", 4)
    (12, 12, 3)
    """
    pairs = n * (n - 1)
    return {"allgather": pairs, "reduce_scatter": pairs, "allreduce": pairs,
            "alltoall": pairs}.get(collective, n - 1)
