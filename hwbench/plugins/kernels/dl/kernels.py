"""``gemm``, ``conv2d``, ``conv2d-bw``, ``relu``, ``lstm``: DeepBench's primitives as hwbench kernels.

Each is written once against :mod:`hwbench.core.ops` (``matmul``, ``conv2d``, ``maximum``,
``exp``), so numpy runs it as the fp64 gold, JAX / TensorFlow compile it, and the accuracy
layer runs it under a device's numerics profile. The kernel contract is time-stepped: GEMM,
Conv2D and ReLU are one step whose state is the output; the LSTM steps through its sequence
(state = (h, c), input ``x[t]`` at step ``t``). ``size`` is the batch (DeepBench's N for GEMM).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UnavailableError, UsageError, unknown_name
from hwbench.core.kernel import Kernel, KernelInfo, Workload
from hwbench.core.ops import OpClass, Ops
from hwbench.plugins.kernels.dl.inputs import check_distribution, draw
from hwbench.plugins.kernels.dl.shapes import (
    CONV_CONFIGS,
    GEMM_CONFIGS,
    RELU_CONFIGS,
    RNN_CONFIGS,
    ConvShape,
    FlopCount,
    GemmShape,
    LstmShape,
    ReluShape,
    Shape,
)

SOURCE = "Emani et al., 'A Comprehensive Evaluation of Novel AI Accelerators for DL Workloads', PMBS 2022; DeepBench"
MATMUL_CLASSES = [OpClass.MATMUL_INPUT, OpClass.MATMUL_ACCUMULATE, OpClass.STORE]


@dataclass
class Inputs:
    """A workload's seeded arrays and its initial state (zeros of the output's shape)."""

    arrays: dict[str, np.ndarray]
    state0: Any


class DLKernel(Kernel):
    """A DL primitive: named configurations, free shapes, seeded inputs, FLOP counts."""

    configs: dict[str, Shape]
    shape_type: type[Shape]

    def shape(self, config: str | None = None, batch: int | None = None, **dims: int) -> Shape:
        """The shape of a named configuration (or of free ``dims``), batch optionally replaced.

        ``dims`` (``run --set m=64``) must be the shape's own fields, each an integer >= 0 (paddings may be 0).
        """
        fields = list(_fields(next(iter(self.configs.values()))))
        for key, value in dims.items():
            if key not in fields:
                settable = ", ".join(["config", "dist", *fields])
                raise UsageError(f"kernel '{self.name}' has no parameter {key}; settable: {settable}")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{self.name} dimension '{key}' must be an integer >= 0, got {str(value)[:40]!r}")
        if config is not None:
            if config not in self.configs:
                raise unknown_name(f"configuration of kernel '{self.name}'", config, list(self.configs))
            shape = self.configs[config]
            if dims:
                shape = type(shape)(**{**_fields(shape), **dims})
        else:
            try:
                shape = self.shape_type(**{**_fields(next(iter(self.configs.values()))), **dims})
            except TypeError as exc:
                raise UsageError(f"{self.name}: bad shape {dims}: {exc}") from None
        if batch is not None:
            shape = shape.with_batch(batch)
        if min(_fields(shape).values()) < 0 or shape.batch < 1:
            raise UsageError(f"{self.name}: dimensions must be positive, got {shape.describe()}")
        return shape

    def shape_of(self, workload: Workload) -> Shape:
        return self.shape_type(**workload.meta["shape"])

    def flops(self, workload: Workload) -> FlopCount:
        return self.shape_of(workload).flops()

    def steps(self, workload: Workload) -> int:
        """Kernel steps one run of the primitive takes (the LSTM: its sequence length)."""
        return 1

    def reduction_length(self, workload: Workload) -> int | None:
        """K of the error bound ``γ_K |A||B|`` (terms summed per output); None: no such bound."""
        return None

    def flops_per_step(self, workload: Workload) -> float:
        return self.flops(workload).real / self.steps(workload)

    def bytes_per_step(self, workload: Workload) -> float:
        return 4.0 * self.shape_of(workload).operand_elements() / self.steps(workload)

    def memory_estimate(self, size: int, *, connected: bool = True) -> int:
        return shape_bytes(self.shape(next(iter(self.configs)), batch=size), 8)

    def probe(self, state: Any) -> Any:
        return state.reshape(-1)

    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        import numpy as np

        config = overrides.pop("config", None)
        dist = check_distribution(overrides.pop("dist", "normal"))
        scaled_from = overrides.pop("scaled_from", None)
        batch = size if size and size > 0 else None
        shape = self.shape(config, batch, **overrides)
        _check_memory(shape)
        rng = np.random.default_rng(seed)
        inputs = self.build_inputs(shape, rng, dist)
        meta = {
            "config": config or "custom",
            "shape": _fields(shape),
            "dist": dist,
            "seed": seed,
            "batch_scaled_from": scaled_from,
            "connected": False,
        }
        params = self.static_params(shape)
        size = int(np.prod(np.shape(_first(inputs.state0))))
        return Workload(self.name, size, meta, params, inputs.arrays, inputs.state0)

    def static_params(self, shape: Shape) -> dict[str, Any]:
        return {}

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        raise NotImplementedError


def _check_memory(shape: Shape) -> None:
    """Free dimensions (``run --set m=99999999999``) are refused before their arrays are drawn."""
    from hwbench.core.host import GIB, available_memory_bytes

    need, have = shape_bytes(shape, 8), available_memory_bytes()
    if need > have // 2:
        raise UnavailableError(
            f"{shape.describe()} needs about {need / GIB:,.1f} GiB for its operands; {have / GIB:.1f} GiB is available"
        )


def _fields(shape: Shape) -> dict[str, int]:
    return {k: int(v) for k, v in asdict(shape).items()}


def _first(state: Any) -> Any:
    return state[0] if isinstance(state, tuple) else state


def shape_bytes(shape: Shape, itemsize: int, *, patches: bool = False) -> int:
    """Host bytes for operands and output at ``itemsize`` (plus im2col patches if asked)."""
    extra = shape.patch_elements() if patches and isinstance(shape, ConvShape) else 0
    return int(itemsize * (shape.operand_elements() + extra))


class GemmKernel(DLKernel):
    info = KernelInfo(
        name="gemm",
        summary="DeepBench GEMM C = A @ B (gemm_k1..k4 or free M,N,K)",
        family="dl",
        state_names=["C"],
        probe="C",
        op_classes=MATMUL_CLASSES,
        sources=[SOURCE],
    )
    configs = GEMM_CONFIGS
    shape_type = GemmShape

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        import numpy as np

        assert isinstance(shape, GemmShape)
        a = draw(rng, (shape.m, shape.k), dist)
        b = draw(rng, (shape.k, shape.n), dist)
        return Inputs({"A": a, "B": b}, np.zeros((shape.m, shape.n)))

    def reduction_length(self, workload: Workload) -> int | None:
        return int(workload.meta["shape"]["k"])

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        return ops.matmul(params["A"], params["B"])


class Conv2dKernel(DLKernel):
    """Forward Conv2D, NHWC input, HWIO filters, stride 1."""

    info = KernelInfo(
        name="conv2d",
        summary="DeepBench Conv2D forward, NHWC, stride 1 (conv_k1..k4 or free shape)",
        family="dl",
        state_names=["y"],
        probe="y",
        op_classes=MATMUL_CLASSES,
        sources=[SOURCE],
    )
    configs = CONV_CONFIGS
    shape_type = ConvShape

    def static_params(self, shape: Shape) -> dict[str, Any]:
        assert isinstance(shape, ConvShape)
        return {"pad_h": float(shape.ph), "pad_w": float(shape.pw)}

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        import numpy as np

        assert isinstance(shape, ConvShape)
        x = draw(rng, (shape.b, shape.h, shape.w, shape.c), dist)
        w = draw(rng, (shape.fh, shape.fw, shape.c, shape.kf), dist)
        ho, wo = shape.out_hw
        return Inputs({"x": x, "w": w}, np.zeros((shape.b, ho, wo, shape.kf)))

    def reduction_length(self, workload: Workload) -> int | None:
        s = workload.meta["shape"]
        return int(s["c"] * s["fh"] * s["fw"])

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        return ops.conv2d(params["x"], params["w"], (int(params["pad_h"]), int(params["pad_w"])))


class Conv2dBackwardKernel(Conv2dKernel):
    """Conv2D backward (data gradient): dx = full correlation of dy with the flipped filters.

    ``dy`` has the forward output's shape; the filters are flipped in space and their in/out
    channels swapped when the workload is built (exact data movement), so the step is one
    stride-1 ``conv2d`` with padding ``f - 1 - pad``. The weight gradient is not timed.
    """

    info = KernelInfo(
        name="conv2d-bw",
        summary="DeepBench Conv2D backward (data gradient), the 'bw' variant of conv2d",
        family="dl",
        state_names=["dx"],
        probe="dx",
        op_classes=MATMUL_CLASSES,
        sources=[SOURCE],
    )

    def static_params(self, shape: Shape) -> dict[str, Any]:
        assert isinstance(shape, ConvShape)
        return {"pad_h": float(shape.fh - 1 - shape.ph), "pad_w": float(shape.fw - 1 - shape.pw)}

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        import numpy as np

        assert isinstance(shape, ConvShape)
        if shape.ph > shape.fh - 1 or shape.pw > shape.fw - 1:
            raise UsageError("conv2d-bw needs pad <= filter size - 1")
        ho, wo = shape.out_hw
        dy = draw(rng, (shape.b, ho, wo, shape.kf), dist)
        w = draw(rng, (shape.fh, shape.fw, shape.c, shape.kf), dist)
        w_back = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))  # fh, fw, kf, c
        return Inputs({"x": dy, "w": w_back}, np.zeros((shape.b, shape.h, shape.w, shape.c)))

    def reduction_length(self, workload: Workload) -> int | None:
        s = workload.meta["shape"]
        return int(s["kf"] * s["fh"] * s["fw"])

    def flops(self, workload: Workload) -> FlopCount:
        s = self.shape_of(workload)
        assert isinstance(s, ConvShape)
        real = 2.0 * s.h * s.w * s.c * s.kf * s.fh * s.fw * s.b
        fw = s.flops()
        return FlopCount(
            real=real,
            paper=fw.paper,
            matmul=real,
            formula_real="2*h*w*c*k_f*f_h*f_w*b (data gradient, products computed incl. padding)",
            formula_paper=f"forward formula: {fw.formula_paper}",
        )


class ReluKernel(DLKernel):
    info = KernelInfo(
        name="relu",
        summary="DeepBench ReLU max(x, 0), NHWC (relu_k1..k4 or free shape)",
        family="dl",
        state_names=["y"],
        probe="y",
        op_classes=[OpClass.COMPARE, OpClass.STORE],
        sources=[SOURCE],
    )
    configs = RELU_CONFIGS
    shape_type = ReluShape

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        import numpy as np

        assert isinstance(shape, ReluShape)
        x = draw(rng, (shape.b, shape.h, shape.w, shape.c), dist)
        return Inputs({"x": x}, np.zeros(x.shape))

    def reduction_length(self, workload: Workload) -> int | None:
        return 1

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        return ops.maximum(params["x"], 0.0)


class LstmKernel(DLKernel):
    """One LSTM layer (gate order i, f, g, o), zero initial state, biases included."""

    info = KernelInfo(
        name="lstm",
        summary="DeepBench LSTM layer over s time steps (rnn_k1..k4 or free s,n,i,h)",
        family="dl",
        state_names=["h", "c"],
        probe="h",
        op_classes=[*MATMUL_CLASSES, OpClass.ADD, OpClass.MUL, OpClass.DIV, OpClass.EXP],
        sources=[SOURCE],
    )
    configs = RNN_CONFIGS
    shape_type = LstmShape

    def steps(self, workload: Workload) -> int:
        return int(workload.meta["shape"]["s"])

    def probe(self, state: Any) -> Any:
        return state[0].reshape(-1)

    def build_inputs(self, shape: Shape, rng: np.random.Generator, dist: str) -> Inputs:
        import numpy as np

        assert isinstance(shape, LstmShape)
        scale_w = np.float32(1.0 / np.sqrt(shape.i + shape.h))  # keeps gates out of saturation
        x = draw(rng, (shape.s, shape.n, shape.i), dist)
        w = (draw(rng, (shape.i, 4 * shape.h), dist) * scale_w).astype(np.float32)
        u = (draw(rng, (shape.h, 4 * shape.h), dist) * scale_w).astype(np.float32)
        bias = draw(rng, (4 * shape.h,), dist) * np.float32(0.1)
        zeros = np.zeros((shape.n, shape.h))
        return Inputs({"x": x, "W": w, "U": u, "bias": bias}, (zeros, zeros.copy()))

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        h, c = state[0], state[1]
        hid = params["U"].shape[0]
        z = ops.matmul(params["x"][t], params["W"]) + ops.matmul(h, params["U"]) + params["bias"]
        gate_i = _sigmoid(ops, z[:, :hid])
        gate_f = _sigmoid(ops, z[:, hid : 2 * hid])
        gate_g = _tanh(ops, z[:, 2 * hid : 3 * hid])
        gate_o = _sigmoid(ops, z[:, 3 * hid :])
        c_new = gate_f * c + gate_i * gate_g
        h_new = gate_o * _tanh(ops, c_new)
        return (h_new, c_new)


def _sigmoid(ops: Ops, x: Any) -> Any:
    return 1 / (1 + ops.exp(-x))


def _tanh(ops: Ops, x: Any) -> Any:
    """tanh(x) = 2 sigmoid(2x) - 1, written with ``exp`` so every profile can round it."""
    return 2 / (1 + ops.exp(-2 * x)) - 1


def kernels() -> list[Kernel]:
    return [GemmKernel(), Conv2dKernel(), Conv2dBackwardKernel(), ReluKernel(), LstmKernel()]


def dl_protocol_refusal(kernel: object) -> str | None:
    """Why the dl-primitives audit protocol does not apply to ``kernel`` (None: it does)."""
    if isinstance(kernel, DLKernel):
        return None
    return "it audits DL primitives (GEMM, Conv2D, ReLU, LSTM) elementwise; this kernel is none"
