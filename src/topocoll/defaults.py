"""The one default cluster: what every job assumes when the user does not say.

Every link of every topology gets :data:`LINK_BANDWIDTH` (100 Gbps) and :data:`LINK_LATENCY`
(10 us): the speed users give is their link speed, topologies built from spec strings carry it,
and every command prices with it unless told otherwise (``schedule``, ``evaluate``,
``simulate``, ``synth``, and also ``compare``, ``survey``, ``find`` and ``train-sim``), so one
schedule has one time whichever command prices it. ``--link-bandwidth`` sets another link
speed; ``--node-bandwidth`` (:data:`NODE_BANDWIDTH` in the examples) asks for the fair-comparison
convention of the NSDI 2025 paper instead: every node gets that egress, split evenly over its
out-links, whatever its degree. On a d-regular topology the default equals a node bandwidth of
``d * LINK_BANDWIDTH``. :data:`ALPHA` is the latency of every link.
Buffer sizes default to :data:`SIZE`, except where a job needs several (:data:`COMPARE_SIZES`,
:data:`SURVEY_SIZES`) or follows the paper it reproduces (:data:`SYNTHESIS_SIZE`, TACOS). Training-iteration simulation (``train-sim``) assumes PyTorch
DDP's :data:`BUCKET_SIZE`, an NVIDIA A100 (:data:`GPU_FLOPS` at :data:`GPU_EFFICIENCY`), fp32
gradients (:data:`BYTES_PER_PARAM`) and ASTRA-sim cycles of :data:`CYCLE_TIME`.

>>> from topocoll.units import format_bandwidth, format_size, format_time
>>> format_time(ALPHA), format_bandwidth(LINK_BANDWIDTH), format_size(SIZE)
('10us', '100Gbps', '1MiB')
"""

from .errors import UnsupportedError
from .units import format_bandwidth, parse_bandwidth

__all__ = ["ALPHA", "LINK_LATENCY", "LINK_BANDWIDTH", "NODE_BANDWIDTH", "SIZE", "COMPARE_SIZES",
           "SURVEY_SIZES", "SYNTHESIS_SIZE", "BUCKET_SIZE", "GPU_FLOPS", "GPU_EFFICIENCY",
           "BYTES_PER_PARAM", "CYCLE_TIME", "bandwidth_convention", "describe_convention"]

#: Latency of every link (the alpha of the alpha-beta model): 10 us.
ALPHA = 1e-5
#: Latency of a link of a topology built from a spec: the same 10 us.
LINK_LATENCY = ALPHA
#: Bandwidth of a link of a topology built from a spec: 100 Gbps (12.5 GB/s).
LINK_BANDWIDTH = 12.5e9
#: The node bandwidth of the paper's fair-comparison convention (``--node-bandwidth``, never a
#: default): every node's egress, split over its out-links, 100 Gbps.
NODE_BANDWIDTH = 12.5e9
#: Buffer size M of one collective: 1 MiB.
SIZE = float(2**20)
#: Buffer sizes ``compare`` prices: 1 KiB, 1 MiB, 64 MiB and 1 GiB.
COMPARE_SIZES = (2**10, 2**20, 2**26, 2**30)
#: Buffer sizes ``survey`` prices: 1 MiB and 256 MiB.
SURVEY_SIZES = (2**20, 2**28)
#: Buffer size TEN synthesis discretizes links for: 1 GiB, as in the TACOS paper.
SYNTHESIS_SIZE = float(2**30)
#: Gradient bucket of PyTorch DistributedDataParallel (``bucket_cap_mb``): 25 MiB.
BUCKET_SIZE = float(25 * 2**20)
#: Peak throughput of one GPU for the training FLOPs model: 312 TFLOP/s (NVIDIA A100, fp16/bf16
#: dense tensor cores).
GPU_FLOPS = 312e12
#: Fraction of :data:`GPU_FLOPS` a training step achieves: 40%.
GPU_EFFICIENCY = 0.4
#: Bytes of one gradient value: 4 (fp32).
BYTES_PER_PARAM = 4
#: Length of one ASTRA-sim cycle when its workload files are read: 1 ns (a 1 GHz clock).
CYCLE_TIME = 1e-9


def bandwidth_convention(node_bandwidth=None, link_bandwidth=None):
    """``(B, L)`` as floats, exactly one of them given: a node's egress ``node_bandwidth``
    split over its links (the paper's convention; ``L`` None), or every link's
    ``link_bandwidth`` (``B`` None), by default :data:`LINK_BANDWIDTH`.

    >>> bandwidth_convention(), bandwidth_convention("1GB/s")
    ((None, 12500000000.0), (1000000000.0, None))
    """
    if node_bandwidth is not None and link_bandwidth is not None:
        raise UnsupportedError("give node_bandwidth or link_bandwidth, not both")
    if node_bandwidth is not None:
        return float(parse_bandwidth(node_bandwidth, what="node bandwidth")), None
    return None, float(parse_bandwidth(LINK_BANDWIDTH if link_bandwidth is None
                                       else link_bandwidth, what="link bandwidth"))


def describe_convention(node_bandwidth=None, link_bandwidth=None):
    """The bandwidth convention in words, as every table and JSON document names it: the link
    speed where ``link_bandwidth`` is given, else the node egress where ``node_bandwidth`` is,
    else the default link speed.

    >>> describe_convention(), describe_convention(50e9, 12.5e9), describe_convention(12.5e9)
    ('100Gbps per link', '100Gbps per link', '100Gbps per node')
    """
    if link_bandwidth is None and node_bandwidth is not None:
        return f"{format_bandwidth(parse_bandwidth(node_bandwidth))} per node"
    link = LINK_BANDWIDTH if link_bandwidth is None else link_bandwidth
    return f"{format_bandwidth(parse_bandwidth(link))} per link"
