"""The model's constants measured on the emulated network itself.

The alpha-beta model of an emulated network needs what its links and the kernel's stack
actually do, not what they were told to do:

``goodput``
    Bytes per second a bulk TCP transfer gets over one shaped link (``goodput_ratio`` =
    goodput / the shaper's rate: frame headers, acknowledgements and the shaper's accounting).
``alpha``
    One-way seconds of a small message over one hop: the per-message cost of the stack
    (system calls, wake-ups, the veth, the acknowledgement's way back).
``hop_delay``
    Seconds each further hop adds to a bulk transfer: a forwarding node receives a whole
    frame before it sends it on (store and forward), about one frame's time at the link's rate,
    plus the forwarding itself.

:func:`calibrate` measures them once per network with the socket probes of
:mod:`~topocoll.emulate.probe`: small round trips and bulk transfers over one hop and, where
the network has one, a two-hop route; two bulk sizes separate the per-byte cost from the
per-transfer one. The model (:mod:`topocoll.emulate.prediction`) prices links at
``rate x goodput_ratio`` and a route of ``h`` hops at ``alpha + (h - 1) x hop_delay``.
The per-message cost of the runtime above the socket (Python, gloo) is not in ``alpha``; it
shows at small sizes, as measured / model above 1 (docs/emulate.md).
"""

import statistics
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .plan import frame_bytes
from .probe import time_transfers

__all__ = ["Calibration", "calibrate"]


@dataclass
class Calibration:
    """Constants of the emulated network's model (see the module text). Seconds, bytes/s."""

    rate: float
    goodput: float
    alpha: float
    hop_delay: float
    hop_delay_measured: bool
    pairs: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def goodput_ratio(self):
        return self.goodput / self.rate

    def path_latency(self, hops):
        """Seconds a route of ``hops`` hops adds to a transfer (array-friendly)."""
        hops = np.asarray(hops, dtype=float)
        return np.where(hops > 0, self.alpha + np.maximum(hops - 1, 0) * self.hop_delay, 0.0)

    def to_dict(self):
        out = asdict(self)
        out["goodput_ratio"] = self.goodput_ratio
        return out


def _median_time(results):
    return statistics.median(t for _, t in results)


def _two_hop_pair(plan, first):
    """A pair two hops apart, preferring routes from ``first`` (None if every pair is
    adjacent)."""
    hops = plan.routes.hops
    order = [first] + [u for u in range(plan.num_nodes) if u != first]
    for u in order:
        far = np.flatnonzero(hops[u] == 2)
        if far.size:
            return u, int(far[0])
    return None


def _fit(plan_sizes, got, small, repeats):
    """``(one-way small-message seconds, goodput, fixed seconds of a bulk transfer)`` from one
    probe's timings: the slope between the two bulk sizes is the goodput, the rest of the
    smaller transfer's time its fixed cost."""
    k = small[0][1]
    rtt = _median_time(got[2:k])          # the first round trips open the path
    bulk = plan_sizes[0][0]
    one = _median_time(got[k + 1:k + 1 + repeats])
    two = _median_time(got[k + 1 + repeats:])
    goodput = bulk / max(two - one, 1e-9)
    return rtt / 2, goodput, one - bulk / goodput


def calibrate(network, *, seconds=0.15, repeats=2):
    """Measure the :class:`Calibration` of a built
    :class:`~topocoll.emulate.network.EmulatedNetwork` (a few seconds at tens of Mbit/s:
    each bulk transfer takes about ``seconds``)."""
    plan = network.plan
    started = time.monotonic()
    cable = next(c for c in plan.cables if c.linked_ab)
    u, v = cable.a, cable.b
    rate = cable.rate_ab
    frame = frame_bytes(plan.mtu)
    bulk = int(max(8 * frame, rate * seconds))
    small = [(64, 2 * repeats + 5)]
    # the first bulk transfer starts on full token buckets: timed, then dropped
    sizes = [(bulk, repeats), (2 * bulk, repeats)]

    def measure(a, b):
        got = time_transfers(network.namespace(a), network.namespace(b), plan.address(b),
                             small + [(bulk, 1)] + sizes,
                             what=f"the calibration probe {a} -> {b}")
        return _fit(sizes, got, small, repeats)

    alpha, goodput, fixed1 = measure(u, v)
    pairs = [(u, v, 1)]
    far = _two_hop_pair(plan, u)
    if far is not None:
        _, _, fixed2 = measure(*far)
        hop_delay = max(0.0, fixed2 - fixed1)
        measured = True
        pairs.append((*far, 2))
    else:
        hop_delay = frame / rate      # not measurable here: one frame, stored and forwarded
        measured = False
    return Calibration(rate=rate, goodput=goodput, alpha=alpha, hop_delay=hop_delay,
                       hop_delay_measured=measured, pairs=pairs,
                       seconds=time.monotonic() - started)
