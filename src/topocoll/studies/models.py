"""Training profiles of well-known models, computed from their architecture definitions.

Each model is written out layer by layer (a layer is a module whose parameters form one
gradient: a convolution with its batch norm, a linear layer, a layer norm, an embedding); its
parameter count and forward FLOPs per sample follow from the shapes. :func:`model_profile` turns
them into a :class:`~topocoll.studies.gradient_profile.Profile` for one GPU and batch.

The models and what they count:

``resnet50``
    torchvision's ResNet-50 (v1.5: the stride in the 3x3 convolution of a bottleneck), 224x224
    images, the 1000-class classifier: 25,557,032 parameters.
``bert-large``
    BERT-large, uncased vocabulary of 30,522 (Devlin et al., NAACL 2019): embeddings (word,
    position 512, token type 2, layer norm), 24 encoder layers of width 1024 (16 heads, MLP
    4096) and the pooler (a 1024x1024 dense layer), as Hugging Face's ``BertModel``:
    335,141,888 parameters (334,092,288 without the pooler). No pre-training or task heads.
``gpt2-medium``
    GPT-2 medium (Radford et al., 2019): vocabulary 50,257, context 1024, 24 blocks of width
    1024, the final layer norm; the language-model head shares the token embedding (tied), so
    its weights are counted once, with the embedding, and its FLOPs are counted: 354,823,168
    parameters. The tied embedding's gradient is complete only when backpropagation reaches the
    embedding, so it is ready last.
``vit-b16``
    ViT-B/16 (Dosovitskiy et al., ICLR 2021): 224x224 images in 16x16 patches (196 patches and a
    class token), 12 blocks of width 768 (12 heads, MLP 3072), the final layer norm and the
    1000-class head: 86,567,656 parameters.

The FLOPs model (forward, per sample; a multiply-add is 2 FLOPs):

* convolution: ``2 * k * k * c_in * c_out * H_out * W_out``;
* linear layer applied to T tokens: ``2 * (weight parameters) * T``;
* attention: the score and value products, ``4 * T^2 * width`` per layer (all heads);
* embeddings, normalization, activations, pooling and softmax: 0 (memory-bound, small).

The backward pass costs twice the forward (gradients of the inputs and of the weights). One
GPU runs at ``gpu_flops * efficiency`` (defaults: an NVIDIA A100's 312 TFLOP/s of fp16/bf16 dense
tensor-core throughput at 40%, :data:`topocoll.defaults.GPU_FLOPS` and
:data:`~topocoll.defaults.GPU_EFFICIENCY`). Gradients take ``bytes_per_param`` bytes per
parameter (default 4, fp32; ``"fp16"`` or ``"bf16"``: 2). Default batches per GPU: ResNet-50 64
images, BERT-large 8 sequences of 512 tokens, GPT-2 medium 8 sequences of 1024 tokens, ViT-B/16
64 images.

>>> [round(model_params(m) / 1e6, 3) for m in MODELS]
[25.557, 335.142, 354.823, 86.568]
>>> p = model_profile("resnet50")
>>> p.layers[0].name, int(p.layers[0].bytes)        # the classifier's gradient is ready first
('fc', 8196000)
"""

from dataclasses import dataclass

from .. import defaults
from ..errors import InputTypeError, UnsupportedError
from ..units import format_size, format_time, real_number, whole_number
from .gradient_profile import Profile, ProfileLayer
from .workloads import TrainingWorkload, WorkloadLayer

__all__ = ["MODELS", "ModelLayer", "model_layers", "model_params", "model_profile",
           "model_flops", "model_workload", "efficiency_text", "DTYPE_BYTES", "FLOPS_MODEL"]

#: The ``compute_model`` of :func:`model_workload`'s workloads.
FLOPS_MODEL = "flops"

#: Bytes per gradient value by name.
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class ModelLayer:
    """One layer in forward order: ``params`` (its gradient, values) and ``flops``, the forward
    FLOPs for one sample."""

    name: str
    params: int
    flops: float


# ---------------------------------------------------------------------- ResNet-50
def _conv_bn(name, k, cin, cout, out_hw):
    """A k x k convolution without bias and its batch norm (weight and bias)."""
    return ModelLayer(name, k * k * cin * cout + 2 * cout, 2.0 * k * k * cin * cout * out_hw ** 2)


def resnet50_layers(image=224, classes=1000):
    """ResNet-50's layers in forward order (torchvision v1.5)."""
    hw = image // 2                                   # conv1, stride 2
    layers = [_conv_bn("conv1", 7, 3, 64, hw)]
    hw //= 2                                          # max pool, stride 2
    cin = 64
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], 1):
        out = 4 * width
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 1) else 1
            pre = f"layer{stage}.{b}"
            layers.append(_conv_bn(f"{pre}.conv1", 1, cin, width, hw))
            hw_out = hw // stride
            layers.append(_conv_bn(f"{pre}.conv2", 3, width, width, hw_out))
            layers.append(_conv_bn(f"{pre}.conv3", 1, width, out, hw_out))
            if b == 0:
                layers.append(_conv_bn(f"{pre}.downsample", 1, cin, out, hw_out))
            cin, hw = out, hw_out
    layers.append(ModelLayer("fc", cin * classes + classes, 2.0 * cin * classes))
    return layers


