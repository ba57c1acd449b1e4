"""A corpus of bad invocations of every command, each answered the documented way.

Every case must give its documented exit code (2 usage, 4 unavailable; 3 only for a broken plugin
under HWBENCH_STRICT_PLUGINS), exactly one ``error:`` line on stderr naming what is allowed (the
``fragment``), no traceback, nothing on stdout, and no file created, changed or replaced in the
working folder (``arena``: FIFOs, earlier results and locked folders included).

Everything runs in-process (``hwbench.testing.badinput.run_cli``) and is refused before any
simulation, so the whole corpus takes seconds. ``python tests/cli/test_bad_input_corpus.py``
prints the counts the issue asks for (tracebacks, partial or clobbered files, internal errors).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

import pytest

from hwbench.core import plugins as host
from hwbench.testing.badinput import judge, run_cli, snapshot

RUN = ["run", "--engine", "numpy", "--cells", "64", "--ms", "2"]
RUN_W = ["run", "--engine", "numpy", "--ms", "2"]  # for --workload cases (no --cells)
RUN_J = ["run", "--cells", "64", "--ms", "2"]  # the default engine (JAX): for --shard cases
BENCH = ["bench", "--engine", "numpy", "--cells", "64", "--ms", "2", "--repeats", "1"]
AUDIT = ["audit", "--quick"]
STORES = "../arena-stores"  # results stores beside the arena (SQLite's -wal/-shm files come and go)
GOOD = f"{STORES}/store.sqlite"  # an empty hwbench store
NOTDB = f"{STORES}/notdb.sqlite"  # a text file


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]
    code: int
    fragment: str
    env: dict[str, str] = field(default_factory=dict)


def numbers(prefix: list[str], option: str, values: dict[str, str], fragment: str) -> list[Case]:
    """One case per bad value of a numeric option."""
    return [Case(f"{prefix[0]}{option}={k}", [*prefix, option, v], 2, fragment) for k, v in values.items()]


def fn_case(name: str, spec: str, inputs: str, fragment: str, extra: list[str] | None = None, code: int = 2) -> Case:
    """``hwbench audit --function SPEC --inputs INPUTS`` (on groq unless ``extra`` says otherwise)."""
    argv = ["audit", "--function", spec, "--inputs", inputs, *(["-d", "groq"] if extra is None else extra)]
    return Case(f"function-{name}", argv, code, fragment)


NOT_FINITE = {"nan": "nan", "inf": "inf", "-inf": "-inf", "1e400": "1e400", "word": "abc", "empty": ""}
MODEL_RUN = ["run", "--model", "m.onnx", "--no-store"]  # a model's run and audit (issue 40): model.onnx is the
MODEL_AUDIT = ["audit", "--model", "m.onnx", "-d", "h100:fp8-e4m3", "--no-store"]  # MLP of tests/data/models
MODEL_INPUT_CASES = [  # (id, options, exit code, fragment), refused alike by run and audit
    ("inputs-missing", ["--inputs", "nope.npz"], 2, "no such file"),
    ("inputs-dir", ["--inputs", "dir"], 2, "is a folder"),
    ("inputs-fifo", ["--inputs", "fifo"], 2, "not a regular file"),
    ("inputs-garbage", ["--inputs", "garbage.npz"], 2, "is not a readable .npz of arrays"),
    ("inputs-text", ["--inputs", "text.npz"], 2, "is not a readable .npz of arrays"),
    ("inputs-names", ["--inputs", "in_names.npz"], 2, "has no array 'x'; the graph's inputs are: x"),
    ("inputs-extra", ["--inputs", "in_extra.npz"], 2, "has array 'z', which is no graph input"),
    ("inputs-dtype", ["--inputs", "in_f64.npz"], 2, "input 'x' is float64; the graph declares float32"),
    ("inputs-shape", ["--inputs", "in_shape.npz"], 2, "input 'x' dimension 1 is 16 in the graph (8, 16), got 8"),
    ("inputs-huge", ["--inputs", "huge_arrays.npz"], 4, "GiB"),
    ("inputs+shape", ["--inputs", "in_f64.npz", "--shape", "x:8,16"], 2, "the given inputs fix their own"),
    ("symbolic", ["--model", "sym.onnx"], 2, "graph input 'x' has symbolic dimension 'batch': give its size"),
    ("shape-zero", ["--shape", "x:0,16"], 2, "dimensions must be positive integers"),
    ("shape-word", ["--shape", "x:a,16"], 2, "dimensions must be positive integers"),
    ("shape-no-colon", ["--shape", "x"], 2, "expected NAME:D0,D1"),
    ("shape-empty", ["--shape", ""], 2, "expected NAME:D0,D1"),
    ("shape-not-input", ["--shape", "y:8,16"], 2, "--shape names 'y', which is no graph input"),
    ("shape-contradicts", ["--shape", "x:8,8"], 2, "dimension 1 is 16 in the graph"),
    ("shape-rank", ["--shape", "x:8"], 2, "has 2 dimension(s)"),
    ("shape-twice", ["--model", "sym.onnx", "--shape", "x:2,16", "--shape", "x:3,16"], 2, "--shape x is given twice"),
    ("range-reversed", ["--input-range", "1,0"], 2, "LO < HI"),
    ("range-nan", ["--input-range", "nan,1"], 2, "two finite numbers"),
    ("range-inf", ["--input-range", "-inf,inf"], 2, "two finite numbers"),
    ("range-one", ["--input-range", "1"], 2, "expected LO,HI"),
    ("range-empty", ["--input-range", ""], 2, "expected LO,HI"),
    ("memory-zero", ["--max-memory", "0"], 2, "--max-memory '0': expected a positive size"),
    ("memory-word", ["--max-memory", "lots"], 2, "expected a positive size"),
    ("memory-unit", ["--max-memory", "5X"], 2, "expected a positive size"),
    ("memory-over", ["--max-memory", "1k"], 4, "--max-memory allows"),
]
CASES: list[Case] = [
    # ---------------------------------------------------------------- numbers: command options
    *numbers(RUN, "--ms", {**NOT_FINITE, "neg": "-1", "zero": "0"}, "'--ms': must be a finite number > 0"),
    Case("run-ms-not-multiple", [*RUN[:-1], "1.5"], 2, "positive multiple of the sample interval 1 ms"),
    Case("run-ms-below-one-sample", [*RUN[:-1], "0.4"], 2, "positive multiple of the sample interval"),
    *numbers(RUN, "--seed", {"neg": "-1", "2^32": "4294967296", "float": "1.5", "word": "x", "e": "1e3"}, "'--seed'"),
    *numbers(RUN, "--repeats", {"zero": "0", "neg": "-3", "big": "10001", "float": "2.5", "nan": "nan"}, "--repeats"),
    *numbers(
        RUN, "--probe-cells", {"neg": "-1", "zero": "0", "word": "all", "float": "3.5", "sup2": "²"}, "'--probe-cells'"
    ),
    *numbers(
        ["run"], "--cells", {"zero": "0", "neg": "-64", "float": "64.0", "word": "many", "hex": "0x40"}, "--cells"
    ),
    *numbers(BENCH, "--ms", {**NOT_FINITE, "neg": "-2", "zero": "0"}, "'--ms': must be a finite number > 0"),
    Case("bench-ms-not-multiple", [*BENCH[:5], "--ms", "1.5"], 2, "positive multiple of the sample interval 1 ms"),
    Case("bench-ms-below-one-sample", [*BENCH[:5], "--ms", "0.4"], 2, "positive multiple of the sample interval"),
    *numbers(
        BENCH,
        "--repeats",
        {"zero": "0", "neg": "-1", "big": "100000", "word": "five", "float": "2.5", "nan": "nan", "empty": ""},
        "'--repeats'",
    ),
    *numbers([*AUDIT, "-d", "groq"], "--seed", {"neg": "-1", "big": "99999999999", "word": "s"}, "'--seed'"),
    Case("run-not-a-cube", [*RUN[:3], "--cells", "700"], 2, "700 must be a perfect cube"),
    Case("run-too-small-cube", [*RUN[:3], "--cells", "27"], 2, "needs n >= 4"),
    # ---------------------------------------------------------------- numbers: --set parameters
    *[
        Case(f"set-{k}", [*RUN, "--set", v], 2, frag)
        for k, v, frag in [
            ("nan", "g_CaL=nan", "numbers must be finite"),
            ("inf", "g_CaL=inf", "numbers must be finite"),
            ("-inf", "g_CaL=-inf", "numbers must be finite"),
            ("1e400", "g_CaL=1e400", "numbers must be finite"),
            ("huge-int", "g_CaL=" + "9" * 400, "must be a finite number >= 0 and <= 10000"),
            ("dt0", "dt=0", "'dt' must be a finite number > 0 and <= 1 (ms)"),
            ("dt-neg", "dt=-0.025", "'dt' must be a finite number > 0"),
            ("dt-big", "dt=2", "'dt' must be a finite number > 0 and <= 1"),
            ("dt-array", "dt=[0.025,0.025]", "'dt' must be a finite number"),
            ("gCaL-neg", "g_CaL=-1", "'g_CaL' must be a finite number >= 0"),
            ("gCaL-big", "g_CaL=1e5", "'g_CaL' must be a finite number >= 0 and <= 10000"),
            ("p1-zero", "p1=0", "'p1' must be a finite number > 0 and < 1"),
            ("p1-one", "p1=1", "'p1' must be a finite number > 0 and < 1"),
            ("p2-big", "p2=1.5", "'p2' must be"),
            ("S-zero", "S=0", "'S' must be a finite number > 0"),
            ("V-out", "V_Na=500", "'V_Na' must be a finite number >= -200 and <= 200 (mV)"),
            ("rmax-one", "rmax=1", "'rmax' must be a finite number > 1"),
            ("degree-neg", "mean_degree=-1", "'mean_degree' must be"),
            ("array-short", "g_CaL=[1,2]", "must be a scalar or have shape (64,), got (2,)"),
            ("array-nan", "g_CaL=[1,NaN]", "non-empty JSON list of finite numbers"),
            ("array-empty", "g_CaL=[]", "non-empty JSON list of finite numbers"),
            ("array-text", 'g_CaL=[1,"a"]', "non-empty JSON list of finite numbers"),
            ("array-bool", "g_CaL=[true]", "non-empty JSON list of finite numbers"),
            ("array-broken", "g_CaL=[1,2", "non-empty JSON list of finite numbers"),
            ("array-nested", "g_CaL=[[1]]", "non-empty JSON list of finite numbers"),
            ("word", "g_CaL=abc", "'g_CaL' must be a finite number"),
            ("empty-value", "g_CaL=", "'g_CaL' must be a finite number"),
            ("no-equals", "g_CaL", "--set expects KEY=VALUE"),
            ("no-key", "=1", "--set expects KEY=VALUE"),
            ("unknown", "nope=1", "io-ehh has no parameter 'nope'; choose from:"),
            ("input", "I_app=1", "I_app is an input, not a parameter"),
        ]
    ],
    Case("set-twice", [*RUN, "--set", "g_CaL=1", "--set", "g_CaL=2"], 2, "--set g_CaL is given twice"),
    Case("leaky-tau0", ["run", "-k", "leaky-ring", "--cells", "10", "--set", "tau=0"], 2, "'tau' must be"),
    Case("leaky-dt0", ["run", "-k", "leaky-ring", "--cells", "10", "--set", "dt=0"], 2, "'dt' must be"),
    Case("leaky-unknown", ["run", "-k", "leaky-ring", "--cells", "10", "--set", "x=1"], 2, "no parameter x"),
    Case("lif-beta", ["run", "-k", "lif", "--cells", "10", "--set", "beta=2"], 2, "'beta' must be"),
    Case("lif-thr", ["run", "-k", "lif", "--cells", "10", "--set", "thr=0"], 2, "'thr' must be"),
    Case("lif-rate", ["run", "-k", "lif", "--cells", "10", "--set", "input_rate=0.9"], 2, "'input_rate'"),
    Case("lif-reset", ["run", "-k", "lif", "--cells", "10", "--set", "reset=maybe"], 2, "'subtract' or 'zero'"),
    Case("lif-n-in-huge", ["run", "-k", "lif", "--cells", "10", "--set", "n_in=99999999999"], 2, "'n_in' must be"),
    Case("lif-n-steps-huge", ["run", "-k", "lif", "--cells", "10", "--set", "n_steps=1e9"], 2, "'n_steps' must be"),
    Case("lif-n-in-frac", ["run", "-k", "lif", "--cells", "10", "--set", "n_in=2.5"], 2, "positive integer"),
    Case("lif-current-alpha", ["run", "-k", "lif-current", "--cells", "10", "--set", "alpha=-1"], 2, "'alpha'"),
    # ---------------------------------------------------------------- sizes and memory
    Case("run-trace-memory", [*RUN[:-1], "1e9"], 4, "GiB of trace memory"),
    Case("run-memory-guard", ["run", "--unconnected", "--cells", "1000000000"], 4, "needs about"),
    Case("run-memory-guard-huge", ["run", "--unconnected", "--cells", "99999999999"], 4, "needs about"),
    *[
        Case(f"bench-sizes-{k}", ["bench", "--sizes", v], 2, "'--sizes'")
        for k, v in {
            "empty": "",
            "comma": ",",
            "space": " ",
            "word": "a",
            "zero": "0",
            "neg": "-1",
            "reversed": "5..3",
            "range-huge": "1..99999999",
            "float": "4.5",
            "bad-range": "4...6",
            "13-digits": "1234567890123",
            "mixed": "4,,x",
        }.items()
    ],
    *[
        Case(f"bench-cells-{k}", ["bench", "--cells", v], 2, "'--cells'")
        for k, v in {"empty": "", "zero": "0", "word": "lots", "neg": "-64"}.items()
    ],
    Case("bench-cells-not-cube", [*BENCH[:3], "--cells", "700"], 2, "700 must be a perfect cube"),
    Case("bench-skips-everything", ["bench", "--sizes", "99999999"], 4, "do not fit this host's memory"),
    Case("bench-huge-unconnected", [*BENCH[:3], "--cells", "99999999999", "--unconnected-only"], 4, "GiB"),
    # ---------------------------------------------------------------- options that cannot combine
    Case("run-workload+cells", ["run", "--workload", "w64.npz", "--cells", "64"], 2, "--workload cannot be combined"),
    Case("run-workload+unconn", ["run", "--workload", "w64.npz", "--unconnected"], 2, "with --unconnected"),
    *[
        Case(
            f"run-unconnected-{k}", ["run", "--kernel", k, "--unconnected", "--ms", "2"], 2, "no connections to remove"
        )
        for k in ("gemm", "lif", "lif-current")
    ],
    Case(
        "bench-unconnected-only-lif",
        ["bench", "--kernel", "lif", "--unconnected-only", "--repeats", "1"],
        2,
        "no connections to remove",
    ),
    Case("run-workload+seed", ["run", "--workload", "w64.npz", "--seed", "3"], 2, "with --seed"),
    Case("run-workload+set", ["run", "--workload", "w64.npz", "--set", "dt=0.01"], 2, "with --set"),
    Case("run-out=save", [*RUN, "--out", "x.npz", "--save-workload", "x.npz"], 2, "name the same file"),
    Case("bench-cells+sizes", [*BENCH, "--sizes", "4"], 2, "--cells cannot be combined with --sizes"),
    Case("bench-cells+full", [*BENCH, "--full"], 2, "--cells cannot be combined with --full"),
    Case("bench-sizes+full", ["bench", "--sizes", "4", "--full"], 2, "--sizes cannot be combined with --full"),
    Case("bench-only-both", [*BENCH, "--connected-only", "--unconnected-only"], 2, "exclude each other"),
    Case("audit-set+profile", [*AUDIT, "-d", "groq", "--set", "a=1", "--profile", "groq.toml"], 2, "--set cannot"),
    Case("audit-mode-several", [*AUDIT, "-d", "groq", "-d", "a100", "--mode", "x"], 2, "NAME:MODE"),
    # ---------------------------------------------------------------- devices, names, profiles
    Case(
        "audit-cpu-set", [*AUDIT, "-d", "cpu", "--set", "x=1"], 2, "device 'cpu' has no parameter x; settable: nothing"
    ),
    Case("audit-cpu64-set", [*AUDIT, "-d", "cpu:fp64", "--set", "x=1"], 2, "settable: nothing"),
    Case("audit-groq-set-unknown", [*AUDIT, "-d", "groq", "--set", "nope=1"], 2, "reduced_mantissa_bits"),
    Case("audit-groq-set-nan", [*AUDIT, "-d", "groq", "--set", "reduced_mantissa_bits=nan"], 2, "must be finite"),
    Case("audit-groq-set-inf", [*AUDIT, "-d", "groq", "--set", "reduced_mantissa_bits=1e400"], 2, "must be finite"),
    Case("audit-groq-bits-low", [*AUDIT, "-d", "groq", "--set", "reduced_mantissa_bits=-5"], 2, "must be >= 1"),
    Case("audit-groq-bits-high", [*AUDIT, "-d", "groq", "--set", "reduced_mantissa_bits=1000"], 2, "must be <= 23"),
    Case("audit-groq-bits-frac", [*AUDIT, "-d", "groq", "--set", "reduced_mantissa_bits=2.5"], 2, "whole number"),
    Case("audit-groq-rounding", [*AUDIT, "-d", "groq", "--set", "reduced_rounding=up"], 2, "must be one of"),
    Case("audit-groq-compare", [*AUDIT, "-d", "groq", "--set", "reduced_compare=maybe"], 2, "is true or false"),
    Case("audit-ipu-ulps-neg", [*AUDIT, "-d", "ipu", "--set", "exp_ulps=-1"], 2, "must be >= 0"),
    Case("audit-ipu-ulps-huge", [*AUDIT, "-d", "ipu", "--set", "exp_ulps=1e300"], 2, "must be <= 8.38861e+06"),
    Case("audit-a100-ulps-huge", [*AUDIT, "-d", "a100", "--set", "exp_ulps=1e9"], 2, "must be <= 8.38861e+06"),
    Case("audit-tpu-split", [*AUDIT, "-d", "tpu-v3", "--set", "bf16_split=sideways"], 2, "must be one of"),
    Case("audit-a100-div-neg", [*AUDIT, "-d", "a100", "--set", "div_ulps=-0.5"], 2, "must be >= 0"),
    Case("audit-a100-div-huge", [*AUDIT, "-d", "a100", "--set", "div_ulps=1e9"], 2, "must be <= 8.38861e+06"),
    Case("audit-a100-fma", [*AUDIT, "-d", "a100", "--set", "fma_contraction=sometimes"], 2, "is true or false"),
    Case("audit-ipu-fma", [*AUDIT, "-d", "ipu", "--set", "fma_contraction=2"], 2, "is true or false"),
    Case("audit-tpu-div-nan", [*AUDIT, "-d", "tpu-v3", "--set", "div_ulps=nan"], 2, "must be finite"),
    Case("audit-groq-special", [*AUDIT, "-d", "groq", "--set", "special_values=wrap"], 2, "saturate, ieee"),
    Case(
        "audit-groq-exact-special",
        [*AUDIT, "-d", "groq:fp32-exact-vector", "--set", "special_values=explode"],
        2,
        "must be one of saturate, ieee",
    ),
    Case("audit-loihi-unknown", [*AUDIT, "-d", "loihi", "--set", "zz=1"], 2, "settable: a_in_overflow, vth_max"),
    Case(
        "bench-refused-before-any-run",
        [*BENCH[:5], "--cells", "64,1000000000", "--ms", "1", "--unconnected-only"],
        4,
        "1 configuration(s) do not fit this host's memory: 1,000,000,000 cells unconnected need about",
    ),
    Case("bench-device-twice", [*BENCH, "-d", "cpu", "-d", "cpu"], 2, "--device cpu is given twice"),
    Case("bench-devices-and-mode", [*BENCH, "-d", "cpu", "-d", "groq", "--mode", "fp32"], 2, "give each its mode"),
    Case("bench-device-mode-twice", [*BENCH, "-d", "cpu:fp32", "--mode", "fp32"], 2, "names a mode already"),
    Case("bench-device-empty", [*BENCH, "-d", ""], 2, "must not be empty"),
    Case("bench-device-bad-mode", [*BENCH, "-d", "cpu:fp16"], 2, "unknown mode"),
    Case("bench-dl-two-devices", ["bench", "-k", "gemm", "-d", "cpu", "-d", "a100"], 2, "on one --device at a time"),
    Case("bench-device-runs-no-size", [*BENCH, "-d", "loihi"], 4, "device 'loihi' cannot run io-ehh: "),
    Case("audit-unknown-device", [*AUDIT, "-d", "grok"], 2, "Did you mean 'groq'"),
    Case("audit-unknown-mode", [*AUDIT, "-d", "groq:fast"], 2, "unknown mode"),
    Case("audit-cannot-run", [*AUDIT, "-d", "loihi"], 4, "cannot run"),
    Case("audit-no-device", ["audit", "--quick"], 2, "give at least one --device"),
    Case("audit-bad-protocol", [*AUDIT, "-d", "groq", "--protocol", "speed"], 2, "unknown protocol speed; choose from"),
    # ---------------------------------------------------------------- a user's JAX function
    fn_case("no-colon", "userfns", "fargs.npz", "expected MODULE:NAME"),
    fn_case("no-module", "nosuchmodule:f", "fargs.npz", "no module named 'nosuchmodule'"),
    fn_case("no-attribute", "userfns:nope", "fargs.npz", "module userfns has no attribute 'nope'"),
    fn_case("not-callable", "userfns:CONSTANT", "fargs.npz", "CONSTANT is a int, not a function"),
    fn_case(
        "untraceable",
        "userfns:branchy",
        "fargs.npz",
        "branchy is not traceable: Python control flow on array values (userfns.py:11)",
    ),
    fn_case(
        "unsupported", "userfns:spectrum", "fargs.npz", "primitive 'fft' at userfns.py:17 (spectrum) is not supported"
    ),
    fn_case("arity", "userfns:model", "fargs_one.npz", "model raised TypeError on the example arguments"),
    fn_case(
        "shapes", "userfns:model", "fargs_shapes.npz", "model raised TypeError on the example arguments (userfns.py:7)"
    ),
    fn_case("args-strings", "userfns:model", "fargs_strings.npz", "arg0 has dtype <U1; arguments are numeric arrays"),
    fn_case("args-keys", "userfns:model", "fargs_keys.npz", "it must hold the positional arguments as arg0, arg1"),
    fn_case("args-empty", "userfns:model", "fargs_empty.npz", "holds no arrays"),
    fn_case("args-pickle", "userfns:model", "fargs_pickle.npz", "is not a readable .npz of arrays"),
    fn_case("args-text", "userfns:model", "text.npz", "is not a readable .npz of arrays"),
    fn_case("args-missing", "userfns:model", "nope.npz", "nope.npz: no such file"),
    fn_case("args-dir", "userfns:model", "dir", "is a folder, not a file"),
    fn_case("args-huge", "userfns:model", "fargs_huge.npz", "its arrays need about", code=4),
    fn_case(
        "neuromorphic",
        "userfns:model",
        "fargs.npz",
        "has no floating-point arithmetic to run a function on",
        ["-d", "loihi"],
    ),
    fn_case("no-device", "userfns:model", "fargs.npz", "give at least one --device to audit the function on", []),
    fn_case(
        "with-kernel",
        "userfns:model",
        "fargs.npz",
        "--function cannot be combined with --kernel",
        ["-d", "groq", "-k", "io-ehh"],
    ),
    fn_case(
        "with-quick",
        "userfns:model",
        "fargs.npz",
        "--function cannot be combined with --quick",
        ["-d", "groq", "--quick"],
    ),
    fn_case(
        "rtol-neg",
        "userfns:model",
        "fargs.npz",
        "'--rtol': must be a finite number >= 0",
        ["-d", "groq", "--rtol", "-1"],
    ),
    fn_case(
        "atol-nan",
        "userfns:model",
        "fargs.npz",
        "'--atol': must be a finite number >= 0",
        ["-d", "groq", "--atol", "nan"],
    ),
    fn_case(
        "ulps-word",
        "userfns:model",
        "fargs.npz",
        "'--ulps': must be a finite number >= 0",
        ["-d", "groq", "--ulps", "many"],
    ),
    Case("function-no-inputs", ["audit", "--function", "userfns:model", "-d", "groq"], 2, "--function needs --inputs"),
    Case(
        "function-inputs-alone",
        [*AUDIT, "-d", "groq", "--inputs", "fargs.npz"],
        2,
        "--inputs is an option of a model or a function: give --model FILE or --function MODULE:NAME",
    ),
    Case("function-ulps-alone", [*AUDIT, "-d", "groq", "--ulps", "2"], 2, "--ulps applies to a function audit"),
    Case("probe-unknown-device", ["probe", "-d", "h10"], 2, "Did you mean 'h100'"),
    Case("probe-unknown-mode", ["probe", "-d", "h100:fp64"], 2, "unknown mode 'fp64'"),
    Case("probe-no-matrix-unit", ["probe", "-d", "loihi"], 2, "has no matrix-unit model; devices with one: a100"),
    Case("probe-no-device", ["probe"], 2, "--device"),
    Case("probe-compare-unknown", ["probe", "-d", "h100:fp16", "--compare", "h1000"], 2, "unknown matrix unit"),
    Case("probe-compare-no-format", ["probe", "-d", "h100:tf32", "--compare", "v100"], 2, "no published model for"),
    Case("audit-profile-other-device", [*AUDIT, "-d", "a100", "--profile", "groq.toml"], 2, "is for device 'groq'"),
    Case("audit-profile-not-listed", [*AUDIT, "-d", "a100", "-d", "ipu", "--profile", "groq.toml"], 2, "only to the"),
    Case("audit-profile-malformed", [*AUDIT, "-d", "groq", "--profile", "bad.toml"], 2, "bad.toml"),
    Case("audit-profile-noext", [*AUDIT, "-d", "groq", "--profile", "noext"], 2, "use .json or .toml"),
    Case("audit-profile-yaml", [*AUDIT, "-d", "groq", "--profile", "profile.yaml"], 2, "use .json or .toml"),
    Case("audit-profile-missing", [*AUDIT, "-d", "groq", "--profile", "nope.toml"], 2, "no such file"),
    Case("audit-profile-dir", [*AUDIT, "-d", "groq", "--profile", "dir"], 2, "is a folder"),
    Case("audit-profile-fifo", [*AUDIT, "-d", "groq", "--profile", "fifo"], 2, "not a regular file"),
    Case("run-unknown-device", [*RUN, "-d", "cpux"], 2, "unknown device 'cpux'; choose from:"),
    Case("run-unknown-kernel", [*RUN, "-k", "io-ehx"], 2, "unknown kernel 'io-ehx'"),
    Case("run-unknown-engine", [*RUN, "--engine", "nump"], 2, "unknown engine 'nump'"),
    Case("run-unknown-mode", [*RUN, "--mode", "fp16"], 2, "unknown mode"),
    Case("run-device-cannot", [*RUN, "-d", "loihi"], 4, "cannot run"),
    Case("bench-unknown-engine", [*BENCH[:1], "--engine", "nump"], 2, "unknown engine 'nump'"),
    Case("bench-unknown-mode", [*BENCH, "--mode", "fp16"], 2, "unknown mode"),
    Case("bench-unknown-device", [*BENCH, "-d", "gpu"], 2, "unknown device 'gpu'"),
    Case("bench-unknown-kernel", [*BENCH, "-k", "nope"], 2, "unknown kernel 'nope'"),
    Case(
        "cpu-disabled-run",
        RUN,
        4,
        "the CPU reference device is disabled (HWBENCH_DISABLE_PLUGINS=builtin-cpu)",
        {"HWBENCH_DISABLE_PLUGINS": "builtin-cpu"},
    ),
    Case(
        "cpu-disabled-audit",
        [*AUDIT, "-d", "groq"],
        4,
        "the CPU reference device is disabled",
        {"HWBENCH_DISABLE_PLUGINS": "builtin-cpu"},
    ),
    Case(
        "groq-disabled-audit",
        [*AUDIT, "-d", "groq"],
        4,
        "device 'groq' is disabled (HWBENCH_DISABLE_PLUGINS=",
        {"HWBENCH_DISABLE_PLUGINS": "builtin-groq"},
    ),
    Case(
        "kernels-disabled",
        RUN,
        2,
        "unknown kernel 'io-ehh'; choose from: (none registered)",
        {"HWBENCH_DISABLE_PLUGINS": "builtin-kernels"},
    ),
    Case(
        "strict-broken-plugin",
        ["devices"],
        3,
        "plugin 'builtin-broken' failed",
        {"HWBENCH_STRICT_PLUGINS": "1", "_BROKEN_BUILTIN": "1"},
    ),
    # ---------------------------------------------------------------- one network over devices and hosts
    *numbers(RUN_J, "--shard", {"zero": "0", "neg": "-2", "word": "two", "float": "1.5", "big": "4097"}, "'--shard'"),
    *numbers(BENCH, "--shard", {"zero": "0", "empty": ""}, "'--shard'"),
    *numbers([*AUDIT, "-d", "groq"], "--shard", {"zero": "0", "word": "all"}, "'--shard'"),
    Case("run-shard-not-dividing", [*RUN_J, "--shard", "3"], 2, "--shard 3 does not divide the 4^3 torus"),
    Case(
        "run-shard-unconnected",
        [*RUN_J[:3], "--unconnected", "--cells", "10", "--shard", "3"],
        2,
        "choose from: 1, 2, 5",
    ),
    Case("run-shard-no-devices", [*RUN_J, "--shard", "2"], 2, "needs 2 JAX devices; 1 present (cpu): use --shard 1..1"),
    Case("run-shard-numpy", [*RUN, "--shard", "2"], 2, "engine 'numpy' cannot shard a run"),
    Case("run-shard-lif", ["run", "-k", "lif", "--cells", "10", "--shard", "2"], 2, "kernel 'lif' cannot be sharded"),
    Case("bench-shard-not-dividing", [*BENCH[:1], "--cells", "729", "--shard", "2"], 2, "does not divide 729 uncon"),
    Case("audit-shard-not-dividing", [*AUDIT, "-d", "groq", "--shard", "3"], 2, "does not divide the 5^3 torus"),
    Case("audit-shard-no-devices", [*AUDIT, "-d", "groq", "--protocol", "stress", "--shard", "2"], 2, "needs 2 JAX"),
    Case("audit-shard-dl", [*AUDIT, "-k", "gemm", "-d", "tpu-v3", "--shard", "2"], 2, "'gemm' cannot be sharded"),
    *numbers(
        RUN_J,
        "--coordinator",
        {"no-port": "host", "no-host": ":1234", "port0": "h:0", "port-big": "h:65536", "port-word": "h:p", "empty": ""},
        "'--coordinator': must be HOST:PORT with a port from 1 to 65535",
    ),
    *numbers(RUN_J, "--num-processes", {"zero": "0", "neg": "-1", "word": "x"}, "'--num-processes'"),
    *numbers(RUN_J, "--process-id", {"neg": "-1", "word": "x"}, "'--process-id'"),
    Case("run-coordinator-alone", [*RUN_J, "--coordinator", "127.0.0.1:1234"], 2, "go together"),
    Case("run-processes-alone", [*RUN_J, "--num-processes", "2"], 2, "go together"),
    Case(
        "run-process-id-out-of-range",
        [*RUN_J, "--coordinator", "127.0.0.1:1234", "--num-processes", "2", "--process-id", "2"],
        2,
        "--process-id must be an integer in 0..1 (--num-processes 2), got 2",
    ),
    # ---------------------------------------------------------------- command line itself
    Case("unknown-command", ["devics"], 2, "Did you mean 'devices'?"),
    Case("unknown-option", ["run", "--nope"], 2, "No such option"),
    Case("extra-argument", ["kernels", "extra"], 2, "unexpected extra argument"),
    Case("devices-unknown-name", ["devices", "grok"], 2, "unknown device 'grok'; choose from:"),
    Case("missing-value", ["run", "--ms"], 2, "'--ms' requires an argument"),
    Case("unknown-schema", ["schema", "nope"], 2, "unknown schema 'nope'"),
    Case("bench-typo-option", ["bench", "--size", "4"], 2, "No such option"),
    # ---------------------------------------------------------------- input files
    *[
        Case(f"workload-{name}", [*RUN_W, "--workload", path], code, frag)
        for name, path, code, frag in [
            ("missing", "nope.npz", 2, "nope.npz: no such file"),
            ("nul", "w\x0064.npz", 2, "contains a NUL byte"),
            ("dir", "dir", 2, "is a folder, not a file"),
            ("fifo", "fifo", 2, "is not a regular file"),
            ("dev-null", "/dev/null", 2, "is not a regular file"),
            ("garbage", "garbage.npz", 2, "garbage.npz: not a hwbench workload file"),
            ("truncated", "truncated.npz", 2, "truncated.npz: not a hwbench workload file"),
            ("empty", "empty.npz", 2, "empty.npz: not a hwbench workload file"),
            ("text", "text.npz", 2, "not a hwbench workload file"),
            ("old-format", "old_format.npz", 2, "workload format 'hwbench-workload/0'"),
            ("nan-state", "nan_state.npz", 2, "initial state 0 must hold finite numbers only"),
            ("dt0", "dt0.npz", 2, "'dt' must be a finite number > 0"),
            ("claims-1e12", "claims_1e12.npz", 2, "header says 1,000,000,000,000 cells but the initial state holds 64"),
            ("negative-size", "negative_size.npz", 2, "workload size must be a positive integer"),
            ("huge-arrays", "huge_arrays.npz", 4, "its arrays need about"),
            ("other-kernel", "leaky.npz", 2, "workload file is for kernel 'leaky-ring', not 'io-ehh'"),
        ]
    ],
    # ---------------------------------------------------------------- output paths
    *[
        Case(f"{cmd[0]}-{opt}-{name}", [*cmd, f"--{opt}", path], 2, frag)
        for cmd in (RUN,)
        for opt in ("out", "save-workload")
        for name, path, frag in [
            ("dev-full", "/dev/full", "is not a regular file"),
            ("dev-null", "/dev/null", "is not a regular file"),
            ("fifo", "fifo", "is not a regular file"),
            ("dir", "dir", "is a folder"),
            ("dot", ".", "names a folder"),
            ("slash", "new/", "names a folder"),
            ("under-a-file", "afile/x.json", "a folder on that path is a file"),
            ("deep-under-a-file", "afile/a/b/x.json", "a folder on that path is a file"),
            ("proc", "/proc/x.json", "cannot write in folder /proc"),
            ("proc-new-dir", "/proc/new/x.json", "cannot write in folder /proc"),
            ("sys", "/sys/x.json", "cannot write in folder /sys"),
            ("empty", "", "names a folder"),
            ("nul", "a\x00b.json", "contains a NUL byte"),
        ]
    ],
    *[
        Case(f"{cmd[0]}-out-{name}", [*cmd, "--out", path], code, frag)
        for cmd in (BENCH, [*AUDIT, "-d", "groq"])
        for name, path, code, frag in [
            ("file", "afile", 2, "exists and is not a folder"),
            ("fifo", "fifo", 2, "exists and is not a folder"),
            ("dev-full", "/dev/full", 2, "exists and is not a folder"),
            ("under-a-file", "afile/out", 2, "is not a folder"),
            ("proc", "/proc", 2, "cannot write in folder /proc"),
            ("proc-new", "/proc/new/out", 2, "cannot write in folder /proc"),
            ("locked", "locked", 4, "is being written by another hwbench"),
        ]
    ],
    # ---------------------------------------------------------------- the results store (issue 33)
    *[
        Case(f"store-{name}", ["results", "--store", store, *argv], code, frag)
        for name, store, argv, code, frag in [
            (
                "not-a-database",
                NOTDB,
                ["list"],
                2,
                "is not a hwbench store (file is not a database)",
            ),
            ("newer-schema", f"{STORES}/newer.sqlite", ["list"], 2, "newer than this hwbench understands"),
            ("under-a-file", "afile/x.sqlite", ["list"], 2, "cannot create the results store"),
            ("read-only-proc", "/proc/x.sqlite", ["list"], 4, "cannot open the results store"),
            ("read-only-sys", "/sys/x.sqlite", ["list"], 4, "cannot open the results store"),
            ("postgres-refused", "postgresql://u:secret@127.0.0.1:1/hw", ["list"], 4, "u:***@127.0.0.1:1/hw"),
            ("bad-scheme", "mysql://x/y", ["list"], 2, "store URL scheme 'mysql' is not supported"),
            ("show-missing", GOOD, ["show", "999"], 2, "no result '999' in the store"),
            ("list-since", GOOD, ["list", "--since", "yesterday"], 2, "--since expects an ISO"),
            ("list-limit", GOOD, ["list", "--limit", "-1"], 2, "'--limit': must be an integer"),
            ("compare-none", GOOD, ["compare"], 2, "compare needs two result ids"),
            ("compare-gate", GOOD, ["compare", "--fail-above", "nan"], 2, "'--fail-above'"),
            ("export-to-dir", GOOD, ["export", "--out", "dir"], 2, "is a folder"),
            ("export-to-proc", GOOD, ["export", "--out", "/proc/x.json"], 2, "cannot write"),
            ("import-missing", GOOD, ["import", "nope.json"], 2, "does not exist"),
            ("import-truncated", GOOD, ["import", "export-truncated.json"], 2, "cannot read"),
            (
                "import-wrong-type",
                GOOD,
                ["import", "export-wrong-type.json"],
                2,
                "malformed export",
            ),
            (
                "import-foreign",
                GOOD,
                ["import", "export-foreign.json"],
                2,
                "holds no hwbench result",
            ),
            ("import-no-doc", GOOD, ["import", "export-no-doc.json"], 2, "no document"),
            ("import-not-export", GOOD, ["import", "existing.json"], 2, "neither a hwbench export"),
            # issue 43: the user's file is data; what no column or field can hold is exit 2, naming it
            (
                "import-400-digits",
                GOOD,
                ["import", "export-400-digits.json"],
                2,
                "records[0].document.timing.run_s: the number 999999999999...(400 characters) is out of range",
            ),
            (
                "import-duplicate",
                GOOD,
                ["import", "export-duplicate.json"],
                2,
                f"export-duplicate.json records[1] repeats uid {'d' * 32} of export-duplicate.json records[0]",
            ),
            ("import-future", GOOD, ["import", "export-future.json"], 2, "is newer than this hwbench understands"),
            ("import-deep", GOOD, ["import", "deep.json"], 2, "nested too deeply to read"),
            ("import-tag-comma", GOOD, ["import", "--tag", "a,b", "export-duplicate.json"], 2, "without a comma"),
            ("folder", "dir", ["list"], 2, "dir is a folder: give --store / HWBENCH_STORE a file path"),
            ("empty", "", ["list"], 2, "'--store': must not be empty"),
            ("blank", "  ", ["list"], 2, "'--store': must not be empty"),
            ("list-limit-huge", GOOD, ["list", "--limit", "9" * 20], 2, "'--limit': must be an integer from 0 to"),
            ("show-id-huge", GOOD, ["show", "9" * 30], 2, f"no result '{'9' * 30}'"),
            ("show-id-superscript", GOOD, ["show", "²"], 2, "no result '²'"),
            ("list-kind-empty", GOOD, ["list", "--kind", ""], 2, "'--kind': must not be empty"),
        ]
    ],
    Case(
        "store-env-not-a-database",
        ["results", "list"],
        2,
        "is not a hwbench store",
        env={"HWBENCH_STORE": NOTDB},
    ),
    # ---------------------------------------------------------------- report, schema, metrics
    Case("report-unknown-target", ["report", "nothing-here"], 2, "nothing-here: no such file"),
    Case("report-missing-file", ["report", "nope.json"], 2, "nope.json: no such file"),
    Case("report-missing-path", ["report", "no/such/run.json"], 2, "no/such/run.json: no such file"),
    Case("report-folder", ["report", "dir"], 2, "dir is a folder, not a result file"),
    Case("report-deep", ["report", "deep.json"], 2, "nested too deeply to read"),
    Case("report-400-digits", ["report", "result-400-digits.json"], 2, "timing.run_s: the number 9999"),
    Case("report-truncated", ["report", "export-truncated.json"], 2, "cannot read export-truncated.json"),
    Case("report-binary", ["report", "garbage.npz"], 2, "cannot read garbage.npz"),
    Case("report-not-a-result", ["report", "existing.json"], 2, "is not a hwbench result file"),
    Case("report-history-empty", ["report", "history", "--store", GOOD], 2, "no stored result"),
    Case("report-missing-id", ["report", "12", "--store", GOOD], 2, "no result '12'"),
    Case("report-store-not-db", ["report", "1", "--store", NOTDB], 2, "is not a hwbench store"),
    Case("report-limit", ["report", "history", "--limit", "-2"], 2, "'--limit'"),
    Case("schema-unknown", ["schema", "nope"], 2, "unknown schema 'nope'; choose from: audit, bench"),
    Case("metrics-unknown", ["metrics", "nope"], 2, "unknown metric 'nope'; choose from"),
    # ---------------------------------------------------------------- sweep, train, train-bench
    Case("sweep-grid-word", ["sweep", "--grid", "exp:7..x"], 2, "--grid widths: '7..x' is not an integer"),
    Case("sweep-device", ["sweep", "--device", "nope"], 2, "unknown device 'nope'"),
    Case("sweep-seeds", ["sweep", "--seeds", "a"], 2, "--seeds: 'a' is not an integer"),
    # issue 43: refused before a cluster starts (as audit --seed), with the limits
    Case("sweep-seeds-neg", ["sweep", "--seeds=-1"], 2, "--seeds: values must be integers from 0 to 4294967295"),
    Case("sweep-seeds-2^32", ["sweep", "--seeds", "4294967296"], 2, "from 0 to 4294967295, got 4294967296"),
    Case(
        "sweep-seeds-range-huge",
        ["sweep", "--seeds", "0..4294967296"],
        2,
        "'0..4294967296' is 4,294,967,297 values; a sweep has at most 100,000 cells",
    ),
    Case("sweep-seeds-range-2^80", ["sweep", "--seeds", f"0..{2**80}"], 2, "a sweep has at most 100,000 cells"),
    Case("sweep-seeds-empty", ["sweep", "--seeds", ""], 2, "'--seeds': must not be empty"),
    Case("sweep-id-empty", ["sweep", "--id", ""], 2, "'--id': must not be empty"),
    Case("sweep-resume-empty", ["sweep", "--resume", ""], 2, "'--resume': must not be empty"),
    Case("sweep-kernel-blank", ["sweep", "--kernel", " "], 2, "'--kernel' / '-k': must not be empty"),
    Case("sweep-dt-huge", ["sweep", "--dt", "1000000000000"], 2, "--dt: kernel 'io-ehh' takes dt divisors from 1"),
    Case(
        "sweep-cells-product",
        ["sweep", "--seeds", "0..99999", "--grid", "exp:1..23"],
        2,
        "the sweep would have 2,300,000 cells",
    ),
    Case("sweep-grid-width-0", ["sweep", "--grid", "exp:0..5"], 2, "--grid widths: values must be integers from 1"),
    Case("sweep-spec-deep", ["sweep", "--spec", "deep.json"], 2, "nested too deeply to read"),
    Case("sweep-spec-seed-neg", ["sweep", "--spec", "spec-seed-neg.toml"], 2, "seeds.0: Input should be greater"),
    Case("audit-profile-deep", [*AUDIT, "-d", "groq", "--profile", "deep.toml"], 2, "nested too deeply to read"),
    Case("audit-config-io-ehh", [*AUDIT, "-d", "groq", "--config", "gemm_k1"], 2, "--config does not apply"),
    Case("audit-dt-refine-gemm", [*AUDIT, "-k", "gemm", "-d", "tpu-v3", "--dt-refine"], 2, "--dt-refine does not"),
    Case("bench-dl-config-empty", ["bench", "-k", "gemm", "--config", ""], 2, "'--config': must not be empty"),
    Case("bench-dl-precision-empty", ["bench", "-k", "gemm", "--precision", ""], 2, "'--precision': must not be"),
    Case("bench-config-io-ehh", [*BENCH, "--config", "gemm_k1"], 2, "--config applies to the DL primitives"),
    Case("bench-dl-sizes", ["bench", "-k", "gemm", "--sizes", "4"], 2, "--sizes does not apply to the DL primitive"),
    Case(
        "bench-dl-all-skipped-tf32",
        ["bench", "-k", "relu", "--precision", "tf32", "--repeats", "1"],
        4,
        "every configuration was skipped, nothing measured (relu_k1 tf32, relu_k2 tf32, relu_k3 tf32, relu_k4 tf32: "
        "TF32 changes matrix products only",
    ),
    Case(
        "bench-dl-scale-down-below-batch-1",
        ["bench", "-k", "gemm", "--scale-down", "--max-gflop", "1e-9", "--repeats", "1"],
        4,
        "every configuration was skipped, nothing measured (gemm_k1 fp32: M=64 N=1760 K=1760 does not fit even at",
    ),
    Case("run-store-empty", [*RUN, "--store", ""], 2, "'--store': must not be empty"),
    Case("run-tag-comma", [*RUN, "--tag", "a,b"], 2, "a tag is 1 to 128 characters without a comma"),
    Case("run-tag-long", [*RUN, "--tag", "t" * 129], 2, "a tag is 1 to 128 characters"),
    Case("run-engine-empty", [*RUN, "--engine", ""], 2, "'--engine': must not be empty"),
    Case("run-set-deep", [*RUN, "--set", "g_CaL=" + "[" * 5000], 2, "non-empty JSON list of finite numbers"),
    Case("run-gemm-dim-word", ["run", "-k", "gemm", "--set", "m=abc"], 2, "gemm dimension 'm' must be an integer"),
    Case("run-gemm-dim-float", ["run", "-k", "gemm", "--set", "m=2.5"], 2, "gemm dimension 'm' must be an integer"),
    Case("run-gemm-unknown", ["run", "-k", "gemm", "--set", "zz=1"], 2, "settable: config, dist, m, n, k"),
    Case("run-gemm-dim-huge", ["run", "-k", "gemm", "--set", "m=99999999999"], 4, "GiB for its operands"),
    Case("train-samples-digits", ["train", "--samples", "64"], 2, "--samples sets the synthetic dataset's size"),
    Case("train-hidden-csnn", ["train", "--net", "csnn", "--hidden", "8"], 2, "--hidden is the DSNN's hidden"),
    Case("train-dataset", ["train", "--dataset", "nope"], 2, "'nope' is not one of 'synthetic', 'digits'"),
    Case("train-epochs", ["train", "--epochs", "0"], 2, "'--epochs': must be an integer from 1"),
    Case("train-reset", ["train", "--reset", "sideways"], 2, "is not one of 'subtract', 'zero'"),
    Case("train-deploy", ["train", "--deploy", "nope"], 2, "is not one of 'loihi', 'spinnaker'"),
    Case("train-bench-batch", ["train-bench", "--batch", "-1"], 2, "'--batch': must be an integer from 1"),
    Case("train-bench-typo", ["train-bench", "--epochs", "3"], 2, "No such option '--epochs'"),
    # ---------------------------------------------------------------- a model's inputs (issue 40)
    *[
        Case(f"model-{k}", [*argv, *opts], code, frag)
        for argv in (MODEL_RUN, MODEL_AUDIT)
        for k, opts, code, frag in MODEL_INPUT_CASES
        for k in [f"{argv[0]}-{k}"]
    ],
    Case("model-run-outputs-dir", [*MODEL_RUN, "--outputs", "dir"], 2, "is a folder; give a file path"),
    Case("model-run-outputs-fifo", [*MODEL_RUN, "--outputs", "fifo"], 2, "not a regular file"),
    Case("model-run-outputs=out", [*MODEL_RUN, "--outputs", "o.npz", "--out", "o.npz"], 2, "name the same file"),
    Case(
        "model-run-keeps-existing", [*MODEL_RUN, "--inputs", "in_f64.npz", "--outputs", "existing.json"], 2, "float64"
    ),
    Case("model-run-cells", [*MODEL_RUN, "--cells", "64"], 2, "--model cannot be combined with --cells"),
    Case("model-run-kernel", [*MODEL_RUN, "-k", "gemm"], 2, "--model cannot be combined with --kernel"),
    Case("model-run-workload", [*MODEL_RUN, "--workload", "w64.npz"], 2, "--model cannot be combined with --workload"),
    Case("model-run-outputs-alone", [*RUN, "--outputs", "o.npz"], 2, "--outputs is an option of a model"),
    Case("model-run-inputs-alone", [*RUN, "--inputs", "in_f64.npz"], 2, "--inputs is an option of a model"),
    Case("model-run-loihi", [*MODEL_RUN, "-d", "loihi"], 4, "has no floating-point arithmetic"),
    Case("model-audit-spinnaker", [*MODEL_AUDIT[:3], "-d", "spinnaker"], 4, "has no floating-point arithmetic"),
    Case("model-audit-no-device", MODEL_AUDIT[:3], 2, "give at least one --device"),
    Case("model-audit-kernel", [*MODEL_AUDIT, "-k", "gemm"], 2, "--model cannot be combined with --kernel"),
    Case("model-audit-rtol-alone", [*AUDIT, "-d", "groq", "--rtol", "0.1"], 2, "--rtol is an option of a model"),
    Case("model-audit-map-no-target", [*MODEL_AUDIT, "--precision-map"], 2, "--precision-map needs a target"),
    *numbers(MODEL_AUDIT, "--rtol", {"neg": "-1", "nan": "nan", "inf": "inf", "word": "tight"}, "'--rtol'"),
    *numbers(MODEL_AUDIT, "--atol", {"neg": "-0.5", "1e400": "1e400", "empty": ""}, "'--atol'"),
    Case("model-audit-labels-float", [*MODEL_AUDIT, "--labels", "labels_float.npy"], 2, "non-negative integer classes"),
    Case("model-audit-labels-text", [*MODEL_AUDIT, "--labels", "labels_text.npy"], 2, "is not a .npy array"),
    Case("model-audit-labels-missing", [*MODEL_AUDIT, "--labels", "nope.npy"], 2, "no such file"),
    Case("model-audit-keep-text", [*MODEL_AUDIT, "--keep-wider", "kw_text.json"], 2, "is not JSON"),
    Case("model-audit-keep-empty", [*MODEL_AUDIT, "--keep-wider", "kw_empty.json"], 2, '{"keep_wider": ["node name"'),
    Case(
        "model-audit-keep-unknown", [*MODEL_AUDIT, "--keep-wider", "kw_unknown.json"], 2, "node 'no such node', which"
    ),
    Case("model-audit-keep-dir", [*MODEL_AUDIT, "--keep-wider", "dir"], 2, "is a folder"),
    Case(
        "model-audit-wider-same", [*MODEL_AUDIT, "--keep-wider", "kw_unknown.json", "--wider", "fp8-e4m3"], 2, "--wider"
    ),
    Case(
        "model-audit-wider-unknown",
        [*MODEL_AUDIT, "--precision-map", "--rtol", "1", "--wider", "fp64"],
        2,
        "--wider fp64",
    ),
    Case("model-audit-locked-out", [*MODEL_AUDIT, "--out", "locked"], 4, "another hwbench"),
    Case(
        "model-sweep-kernel",
        ["sweep", "--model", "m.onnx", "-k", "gemm"],
        2,
        "--model cannot be combined with --kernel",
    ),
    Case("model-sweep-inputs-alone", ["sweep", "--inputs", "in_f64.npz"], 2, "--inputs is an option of a model"),
    Case("model-sweep-bad-inputs", ["sweep", "--model", "m.onnx", "--inputs", "in_names.npz"], 2, "has no array 'x'"),
    # a failing run must not clobber an earlier result, nor leave its other output
    Case("run-fails-keeps-existing", [*RUN, "--set", "dt=0", "--out", "existing.json"], 2, "'dt' must be"),
    Case(
        "run-fails-no-workload",
        [*RUN, "--engine", "nump", "--save-workload", "new.npz", "--out", "n.json"],
        2,
        "unknown engine",
    ),
]


# ------------------------------------------------------------------------------ ONNX models
# Hostile model files (hwbench.testing.bad_models, written into the arena's models/ folder): each
# must be refused with exit 2 and one line, before any work, its secret never printed. They run
# through every command that takes --model once the CLI has the option.
def _model_option() -> bool:
    from hwbench.cli.main import cli

    return any("--model" in p.opts for p in cli.commands["run"].params)


def _model_cases() -> list[Case]:
    from hwbench.testing.bad_models import CASES as MODELS

    commands = (["run", "--device", "cpu"], ["audit", "--device", "cpu"])
    return [
        Case(f"{cmd[0]}-model-{m.id}", [*cmd, "--model", m.file], 2, m.fragment) for cmd in commands for m in MODELS
    ]


MODEL_CASES = _model_cases()


@pytest.mark.skipif(not _model_option(), reason="this build's CLI has no --model option")
@pytest.mark.parametrize("case", MODEL_CASES, ids=[c.id for c in MODEL_CASES])
def test_bad_model(case: Case, in_arena, monkeypatch: pytest.MonkeyPatch) -> None:
    from hwbench.testing.bad_models import SECRET

    test_bad_invocation(case, in_arena, monkeypatch)
    assert SECRET not in run_cli(case.argv).stderr


# ------------------------------------------------------------------------------ end of ONNX models


def _broken_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in plugin whose module cannot be imported (what a missing vendor SDK looks like)."""
    monkeypatch.setitem(host.BUILTIN_PLUGINS, "builtin-broken", "hwbench.plugins.devices._no_such_module")


