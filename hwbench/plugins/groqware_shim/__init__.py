"""A stand-in for the GroqWare SDK, backed by hwbench's emulation of the GroqChip's numerics.

The groq device plugin is written against the SDK's API — an ONNX model goes through
``groq-compiler`` and the assembler to an ``.iop`` program, which ``groq.runner.tsp``'s
``create_tsp_runner(iop_path)`` turns into a callable on named numpy arrays. Where the SDK is not
installed, this package provides the same surface, so the plugin's code path is identical:

* :mod:`.sdk` — ``load_sdk()``: the real SDK when usable here, else this shim;
* :mod:`.compiler` — ``compile(onnx_path, out_dir, **flags)``: constant folding, gather/scatter
  lowered to one-hot matrix products (a real ONNX graph rewrite, :mod:`.lowering`), the chip's
  capacity limits (:mod:`.capacity`), and the program file (:mod:`.program`);
* :mod:`.runner.tsp` — ``create_tsp_runner(iop_path)``: the lowered graph evaluated op by op by
  hwbench's op-level evaluator, with the emulating ops of the program's numerics profile
  (:mod:`.execution`).

Nothing here imports ONNX, JAX or TensorFlow at import time.
"""