# ---------------------------------------------------------------------- transformers
def _linear(name, fan_in, fan_out, tokens):
    return ModelLayer(name, fan_in * fan_out + fan_out, 2.0 * fan_in * fan_out * tokens)


def _norm(name, width):
    return ModelLayer(name, 2 * width, 0.0)


def _attention_block(pre, width, mlp, tokens, *, pre_norm):
    """One transformer block: fused QKV, the score and value products, output projection, MLP,
    two layer norms (before the attention and the MLP, or after them)."""
    attn = _linear(f"{pre}.attn.qkv", width, 3 * width, tokens)
    attn = ModelLayer(attn.name, attn.params, attn.flops + 4.0 * tokens * tokens * width)
    proj = _linear(f"{pre}.attn.proj", width, width, tokens)
    fc1 = _linear(f"{pre}.mlp.fc1", width, mlp, tokens)
    fc2 = _linear(f"{pre}.mlp.fc2", mlp, width, tokens)
    ln1, ln2 = _norm(f"{pre}.ln1", width), _norm(f"{pre}.ln2", width)
    if pre_norm:
        return [ln1, attn, proj, ln2, fc1, fc2]
    return [attn, proj, ln1, fc1, fc2, ln2]


def bert_large_layers(seq=512, vocab=30522, pooler=True):
    """BERT-large's layers in forward order (post-norm; with the pooler unless told not)."""
    width, mlp = 1024, 4096
    layers = [ModelLayer("embeddings.word", vocab * width, 0.0),
              ModelLayer("embeddings.position", 512 * width, 0.0),
              ModelLayer("embeddings.token_type", 2 * width, 0.0),
              _norm("embeddings.ln", width)]
    for i in range(24):
        layers += _attention_block(f"encoder.{i}", width, mlp, seq, pre_norm=False)
    if pooler:
        layers.append(_linear("pooler", width, width, 1))   # the [CLS] token only
    return layers


def gpt2_medium_layers(seq=1024, vocab=50257):
    """GPT-2 medium's layers in forward order; the language-model head is tied to the token
    embedding, so it is a layer of no parameters of its own (its FLOPs count)."""
    width, mlp = 1024, 4096
    layers = [ModelLayer("wte", vocab * width, 0.0), ModelLayer("wpe", 1024 * width, 0.0)]
    for i in range(24):
        layers += _attention_block(f"h.{i}", width, mlp, seq, pre_norm=True)
    layers.append(_norm("ln_f", width))
    layers.append(ModelLayer("lm_head (tied to wte)", 0, 2.0 * width * vocab * seq))
    return layers