TALLY: Counter[str] = Counter()


def summary() -> str:
    """The counts the issue asks for (tests/cli/conftest.py prints it after the run)."""
    return (
        f"bad-input corpus: {TALLY['invocations']} invocations; tracebacks {TALLY['traceback']}, "
        f"partial/clobbered files {TALLY['files changed']}, internal errors for user input "
        f"{TALLY['internal error']}, wrong exit code {TALLY['wrong exit code']}, "
        f"not one error line {TALLY['not one line']}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_invocation(case: Case, in_arena, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.env:
        for key, value in case.env.items():
            if key == "_BROKEN_BUILTIN":
                _broken_builtin(monkeypatch)
            else:
                monkeypatch.setenv(key, value)
        host._cached = None  # this case loads its own registry under its environment
    before = snapshot(in_arena)
    outcome = run_cli(case.argv)
    verdict = judge(outcome)
    after = snapshot(in_arena)
    TALLY.update(
        {
            "invocations": 1,
            "traceback": verdict.traceback,
            "files changed": after != before,
            "internal error": verdict.internal_error and case.code != 3,
            "wrong exit code": outcome.code != case.code,
            "not one line": not verdict.one_line,
        }
    )
    assert not verdict.traceback, outcome.stderr
    assert outcome.code == case.code, outcome.stderr
    assert case.code == 3 or not verdict.internal_error, outcome.stderr
    assert verdict.one_line, outcome.stderr
    assert case.fragment in outcome.error_lines[0], outcome.error_lines[0]
    assert outcome.stdout == ""
    assert after == before, "a refused command must create, change or replace nothing"


def test_the_corpus_is_large_and_its_ids_unique() -> None:
    assert len(CASES) >= 150
    assert len({c.id for c in CASES}) == len(CASES)


if __name__ == "__main__":  # the counts quoted in the report
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
