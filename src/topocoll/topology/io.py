"""Topology files: the ``topocoll.topology`` JSON format and GraphML.

JSON (the file format of docs/format.md)::

    {"format": "topocoll.topology", "version": 1, "name": "ring:4", "nodes": 4,
     "links": [{"src": 0, "dst": 1, "bandwidth": 12.5e9, "latency": 1e-5}, ...],
     "switches": [...], "meta": {...}}

``switches`` and ``meta`` are optional; so are ``format``, ``version`` and ``name``, but when
present ``format`` must be ``"topocoll.topology"`` and ``version`` must be 1. Every link needs
all four fields. Self-loops are an error.

GraphML (read with networkx): directed or undirected, parallel edges allowed; an undirected edge
becomes two links; edges without ``bandwidth``/``latency`` attributes get
:data:`LINK_BANDWIDTH`/:data:`LINK_LATENCY`; nodes with a true ``switch`` attribute are
switches; self-loops are dropped (counted in ``meta["dropped_self_loops"]``). Nodes are
relabelled ``0..N-1``: in numeric order when every id is a whole number, else in file order.

Every problem with a file raises :class:`ScheduleFormatError` with one line that names the file
and the offending field.

>>> import os, tempfile
>>> from topocoll.topology import torus_graph
>>> path = os.path.join(tempfile.mkdtemp(), "t.json")
>>> save_topology(torus_graph([3, 3]), path)
>>> load_topology(path)
Topology('torus:3x3', nodes=9, links=36)
"""

import json
import math
import os
import re

import numpy as np

from ..defaults import LINK_BANDWIDTH, LINK_LATENCY
from ..errors import InputTypeError, ScheduleFormatError, TopologyError
from ..fileio import check_output, is_special, open_output, parse_json, read_input
from .model import Topology

__all__ = ["load_topology", "save_topology", "topology_from_dict"]

FORMAT = "topocoll.topology"
VERSION = 1
_SUFFIXES = (".json", ".graphml")
_META_KEY = "topocoll_meta"  # GraphML graph attribute holding the meta dict as JSON
_WHOLE = re.compile(r"^[+-]?\d+$")