def vit_b16_layers(image=224, patch=16, classes=1000):
    """ViT-B/16's layers in forward order (pre-norm)."""
    width, mlp = 768, 3072
    patches = (image // patch) ** 2
    tokens = patches + 1
    layers = [ModelLayer("patch_embed", patch * patch * 3 * width + width,
                         2.0 * patch * patch * 3 * width * patches),
              ModelLayer("cls_token", width, 0.0),
              ModelLayer("pos_embed", tokens * width, 0.0)]
    for i in range(12):
        layers += _attention_block(f"blocks.{i}", width, mlp, tokens, pre_norm=True)
    layers.append(_norm("norm", width))
    layers.append(_linear("head", width, classes, 1))       # the class token only
    return layers


#: name -> (layers function, default batch per GPU, description of a sample)
MODELS = {
    "resnet50": (resnet50_layers, 64, "224x224 image"),
    "bert-large": (bert_large_layers, 8, "512-token sequence"),
    "gpt2-medium": (gpt2_medium_layers, 8, "1024-token sequence"),
    "vit-b16": (vit_b16_layers, 64, "224x224 image"),
}


def _model(name):
    if not isinstance(name, str):
        raise InputTypeError(f"model must be a name, got {name!r}")
    if name not in MODELS:
        raise UnsupportedError(f"unknown model {name!r}; known: {', '.join(MODELS)} (or a "
                               "profile file)")
    return MODELS[name]


def model_layers(name):
    """The layers of model ``name`` in forward order (:class:`ModelLayer`)."""
    return list(_model(name)[0]())


def model_params(name):
    """Parameter count of model ``name`` (tied weights once).

    >>> model_params("gpt2-medium")
    354823168
    """
    return sum(layer.params for layer in model_layers(name))


def model_flops(name):
    """Forward FLOPs of one sample of model ``name``.

    >>> round(model_flops("resnet50") / 1e9, 2)      # about 4.1 G multiply-adds
    8.18
    """
    return sum(layer.flops for layer in model_layers(name))


def _dtype_bytes(value):
    if isinstance(value, str):
        if value not in DTYPE_BYTES:
            raise UnsupportedError(f"unknown gradient type {value!r}; use one of "
                                   f"{', '.join(DTYPE_BYTES)} or a number of bytes")
        return DTYPE_BYTES[value]
    real_number(value, "bytes per parameter", above=0)
    return value


def model_profile(name, *, batch=None, gpu_flops=None, efficiency=None, bytes_per_param=None):
    """The training profile of model ``name`` on one GPU.

    Parameters
    ----------
    name : str
        One of :data:`MODELS`.
    batch : int, optional
        Samples per GPU per iteration (default: the model's, see the module docstring).
    gpu_flops : float, optional
        Peak FLOP/s of the GPU (default :data:`topocoll.defaults.GPU_FLOPS`, 312e12).
    efficiency : float, optional
        Fraction of the peak achieved, in (0, 1] (default
        :data:`topocoll.defaults.GPU_EFFICIENCY`, 0.4).
    bytes_per_param : int or str, optional
        Bytes per gradient value, or ``"fp32"``, ``"fp16"``, ``"bf16"`` (default 4).

    Returns
    -------
    Profile
        Gradients in backward order; a layer's ready time is the forward time plus the backward
        time of every layer from the last one down to it (backward = 2 x forward FLOPs).

    Examples
    --------
    >>> p = model_profile("vit-b16", batch=1, gpu_flops=1e12, efficiency=1.0)
    >>> p.layers[0].name, round(p.forward_time, 4), round(p.compute_time / p.forward_time, 6)
    ('head', 0.0351, 3.0)
    """
    func, default_batch, _ = _model(name)
    batch = default_batch if batch is None else batch
    batch = whole_number(batch, "batch")
    gpu_flops = real_number(defaults.GPU_FLOPS if gpu_flops is None else gpu_flops,
                            "GPU throughput (FLOP/s)", above=0)
    efficiency = real_number(defaults.GPU_EFFICIENCY if efficiency is None else efficiency,
                             "efficiency", above=0, most=1)
    width = _dtype_bytes(defaults.BYTES_PER_PARAM if bytes_per_param is None
                         else bytes_per_param)
    rate = float(gpu_flops) * float(efficiency)
    layers = func()
    forward = sum(layer.flops for layer in layers) * batch / rate
    t = forward
    ready = []
    for layer in reversed(layers):
        t += 2.0 * layer.flops * batch / rate
        if layer.params:
            ready.append(ProfileLayer(layer.name, float(layer.params * width), t))
    description = (f"{name}: {sum(x.params for x in layers):,} parameters, batch {batch}, "
                   f"{rate / 1e12:g} TFLOP/s effective, {width} bytes per gradient value; "
                   f"forward {format_time(forward)}, backward {format_time(t - forward)}, "
                   f"{format_size(sum(x.bytes for x in ready))} of gradients")
    return Profile(name, tuple(ready), t, forward, description)


def model_workload(name, *, batch=None, gpu_flops=None, efficiency=None, bytes_per_param=None):
    """Model ``name`` as a :class:`~topocoll.studies.workloads.TrainingWorkload` of the DATA
    loop, from the FLOPs model (same options as :func:`model_profile`): each layer's forward is
    its FLOPs times the batch at ``gpu_flops * efficiency``, its input gradient and its weight
    gradient each take as long as its forward (backward = 2 x forward), and its gradient is one
    allreduce of ``params * bytes_per_param`` bytes.

    >>> w = model_workload("resnet50", batch=1, gpu_flops=1e12, efficiency=1.0)
    >>> w.compute_model, w.layers[0].name, round(w.layers[0].input_grad / w.layers[0].forward)
    ('flops', 'conv1', 1)
    """
    p = model_profile(name, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                      bytes_per_param=bytes_per_param)
    func, default_batch, _ = _model(name)
    batch = default_batch if batch is None else batch
    width = _dtype_bytes(defaults.BYTES_PER_PARAM if bytes_per_param is None
                         else bytes_per_param)
    rate = float(defaults.GPU_FLOPS if gpu_flops is None else gpu_flops) * float(
        defaults.GPU_EFFICIENCY if efficiency is None else efficiency)
    layers = []
    for layer in func():
        t = layer.flops * batch / rate
        grad = ("allreduce", float(layer.params * width)) if layer.params else None
        layers.append(WorkloadLayer(layer.name, t, t, t, None, None, grad))
    how = (f"FLOPs model: {rate / 1e12:g} TFLOP/s effective "
           f"({efficiency_text(gpu_flops, efficiency)}), backward = 2 x forward")
    return TrainingWorkload(name, tuple(layers), "data", FLOPS_MODEL,
                            f"{p.description}; {how}", "DATA")


def efficiency_text(gpu_flops=None, efficiency=None):
    """``"40% of 312 TFLOP/s"``: the FLOPs model's rate in words."""
    peak = float(defaults.GPU_FLOPS if gpu_flops is None else gpu_flops)
    eff = float(defaults.GPU_EFFICIENCY if efficiency is None else efficiency)
    return f"{eff * 100:g}% of {peak / 1e12:g} TFLOP/s peak"
