"""Near-ties at the kinks of piecewise-linear ops, and what they do to a
gradient.

ReLU, ReLU6/hardtanh/clamp, hardswish, hardsigmoid, leaky ReLU and max
pooling have kinks: an input on one side of 0 (or 6, or +-3, or the other
maximum of a pooling window) routes the gradient differently from one on the
other side. A float32 forward pass carries a rounding error (torch float32's
own error against float64 at that tensor, after many layers ~1e-5); an
element of a kink's input that lies closer to its kink than that error is
*undecidable* in float32: any float32 trainer, torch's on another CPU or
weft's, may put it on either side. On deep batch-norm networks at small
micro-batches (DenseNet-121, 64x64, M=2: a pre-ReLU value of 3e-6 where
float32's error is 4e-5) one such element changes a channel's gradient by
25% and every gradient upstream of it by ~1%.

The float64 reference is therefore not one answer but a set: this module
measures how far its gradient moves when every undecidable element is put on
the other side of its kink (`flip_sensitivity`), which the SGD-step oracle
adds to its tolerance. Elements are found by running the model twice, in
float32 and in float64, under a `TorchFunctionMode` that records each kink
op's input in call order.
"""

from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


def _kinks(name: str, args, kwargs) -> Optional[List[float]]:
    """The kink positions of elementwise op `name` called with args/kwargs,
    or None when `name` is not a piecewise-linear elementwise op."""
    def arg(i, key, default):
        if len(args) > i:
            return args[i]
        return kwargs.get(key, default)

    if name in ("relu", "relu_", "leaky_relu", "leaky_relu_", "relu6"):
        return [0.0] + ([6.0] if name == "relu6" else [])
    if name in ("hardtanh", "hardtanh_"):
        return [float(arg(1, "min_val", -1.0)), float(arg(2, "max_val", 1.0))]
    if name in ("clamp", "clamp_", "clip", "clip_"):
        return [float(v) for v in (arg(1, "min", None), arg(2, "max", None))
                if v is not None and not isinstance(v, torch.Tensor)]
    if name in ("hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_"):
        return [-3.0, 3.0]
    if name in ("threshold", "threshold_"):
        return [float(arg(1, "threshold", 0.0))]
    return None