def _kind(value):
    """JSON's name for the type of ``value`` (for error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(data, key, where):
    if key not in data:
        raise ScheduleFormatError(f"{where}.{key}: missing")
    return data[key]


def _node(value, num_nodes, where):
    if not _is_int(value) or not 0 <= value < num_nodes:
        shown = repr(value) if _is_int(value) else _kind(value)
        raise ScheduleFormatError(f"{where}: must be a node id in 0..{num_nodes - 1}, got {shown}")
    return value


def topology_from_dict(data, where="topology"):
    """Validate a ``topocoll.topology`` object (parsed JSON) and build its :class:`Topology`.

    Parameters
    ----------
    data : dict
        The parsed JSON object.
    where : str
        The path of ``data`` in its file, used as the prefix of error messages.

    Raises
    ------
    ScheduleFormatError
        Naming the offending field, e.g. ``"topology.links[3].bandwidth: must be a positive
        number, got -1"`` or ``"topology.nodes: missing"``.

    Examples
    --------
    >>> d = {"nodes": 2, "links": [{"src": 0, "dst": 1, "bandwidth": 1e9, "latency": 0}]}
    >>> topology_from_dict(d).num_links
    1
    >>> d["links"][0]["bandwidth"] = -1
    >>> topology_from_dict(d, where="t")
    Traceback (most recent call last):
    ...
    topocoll.errors.ScheduleFormatError: t.links[0].bandwidth: must be a positive number, got -1
    """
    name, num_nodes = _header(data, where)
    links = _require(data, "links", where)
    if not isinstance(links, list):
        raise ScheduleFormatError(f"{where}.links: must be a list, got {_kind(links)}")
    src, dst, bandwidth, latency = _links(links, num_nodes, where)
    switches = _switches(data.get("switches", []), num_nodes, where)
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise ScheduleFormatError(f"{where}.meta: must be an object, got {_kind(meta)}")
    try:
        return Topology(num_nodes, src, dst, bandwidth, latency, name=name, switches=switches,
                        meta=meta)
    except TopologyError as err:  # not expected after the checks above, but keep the contract
        raise ScheduleFormatError(f"{where}: {err}") from None


def _header(data, where):
    """Check a topology object's ``format``, ``version``, ``name`` and ``nodes``; return
    ``(name, num_nodes)``."""
    if not isinstance(data, dict):
        raise ScheduleFormatError(f"{where}: must be an object, got {_kind(data)}")
    if "format" in data and data["format"] != FORMAT:
        hint = (" (a schedule file: its topology is the 'topology' field)"
                if data["format"] == "topocoll.schedule" else "")
        raise ScheduleFormatError(f"{where}.format: must be {FORMAT!r}, got "
                                  f"{data['format']!r}{hint}")
    if "version" in data and (not _is_int(data["version"]) or data["version"] != VERSION):
        raise ScheduleFormatError(f"{where}.version: this topocoll reads version {VERSION}, got "
                                  f"{data['version']!r}")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise ScheduleFormatError(f"{where}.name: must be a string, got {_kind(name)}")
    num_nodes = _require(data, "nodes", where)
    if not _is_int(num_nodes) or num_nodes < 1:
        shown = repr(num_nodes) if _is_int(num_nodes) else _kind(num_nodes)
        raise ScheduleFormatError(f"{where}.nodes: must be a whole number >= 1, got {shown}")
    return name, num_nodes


def _links(links, num_nodes, where):
    """Check the ``links`` list; return its ``(src, dst, bandwidth, latency)`` arrays."""
    count = len(links)
    src = np.empty(count, dtype=np.int64)
    dst = np.empty(count, dtype=np.int64)
    bandwidth = np.empty(count, dtype=np.float64)
    latency = np.empty(count, dtype=np.float64)
    for i, link in enumerate(links):
        at = f"{where}.links[{i}]"
        if not isinstance(link, dict):
            raise ScheduleFormatError(f"{at}: must be an object, got {_kind(link)}")
        s = _node(_require(link, "src", at), num_nodes, f"{at}.src")
        d = _node(_require(link, "dst", at), num_nodes, f"{at}.dst")
        if s == d:
            raise ScheduleFormatError(f"{at}: {s}->{d} is a self-loop; self-loops are not allowed")
        # like GraphML edges, links without bandwidth or latency get the defaults
        b = link.get("bandwidth", LINK_BANDWIDTH)
        if not _is_number(b) or b <= 0:
            raise ScheduleFormatError(f"{at}.bandwidth: must be a positive number, got "
                                      f"{b if _is_number(b) else _kind(b)}")
        l = link.get("latency", LINK_LATENCY)
        if not _is_number(l) or l < 0:
            raise ScheduleFormatError(f"{at}.latency: must be a non-negative number, got "
                                      f"{l if _is_number(l) else _kind(l)}")
        src[i], dst[i], bandwidth[i], latency[i] = s, d, b, l
    return src, dst, bandwidth, latency


def _switches(switches, num_nodes, where):
    """Check the ``switches`` list (distinct node ids); return it."""
    if not isinstance(switches, list):
        raise ScheduleFormatError(f"{where}.switches: must be a list, got {_kind(switches)}")
    seen = set()
    for j, node in enumerate(switches):
        _node(node, num_nodes, f"{where}.switches[{j}]")
        if node in seen:
            raise ScheduleFormatError(f"{where}.switches[{j}]: node {node} is listed more than "
                                      "once")
        seen.add(node)
    return switches


# ---------------------------------------------------------------------------------- files
def _path(path):
    from pathlib import Path   # only where a file is named (start-up time of the jobs)

    try:
        return Path(os.fspath(path))
    except TypeError:
        raise InputTypeError(f"a topology file path must be a string or path, got "
                             f"{type(path).__name__}") from None


def _known_suffix(path):
    """``.json`` or ``.graphml`` (after any ``.gz``), or None."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    suffix = os.path.splitext(name)[1]
    return suffix if suffix in _SUFFIXES else None


def _suffix(path):
    suffix = _known_suffix(path)
    if suffix is None:
        name = path.name.lower().removesuffix(".gz")
        suffix = os.path.splitext(name)[1]
        raise ScheduleFormatError(f"{path}: unknown topology file type {suffix or '(none)'!r}; "
                                  "use .json or .graphml (optionally + .gz)")
    return suffix


