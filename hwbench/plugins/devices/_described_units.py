"""Matrix units described with the block-FMA model from what their vendors publish (no silicon
vectors exist for them): the TPU v3 MXU and the Graphcore IPU's AMP unit.

What is published is thin: the MXU multiplies bf16 values exactly and accumulates in fp32
(Google Cloud TPU documentation, "The bfloat16 numerical format"); the IPU's AMP multiplies fp16
values and accumulates in fp32 ("fp16.32", PopLibs' default partials type) or fp16 ("fp16.16").
Everything else — how many products join before a rounding, the accumulation's rounding, its
subnormals — is not published, so these descriptions are **assumed**: a chain of exact
multiply-adds, each rounded once to nearest even in fp32 (``summation="exact"``,
``block_terms=1``), the plainest machine the published sentences describe. ``hwbench probe
--device tpu-v3`` / ``--device ipu:fp16-sr`` shows the description's features; on the chips the
probes would measure the truth (docs/devices/tpu-v3.md and ipu.md list each value with its
status). The DL audits of these devices keep the operand-rounding approximation, which computes
the same exact products with fp32 accumulation.
"""

from __future__ import annotations

from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel
from hwbench.accuracy.numerics.profile import Confidence

CLOUD_BF16 = "Google Cloud TPU documentation, 'The bfloat16 numerical format' (bf16 products exact, fp32 accumulation)"
POPLIBS = "Graphcore PopLibs API reference, poplin::matMul option partialsType (default float: fp16.32)"

TPU_V3_MXU = MatrixUnitModel(
    name="tpu-v3-mxu",
    input_format="bf16",
    output_format="fp32",
    summation="exact",
    block_terms=1,
    final_rounding="nearest-even",
    subnormals_in="flush",
    subnormals_out="keep",
    source=f"{CLOUD_BF16}; block size, accumulation rounding and output subnormals: assumption",
    confidence=Confidence.ASSUMED,
    notes={
        "products": "exact bf16 x bf16 products: documented",
        "accumulation": "fp32: documented; one nearest-even rounding per product (systolic chain): assumed",
        "subnormals_in": "flushed: the documented fp32 -> bf16 conversion flushes subnormals",
    },
)

IPU_AMP_FP16_32 = MatrixUnitModel(
    name="ipu-amp",
    input_format="fp16",
    output_format="fp32",
    summation="exact",
    block_terms=1,
    final_rounding="nearest-even",
    source=f"{POPLIBS}; block size, accumulation rounding and subnormals: assumption",
    confidence=Confidence.ASSUMED,
    notes={
        "products": "fp16 x fp16 into fp32 partials (fp16.32): documented",
        "accumulation": "one nearest-even fp32 rounding per product: assumed (the AMP's adder is not published)",
        "fp16.16": "partials=half accumulates in fp16 with stochastic rounding: outside the block model",
    },
)