def _pool_windows(x, kernel, stride, padding, dilation, ceil_mode):
    """[N, C, K, L] windows of a 2-d max pool (padding reads -inf)."""
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
    kernel, padding, dilation = pair(kernel), pair(padding), pair(dilation)
    stride = pair(stride) if stride not in (None, [], ()) else kernel
    n, c, h, w = x.shape
    extra = []
    for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        out = (size + 2 * p - span) / s + 1
        out = int(-(-out // 1)) if ceil_mode else int(out // 1)
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # torch: the last window must start inside the input
        extra.append(max(0, (out - 1) * s + span - (size + 2 * p)))
    padded = F.pad(x, (padding[1], padding[1] + extra[1],
                       padding[0], padding[0] + extra[0]), value=float("-inf"))
    cols = F.unfold(padded, kernel, dilation=dilation, stride=stride)
    k = kernel[0] * kernel[1]
    return cols.view(n, c, k, -1), padded.shape[2:], (kernel, stride, dilation,
                                                     padding)


class Recorder(TorchFunctionMode):
    """Records (float64 copies of) the input of every kink op, in call
    order, in `inputs`."""

    def __init__(self):
        super().__init__()
        self.inputs: List[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if _kinks(name, args, kwargs) is not None or name == "max_pool2d":
            self.inputs.append(args[0].detach().double().clone())
        return func(*args, **kwargs)


class _MaskedKink(torch.autograd.Function):
    """y = op(x) with op's own forward; the backward is op's, except that
    the elements of `flip` take the local slope from the other side of
    their kink."""

    @staticmethod
    def forward(ctx, x, y, slope, flipped_slope, flip):
        ctx.save_for_backward(torch.where(flip, flipped_slope, slope))
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        (slope,) = ctx.saved_tensors
        return grad * slope, None, None, None, None


def _slope(fn, x):
    """d fn / dx elementwise at x (fn piecewise-linear or smooth there)."""
    with torch.enable_grad():
        xr = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(xr).sum(), xr)
    return g


class Flipper(TorchFunctionMode):
    """Around a float64 run of the same model on the same micro-batches as a
    float32 run under `Recorder`: at each kink op whose input has elements
    within `factor` x float32's error of a kink (the float32 recording's
    distance from this run's input), the backward puts those elements on the
    other side of it. `undecidable` counts them."""

    def __init__(self, recorded32: List[torch.Tensor], factor: float):
        super().__init__()
        self.recorded32 = recorded32
        self.factor = factor
        self.index = 0
        self.undecidable = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        kinks = _kinks(name, args, kwargs)
        if kinks is None and name != "max_pool2d":
            return func(*args, **kwargs)
        x = args[0]
        x32 = self.recorded32[self.index]
        self.index += 1
        band = self.factor * (x32 - x.detach()).abs().max().item()
        if name == "max_pool2d":
            return self._pool(func, args, kwargs, x, x32, band)
        inplace = name.endswith("_") or kwargs.get("inplace", False)
        if inplace:  # keep the autograd graph simple: out of place
            name, kwargs = name.rstrip("_"), {k: v for k, v in kwargs.items()
                                              if k != "inplace"}
            func = getattr(torch.nn.functional, name, None) or getattr(torch, name)
        y = func(*((x,) + tuple(args[1:])), **kwargs)
        near = torch.zeros_like(x, dtype=torch.bool)
        for k in kinks:
            near |= (x.detach() - k).abs() <= band
        self.undecidable += int(near.sum())
        if not near.any():
            return y
        fn = lambda t: func(*((t,) + tuple(args[1:])), **kwargs)
        slope = _slope(fn, x.detach())
        # The other side's slope: at the mirror image across the nearest
        # kink (an element exactly at it, which torch puts below, goes above).
        xd = x.detach()
        candidates = torch.stack([torch.full_like(xd, k) for k in kinks])
        nearest = candidates.gather(
            0, (xd - candidates).abs().argmin(0, keepdim=True))[0]
        offset = xd - nearest
        flipped = _slope(fn, nearest - torch.where(offset == 0, -1e-9, offset))
        return _MaskedKink.apply(x, y, slope, flipped, near)

    def _pool(self, func, args, kwargs, x, x32, band):
        names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
        params = dict(zip(names, (2, None, 0, 1, False)))
        params.update(dict(zip(names, args[1:])))
        params.update({k: v for k, v in kwargs.items() if k in names})
        y = func(x, **{k: v for k, v in params.items()})
        cols, padded_hw, geometry = _pool_windows(
            x.detach(), params["kernel_size"], params["stride"],
            params["padding"], params["dilation"], params["ceil_mode"])
        top = cols.topk(2, dim=2)
        near = (top.values[:, :, 0] - top.values[:, :, 1]) <= band
        near &= torch.isfinite(top.values[:, :, 1])
        # Exact ties are decided alike by every trainer (the first maximum).
        near &= top.values[:, :, 0] != top.values[:, :, 1]
        self.undecidable += int(near.sum())
        if not near.any():
            return y
        chosen = torch.where(near, top.indices[:, :, 1], top.indices[:, :, 0])
        return _RoutedPool.apply(x, y, chosen, cols.shape, padded_hw, geometry)


class _RoutedPool(torch.autograd.Function):
    """max_pool2d whose backward sends each window's gradient to `chosen`."""

    @staticmethod
    def forward(ctx, x, y, chosen, cols_shape, padded_hw, geometry):
        ctx.chosen, ctx.cols_shape = chosen, cols_shape
        ctx.padded_hw, ctx.geometry, ctx.x_hw = padded_hw, geometry, x.shape[2:]
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        n, c, k, length = ctx.cols_shape
        kernel, stride, dilation, padding = ctx.geometry
        cols = torch.zeros(n, c, k, length, dtype=grad.dtype)
        cols.scatter_(2, ctx.chosen.unsqueeze(2), grad.reshape(n, c, 1, length))
        folded = F.fold(cols.view(n, c * k, length), ctx.padded_hw, kernel,
                        dilation=dilation, stride=stride)
        h, w = ctx.x_hw
        dx = folded[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w]
        return dx, None, None, None, None, None