def _first_line(err):
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def load_topology(path):
    """Read a topology from a ``.json`` (topocoll.topology) or ``.graphml`` file, either one
    optionally gzip-compressed (``.json.gz``); ``-`` reads standard input, and a FIFO, a device
    or a descriptor (``/dev/stdin``, bash's ``<(...)``) without one of those names is read too:
    JSON or GraphML, told apart by the first byte.

    Raises
    ------
    ScheduleFormatError
        The file is missing, unreadable, not JSON/GraphML, or breaks the format (names the field).
    """
    stdin = isinstance(path, str) and path == "-"
    path = _path("stdin") if stdin else _path(path)
    if stdin or (is_special(path) and _known_suffix(path) is None):
        # a stream (standard input, a pipe, <(...)) has no telling name: its first byte tells
        data = read_input("-" if stdin else path, starts=b"{<",
                          what="topology file (JSON or GraphML)")
        graphml = data.lstrip()[:1] == b"<"
    else:
        graphml = _suffix(path) == ".graphml"
        if graphml:   # its parser loaded first: the read's memory estimate starts above it
            import networkx  # noqa: F401
        data = read_input(path, starts=b"<" if graphml else b"{",
                          what="GraphML file" if graphml else "JSON topology file")
    if graphml:
        return _load_graphml(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScheduleFormatError(f"{path}: not a text file (not UTF-8)") from None
    doc = parse_json(text, what=path)
    try:
        topo = topology_from_dict(doc, where="topology")
    except ScheduleFormatError as err:
        raise ScheduleFormatError(f"{path}: {err}") from None
    if doc.get("name") is None:
        topo = topo.with_links(name=_stem(path))
    return topo


def _stem(path):
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    return os.path.splitext(name)[0]


def _undeclared_graphml_endpoint(data):
    """The first edge endpoint that no ``<node>`` declares, as ``(edge, node)``, or None."""
    import xml.etree.ElementTree as ET

    declared, edges = set(), []
    for element in ET.fromstring(data).iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "node":
            declared.add(element.get("id"))
        elif tag == "edge":
            edges.append((element.get("source"), element.get("target")))
    for edge in edges:
        for end in edge:
            if end not in declared:
                return edge, end
    return None


def _graphml_value(value, default, what, edge, path, *, positive):
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        rule = "a positive number" if positive else "a non-negative number"
        raise ScheduleFormatError(f"{path}: edge {edge[0]}->{edge[1]}: {what} must be {rule}, "
                                  f"got {value!r}")
    return number


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _load_graphml(data, path):
    import networkx as nx

    try:
        graph = nx.parse_graphml(data)
        undeclared = _undeclared_graphml_endpoint(data)
    except Exception as err:  # ParseError, NetworkXError, KeyError, ... from a bad file
        raise ScheduleFormatError(f"{path}: not readable GraphML ({_first_line(err)})") from None
    if undeclared is not None:
        (u, v), end = undeclared
        raise ScheduleFormatError(f"{path}: edge {u}->{v}: node {end!r} is not declared (every "
                                  "edge endpoint needs a <node> element)")
    nodes = list(graph.nodes)
    if not nodes:
        raise ScheduleFormatError(f"{path}: the graph has no nodes")
    if all(_is_int(v) or (isinstance(v, str) and _WHOLE.match(v)) for v in nodes):
        nodes.sort(key=int)
    index = {v: i for i, v in enumerate(nodes)}
    src, dst, bws, lats = [], [], [], []
    for u, v, data in graph.edges(data=True):
        b = _graphml_value(data.get("bandwidth"), LINK_BANDWIDTH, "bandwidth", (u, v), path,
                           positive=True)
        l = _graphml_value(data.get("latency"), LINK_LATENCY, "latency", (u, v), path,
                           positive=False)
        ends = [(u, v)] if graph.is_directed() else [(u, v), (v, u)]
        for a, c in ends:
            src.append(index[a])
            dst.append(index[c])
            bws.append(b)
            lats.append(l)
    meta = {}
    raw = graph.graph.get(_META_KEY)
    if isinstance(raw, str):
        try:
            meta = parse_json(raw)
        except ScheduleFormatError:
            meta = {}
        if not isinstance(meta, dict):
            meta = {}
    switches = [index[v] for v, d in graph.nodes(data=True) if _truthy(d.get("switch", False))]
    name = graph.graph.get("name") or _stem(path)
    return Topology(len(nodes), src, dst, bws, lats, name=str(name), switches=switches,
                    drop_self_loops=True, meta=meta)


def _jsonable(value):
    """``value`` with numpy scalars/arrays and tuples turned into JSON types."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _meta_for_file(meta):
    """The JSON-representable part of ``meta`` (entries that are not are left out)."""
    out = {}
    for key, value in meta.items():
        try:
            value = _jsonable(value)
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        out[str(key)] = value
    return out


def _json_text(topo):
    data = topo.to_dict()
    meta = _meta_for_file(topo.meta)
    if meta:
        data["meta"] = meta
    parts = []
    for key, value in data.items():
        if key == "links" and value:
            body = ",\n".join("  " + json.dumps(link) for link in value)
            parts.append(f' "links": [\n{body}\n ]')
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def save_topology(topology, path):
    """Write ``topology`` to a ``.json`` (topocoll.topology, one link per line) or ``.graphml``
    file, gzip-compressed when the name ends in ``.gz``; ``-`` writes JSON to standard output.
    ``meta`` is kept where it is JSON data (in GraphML as the graph attribute
    ``topocoll_meta``). Files are written as :func:`topocoll.fileio.open_output` describes
    (atomically; symlinks followed; FIFOs and devices streamed into).

    Raises
    ------
    ScheduleFormatError
        Unknown suffix, or the file cannot be written.
    """
    if not isinstance(topology, Topology):
        raise InputTypeError(f"save_topology needs a Topology, got {type(topology).__name__}")
    if isinstance(path, str) and path == "-":
        suffix = ".json"
    else:
        path = _path(path)
        if is_special(path):   # a FIFO or device: JSON unless the name says GraphML
            suffix = _known_suffix(path) or ".json"
        else:
            suffix = _suffix(path)
        check_output(path)
    if suffix == ".json":
        data = _json_text(topology).encode("utf-8")
    else:
        import networkx as nx

        graph = topology.to_networkx()
        meta = _meta_for_file(topology.meta)
        if meta:
            graph.graph[_META_KEY] = json.dumps(meta)
        data = "\n".join(nx.generate_graphml(graph)).encode("utf-8") + b"\n"
    with open_output(path) as fh:
        fh.write(data)
