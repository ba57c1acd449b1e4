"""DeepBench shapes of the AI-accelerator evaluation, and their FLOP counts (docs/dl-primitives.md).

Every shape knows its batch dimension (what a documented scale-down may shrink), how many bytes
its operands need, and its work twice: by the paper's printed formula and by the operations the
kernel actually computes. The paper's Conv2D output size omits the ``+ 1`` of
``(w + 2p - f) / s + 1`` and its LSTM recurrent term lacks a factor ``h``; both are shown beside
the real count, never instead of it. Convention everywhere: one multiply-add = 2 FLOPs (as the
paper's ``2·M·N·K``); an exp, compare or divide = 1 op.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pydantic import BaseModel, Field

CONVENTION = "1 multiply-add = 2 FLOPs (paper's 2*M*N*K); exp/compare/divide = 1 op each"


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench devices imports this module and validates none of them (docs/cli.md, "Start-up time").
class FlopCount(BaseModel, defer_build=True):
    """The work of one run of a primitive, by the real count and by the paper's printed formula."""

    real: float = Field(description="operations actually computed")
    paper: float = Field(description="the paper's printed formula (Emani et al. 2022, Sec. IV-B)")
    matmul: float = Field(description="the matrix-product (or convolution) part of `real`")
    formula_real: str
    formula_paper: str
    convention: str = CONVENTION


@dataclass(frozen=True)
class Shape:
    """Base: a named DeepBench configuration; ``batch_field`` is what a scale-down halves."""

    batch_field: ClassVar[str] = "b"

    @property
    def batch(self) -> int:
        return int(getattr(self, self.batch_field))

    def with_batch(self, batch: int) -> Shape:
        return replace(self, **{self.batch_field: batch})

    def operand_elements(self) -> int:  # inputs + outputs, in elements
        raise NotImplementedError

    def flops(self) -> FlopCount:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class GemmShape(Shape):
    """C[M,N] = A[M,K] @ B[K,N]; DeepBench's N is the 'batch' column."""

    m: int
    n: int
    k: int
    batch_field: ClassVar[str] = "n"

    def operand_elements(self) -> int:
        return self.m * self.k + self.k * self.n + self.m * self.n

    def flops(self) -> FlopCount:
        f = 2.0 * self.m * self.n * self.k
        return FlopCount(real=f, paper=f, matmul=f, formula_real="2*M*N*K", formula_paper="2*M*N*K")

    def describe(self) -> str:
        return f"M={self.m} N={self.n} K={self.k}"


@dataclass(frozen=True)
class ConvShape(Shape):
    """Stride-1 Conv2D, input b x h x w x c, k_f filters of f_h x f_w x c, zero padding."""

    w: int
    h: int
    c: int
    b: int
    kf: int
    fw: int
    fh: int
    pw: int
    ph: int

    @property
    def out_hw(self) -> tuple[int, int]:
        """(H_o, W_o) = (h + 2 p_h - f_h + 1, w + 2 p_w - f_w + 1): the real output size."""
        return self.h + 2 * self.ph - self.fh + 1, self.w + 2 * self.pw - self.fw + 1

    def operand_elements(self) -> int:
        ho, wo = self.out_hw
        return self.b * self.h * self.w * self.c + self.fh * self.fw * self.c * self.kf + self.b * ho * wo * self.kf

    def patch_elements(self) -> int:
        """The im2col matrix an engine without a native convolution materialises (numpy)."""
        ho, wo = self.out_hw
        return self.b * ho * wo * self.fh * self.fw * self.c

    def flops(self) -> FlopCount:
        ho, wo = self.out_hw
        per = 2.0 * self.kf * self.c * self.fw * self.fh * self.b
        real = per * ho * wo
        paper = per * (ho - 1) * (wo - 1)  # the paper's W_o = (w + 2 pad - f) / stride, without + 1
        return FlopCount(
            real=real,
            paper=paper,
            matmul=real,
            formula_real="2*W_o*H_o*k_f*c*f_w*f_h*b, W_o = w + 2*pad_w - f_w + 1",
            formula_paper="2*W_o*H_o*k_f*c*f_w*f_h*b, W_o = (w + 2*pad_w - f_w)/stride_w (printed, no + 1)",
        )

    def describe(self) -> str:
        return (
            f"w={self.w} h={self.h} c={self.c} b={self.b} k_f={self.kf} f={self.fh}x{self.fw} pad={self.ph},{self.pw}"
        )


