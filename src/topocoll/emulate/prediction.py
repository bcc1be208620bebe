"""What the model predicts on an emulated network: the same links, rates and routes, with the
calibrated constants.

Links carry ``rate x goodput_ratio`` bytes per second (:class:`~topocoll.emulate.calibrate.
Calibration`), less the share that the acknowledgements of the opposite direction take
(:func:`ack_share`: one 66-byte acknowledgement per two full frames, 0.05% at the default MTU).

* A topocoll schedule runs on the network it was made for: every transfer crosses one link.
  :func:`schedule_model_time` is the TACOS link model
  (:func:`topocoll.schedule.linkmodel.simulate`) on those links, with ``alpha`` per message.
* Flows between endpoints that are not neighbours follow the installed routes.
  :func:`flows_model_time` prices a set of concurrent flows as the gossip cost model does
  (docs/math.md section 1), on single-path routes: the busiest link's bytes over its goodput,
  plus per flow its steps x the latency of its route (``alpha + (h - 1) hop_delay``).
* torch's collectives over gloo run rings in rank order, :func:`torch_model_time`: gloo's
  allreduce (``gloo/allreduce.cc``) reduce-scatters then allgathers around the ring, ``2(n-1)``
  steps of ``M/n``, each rank sending to rank ``r - 1``; its allgather (``gloo/allgather.cc``)
  takes ``n-1`` steps, each rank sending to rank ``r + 1``. The direction matters on a digraph:
  on ``uniring:8`` every allreduce message of gloo goes seven hops the long way round.
* A gossip iteration sends, from every rank to every out-neighbour of ``W_k``, its whole
  buffer: :func:`gossip_model_time`.
* A hierarchical step (:func:`~topocoll.runtime.hierarchical_neighbor_allreduce`) is three
  phases one after the other (:func:`~topocoll.gossip.cost.hierarchical_messages`): a
  reduce-scatter inside every machine, ``1/L`` of the buffer per rank between machines (the
  ``L`` ranks of a machine at once, sharing its links), an all-gather inside every machine:
  :func:`hierarchical_model_time` adds the three.
"""

import numpy as np

from ..errors import TopologyError

__all__ = ["ack_share", "link_goodputs", "schedule_model_time", "flows_model_time",
           "torch_model_time", "gossip_model_time", "hierarchical_model_time", "TORCH_RINGS"]

#: Bytes of a TCP acknowledgement on the wire (Ethernet, IPv4, TCP with timestamps).
_ACK_FRAME = 66
#: IPv4 and TCP headers (with timestamps) inside each frame.
_TCP_IP_HEADERS = 52
#: torch's collectives over gloo that run a ring in rank order: bytes per rank as a share of
#: the buffer M (the allgather's output), ring steps for n ranks, and the rank each rank sends
#: to, as an offset (facebookincubator/gloo: allreduce.cc sends to rank - 1, allgather.cc to
#: rank + 1).
TORCH_RINGS = {"allreduce": (lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1), -1),
               "allgather": (lambda n: (n - 1) / n, lambda n: n - 1, +1)}


def ack_share(mtu):
    """Bytes of acknowledgements per byte of data in the other direction."""
    return _ACK_FRAME / (2.0 * (int(mtu) - _TCP_IP_HEADERS))


def link_goodputs(plan, calibration):
    """Bytes per second each topology link carries in the model."""
    return plan.link_rates() * calibration.goodput_ratio * (1.0 - ack_share(plan.mtu))


def schedule_model_time(schedule, plan, calibration, size):
    """The link model's time (seconds) of ``schedule`` on the emulated network ``plan``,
    whose topology must be the schedule's own (same links)."""
    from ..schedule.linkmodel import simulate

    topo = schedule.topology
    net = plan.topology
    if (topo.num_nodes != net.num_nodes or topo.num_links != net.num_links
            or not (np.array_equal(topo.src, net.src) and np.array_equal(topo.dst, net.dst))):
        raise TopologyError(f"the schedule is for {topo.name}, the network is {net.name}: a "
                            "schedule runs on the network it was made for")
    timed = topo.with_links(bandwidth=link_goodputs(plan, calibration),
                            latency=calibration.alpha)
    return float(simulate(schedule.replace(topology=timed), float(size)).time)


def flows_model_time(plan, calibration, src, dst, nbytes, steps=1):
    """Seconds for concurrent flows ``src[i] -> dst[i]`` (network nodes) of ``nbytes[i]``
    bytes in ``steps[i]`` latency steps each, along the installed routes."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    if not keep.any():
        return 0.0
    nbytes = np.broadcast_to(np.asarray(nbytes, dtype=float), src.shape)[keep]
    steps = np.broadcast_to(np.asarray(steps, dtype=float), src.shape)[keep]
    src, dst = src[keep], dst[keep]
    load = plan.routes.loads(src, dst, nbytes)
    beta = float(np.max(load / link_goodputs(plan, calibration)))
    hops = plan.routes.hops[src, dst]
    alpha = float(np.max(steps * calibration.path_latency(hops)))
    return alpha + beta


def torch_model_time(collective, plan, calibration, size):
    """The model's time of torch's own ``collective`` over gloo on the emulated network (a
    ring in rank order), or None for a collective whose algorithm in gloo is not a ring."""
    if collective not in TORCH_RINGS:
        return None
    share, steps, offset = TORCH_RINGS[collective]
    n = plan.num_ranks
    nodes = np.asarray(plan.ranks, dtype=np.int64)
    return flows_model_time(plan, calibration, nodes, np.roll(nodes, -offset),
                            share(n) * float(size), steps(n))


def gossip_model_time(topology, iteration, plan, calibration, size):
    """The model's time of one neighbor averaging of ``topology`` (a
    :class:`~topocoll.gossip.GossipTopology` on the network's ranks) at ``iteration``."""
    from ..gossip.cost import iteration_messages

    src, dst, nbytes, steps = iteration_messages(topology, iteration, float(size), "neighbor")
    nodes = np.asarray(plan.ranks, dtype=np.int64)
    return flows_model_time(plan, calibration, nodes[src], nodes[dst], nbytes, steps)


def hierarchical_model_time(machine_topology, local_size, iteration, plan, calibration, size):
    """The model's time of one hierarchical step at ``iteration``: ``machine_topology`` (a
    :class:`~topocoll.gossip.GossipTopology` on the machines) over the network's ranks as
    machines of ``local_size`` ranks, machine-major; the sum of its three phases' times."""
    from ..gossip.cost import hierarchical_messages

    nodes = np.asarray(plan.ranks, dtype=np.int64)
    if machine_topology.size * int(local_size) != nodes.size:
        raise TopologyError(f"{machine_topology.size} machines of {local_size} ranks are not the "
                            f"{nodes.size} ranks of {plan.topology.name}")
    return sum(flows_model_time(plan, calibration, nodes[src], nodes[dst], nbytes, steps)
               for src, dst, nbytes, steps in hierarchical_messages(
                   machine_topology, local_size, iteration, float(size)))
