"""The gossip topology registry: names -> builders ``builder(size, **params)``.

Register a topology of your own with the decorator; it then works everywhere a built-in does
(``gossip_topology``, ``topocoll gossip info/cost``, the runtime):

>>> from topocoll.gossip import GroupTopology, gossip_topology, register_gossip_topology
>>> @register_gossip_topology("halves-demo", summary="first half with second half")
... def halves(size):
...     half = size // 2
...     return GroupTopology("halves-demo", size,
...                          [[((i, i + half), 0.5) for i in range(half)]])
>>> gossip_topology("halves-demo", 4).groups(0)
[((0, 2), 0.5), ((1, 3), 0.5)]
>>> unregister_gossip_topology("halves-demo")
"""

import difflib
import inspect
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputTypeError, SpecError, TopologyError
from ..units import whole_number
from .mixing import GossipTopology

__all__ = ["GossipFamily", "GOSSIP_TOPOLOGIES", "register_gossip_topology",
           "unregister_gossip_topology", "gossip_topology", "describe_gossip_topologies",
           "resolve_gossip_name", "parse_param_value"]


@dataclass(frozen=True)
class GossipFamily:
    """One registered gossip topology.

    Attributes
    ----------
    name : str
        The registry name.
    builder : callable
        ``builder(size, **params) -> GossipTopology``.
    summary : str
        One line for listings.
    aliases : tuple of str
        Other names accepted for it.
    """

    name: str
    builder: Callable
    summary: str = ""
    aliases: tuple = field(default=())

    def parameters(self):
        """``{name: default}`` of the builder's parameters after ``size``
        (``inspect.Parameter.empty`` for required ones)."""
        sig = inspect.signature(self.builder)
        out = {}
        for i, p in enumerate(sig.parameters.values()):
            if i == 0 or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            out[p.name] = p.default
        return out

    def required(self):
        """Names of the parameters that have no default."""
        return [k for k, v in self.parameters().items() if v is inspect.Parameter.empty]

    def _accepts_any(self):
        return any(p.kind == p.VAR_KEYWORD
                   for p in inspect.signature(self.builder).parameters.values())

    def __call__(self, size, **params):
        return gossip_topology(self.name, size, **params)


#: Every registered gossip topology by name (aliases are listed in each entry, not as keys).
GOSSIP_TOPOLOGIES = {}


def register_gossip_topology(name, *, summary=None, aliases=(), replace=False):
    """Decorator registering ``builder(size, **params) -> GossipTopology`` under ``name``.

    Parameters
    ----------
    name : str
        The registry name (lower case, no spaces).
    summary : str, optional
        One line for ``topocoll gossip list``; defaults to the builder's docstring's first line.
    aliases : sequence of str
        Other names accepted for it.
    replace : bool
        Allow replacing an existing entry of that name.

    Raises
    ------
    SpecError
        The name (or an alias) is taken, or is not a plain word.
    """
    names = (name, *aliases)
    for word in names:
        if not isinstance(word, str) or not word or any(c.isspace() or c in ":=," for c in word):
            raise SpecError(f"gossip topology names are plain words, got {word!r}")

    def decorate(builder):
        if not callable(builder):
            raise InputTypeError(f"register_gossip_topology({name!r}) decorates a callable")
        for word in names:
            owner = _lookup(word)
            if owner is not None and not (replace and owner.name == name):
                raise SpecError(f"gossip topology name {word!r} is already registered "
                                f"(by {owner.name!r})")
        doc = (inspect.getdoc(builder) or "").strip().splitlines()
        GOSSIP_TOPOLOGIES[name] = GossipFamily(name, builder,
                                               summary if summary is not None
                                               else (doc[0] if doc else ""),
                                               tuple(aliases))
        return builder
    return decorate


def unregister_gossip_topology(name):
    """Remove a registered topology (by its name, not an alias); unknown names are an error."""
    if name not in GOSSIP_TOPOLOGIES:
        raise SpecError(f"no gossip topology named {name!r} is registered")
    del GOSSIP_TOPOLOGIES[name]


def _lookup(name):
    entry = GOSSIP_TOPOLOGIES.get(name)
    if entry is not None:
        return entry
    for entry in GOSSIP_TOPOLOGIES.values():
        if name in entry.aliases:
            return entry
    return None


def resolve_gossip_name(name):
    """The :class:`GossipFamily` registered as ``name`` or with it as an alias.

    >>> resolve_gossip_name("exp").name
    'one-peer-exp'
    """
    if not isinstance(name, str):
        raise InputTypeError(f"a gossip topology name is a string, got {name!r}")
    entry = _lookup(name.strip())
    if entry is None:
        known = sorted({*GOSSIP_TOPOLOGIES,
                        *(a for e in GOSSIP_TOPOLOGIES.values() for a in e.aliases)})
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SpecError(f"unknown gossip topology {name!r}{hint} (known: "
                        f"{', '.join(GOSSIP_TOPOLOGIES)})")
    return entry


def gossip_topology(name, size, **params):
    """Build the registered gossip topology ``name`` for ``size`` ranks.

    Parameters
    ----------
    name : str
        A registered name or alias (``topocoll gossip list`` shows them all), or a
        :class:`GossipTopology` (returned as is after checking its size).
    size : int
        World size ``n``.
    **params
        The topology's parameters, e.g. ``local_size=4`` for ``alternating-exp-ring``.

    Raises
    ------
    SpecError
        Unknown name or parameter, or no valid topology of that kind for these values (the
        message names the rule, e.g. ``local_size must divide n``).

    Examples
    --------
    >>> t = gossip_topology("one-peer-exp", 8)
    >>> t.period, t.groups(2)[0]
    (3, ((0, 4), 0.5))
    >>> gossip_topology("ring", 1)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: ring needs n >= 2 ranks, got 1
    """
    if isinstance(name, GossipTopology):
        if name.size != size:
            raise TopologyError(f"{name.name} has {name.size} ranks, not {size}")
        return name
    entry = resolve_gossip_name(name)
    # the range is the topology's to check: each names its own least size
    whole_number(size, "the world size", None)
    known = entry.parameters()
    if not entry._accepts_any():
        for key in params:
            if key not in known:
                takes = ", ".join(known) or "no parameters"
                raise SpecError(f"{entry.name} has no parameter {key!r} (takes: {takes})")
    missing = [k for k in entry.required() if k not in params]
    if missing:
        raise SpecError(f"{entry.name} needs {', '.join(f'{k}=...' for k in missing)}")
    topo = entry.builder(int(size), **params)
    if not isinstance(topo, GossipTopology):
        raise InputTypeError(f"the builder of {entry.name} returned {type(topo).__name__}, not a "
                             "GossipTopology")
    if topo.size != size:
        raise TopologyError(f"the builder of {entry.name} made {topo.size} ranks, not {size}")
    return topo


def parse_param_value(text):
    """A command-line parameter value: an int, a float, ``true``/``false``, or the string.

    >>> parse_param_value("4"), parse_param_value("0.5"), parse_param_value("2x4")
    (4, 0.5, '2x4')
    """
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def describe_gossip_topologies():
    """One dict per registered topology: ``name``, ``aliases``, ``params``, ``summary``.

    >>> [r["name"] for r in describe_gossip_topologies()][:2]
    ['complete', 'ring']
    """
    rows = []
    for entry in GOSSIP_TOPOLOGIES.values():
        params = []
        for key, default in entry.parameters().items():
            params.append(key if default is inspect.Parameter.empty else f"{key}={default!r}")
        rows.append({"name": entry.name, "aliases": list(entry.aliases),
                     "params": ", ".join(params), "summary": entry.summary})
    return rows