@dataclass(frozen=True)
class ReluShape(Shape):
    w: int
    h: int
    c: int
    b: int

    def operand_elements(self) -> int:
        return 2 * self.w * self.h * self.c * self.b

    def flops(self) -> FlopCount:
        f = float(self.w * self.h * self.c * self.b)
        return FlopCount(
            real=f,
            paper=f,
            matmul=0.0,
            formula_real="w*h*c*b (one max per element)",
            formula_paper="w*h*c*b (compare + multiply counted as one op, as printed)",
        )

    def describe(self) -> str:
        return f"w={self.w} h={self.h} c={self.c} b={self.b}"


@dataclass(frozen=True)
class LstmShape(Shape):
    """An LSTM layer: s time steps, batch n, input i, hidden h (gates i, f, g, o)."""

    s: int
    n: int
    i: int
    h: int
    batch_field: ClassVar[str] = "n"

    def operand_elements(self) -> int:
        return self.s * self.n * self.i + (self.i + self.h) * 4 * self.h + 4 * self.h + 2 * self.n * self.h

    def flops(self) -> FlopCount:
        s, b, i, h = self.s, self.n, self.i, self.h
        matmul = 2.0 * 4 * s * b * (i * h + h * h)
        # per step and hidden unit: 4 bias adds, 3 sigmoids + 2 tanh (as 1/(1+exp(-x)): exp, add,
        # divide = 3 ops each; tanh as 2*sigmoid(2x)-1: 3 more), c = f*c + i*g (3), h = o*tanh(c) (1)
        elementwise = float(s * b * h * (4 + 5 * 3 + 2 * 3 + 3 + 1))
        paper = 2.0 * 4 * s * i * h * b + 2.0 * 4 * s * h * b
        return FlopCount(
            real=matmul + elementwise,
            paper=paper,
            matmul=matmul,
            formula_real="2*4*s*b*(i*h + h*h) + 29*s*b*h elementwise (gates, cell update)",
            formula_paper="2*4*s*i*h*b + 2*4*s*h*b (printed; the recurrent term lacks a factor h)",
        )

    def describe(self) -> str:
        return f"s={self.s} n={self.n} i={self.i} h={self.h}"


# The paper's tables (Emani et al. 2022, Tables VI-IX), verbatim.
GEMM_CONFIGS: dict[str, Shape] = {
    "gemm_k1": GemmShape(64, 1760, 1760),
    "gemm_k2": GemmShape(2560, 64, 2560),
    "gemm_k3": GemmShape(1760, 128, 1760),
    "gemm_k4": GemmShape(2560, 2560, 2560),
}
CONV_CONFIGS: dict[str, Shape] = {
    "conv_k1": ConvShape(7, 7, 32, 131072, 32, 3, 3, 0, 0),
    "conv_k2": ConvShape(14, 14, 128, 4096, 256, 3, 3, 1, 1),
    "conv_k3": ConvShape(54, 54, 16, 256, 1024, 3, 3, 1, 1),
    "conv_k4": ConvShape(128, 128, 32, 1024, 128, 5, 5, 0, 0),
}
RELU_CONFIGS: dict[str, Shape] = {
    "relu_k1": ReluShape(7, 7, 32, 262144),
    "relu_k2": ReluShape(14, 14, 128, 16384),
    "relu_k3": ReluShape(54, 54, 1024, 128),
    "relu_k4": ReluShape(128, 128, 128, 128),
}
RNN_CONFIGS: dict[str, Shape] = {
    "rnn_k1": LstmShape(50, 64, 256, 256),
    "rnn_k2": LstmShape(25, 32, 512, 512),
    "rnn_k3": LstmShape(25, 16, 512, 512),
    "rnn_k4": LstmShape(50, 32, 512, 512),
}
