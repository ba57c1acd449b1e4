"""``hwbench train`` and ``hwbench train-bench``: training spiking networks (docs/training.md).

``train`` trains a DSNN or CSNN (snnTorch's neurons and surrogates, BPTT, AdamW) on the JAX
engine, prints the loss and held-out accuracy per epoch and the training throughput, and can
audit the run's precision against fp64 (``--audit``) and deploy the trained DSNN onto Loihi /
SpiNNaker's fixed-point models (``--deploy``). ``train-bench`` runs the study's throughput sweeps
and writes one JSON result and one plot per sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hwbench.cli import validate
from hwbench.cli.command import Command
from hwbench.cli.common import json_option
from hwbench.cli.output import print_json, print_table, stderr
from hwbench.cli.record import record_result, store_options
from hwbench.core.errors import UsageError
from hwbench.core.results import write_json

if TYPE_CHECKING:  # the training stack (JAX) loads only when a command runs
    from hwbench.plugins.kernels.snn.results import EpochRecord, TrainResult
    from hwbench.plugins.kernels.snn.training import TrainConfig

_Command = TypeVar("_Command", bound=Callable[..., Any])

NET_OPTIONS = [
    click.option("--net", type=click.Choice(["dsnn", "csnn"]), default="dsnn", show_default=True),
    click.option("--neuron", type=click.Choice(["leaky", "synaptic", "rleaky"]), default="leaky", show_default=True),
    click.option("--reset", type=click.Choice(["subtract", "zero"]), default="subtract", show_default=True),
    click.option("--surrogate", type=click.Choice(["atan", "fast_sigmoid"]), default="atan", show_default=True),
    click.option(
        "--slope",
        type=validate.FiniteFloat(0.0, low_open=True),
        default=None,
        help="Surrogate slope (default: snnTorch's, 2 / 25).",
    ),
    click.option(
        "--hidden", type=validate.BoundedInt(1, 100_000), default=1000, show_default=True, help="DSNN hidden neurons."
    ),
    click.option(
        "--steps",
        type=validate.BoundedInt(1, 10_000),
        default=25,
        show_default=True,
        help="Time steps per sample (BPTT length).",
    ),
    click.option("--encoding", type=click.Choice(["direct", "rate"]), default="direct", show_default=True),
    click.option(
        "--precision",
        type=click.Choice(["fp64", "fp32", "bf16", "fp16", "ipu-fp16-sr"]),
        default="fp32",
        show_default=True,
    ),
    click.option(
        "--lr",
        type=validate.FiniteFloat(0.0, 1.0, low_open=True),
        default=5e-4,
        show_default=True,
        help="AdamW learning rate.",
    ),
    click.option("--seed", type=validate.SEED, default=0, show_default=True),
    click.option(
        "--shards",
        type=validate.BoundedInt(1, 1024),
        default=2,
        show_default=True,
        help="Data-parallel parts of each minibatch, run at once on threads (the batch sum's order depends on it).",
    ),
]


def net_options(f: _Command) -> _Command:
    """Decorator: the network options every training command shares (``NET_OPTIONS``)."""
    for opt in reversed(NET_OPTIONS):
        f = opt(f)
    return f


def _config(o: dict[str, Any], n_in: int) -> TrainConfig:
    from hwbench.plugins.kernels.snn.networks import NetSpec
    from hwbench.plugins.kernels.snn.surrogate import Surrogate
    from hwbench.plugins.kernels.snn.training import TrainConfig

    spec = NetSpec(
        net=o["net"],
        neuron=o["neuron"],
        reset=o["reset"],
        surrogate=Surrogate(o["surrogate"], o["slope"]),
        n_in=n_in,
        hidden=o["hidden"],
        n_steps=o["steps"],
        encoding=o["encoding"],
    )
    return TrainConfig(spec=spec, precision=o["precision"], lr=o["lr"], seed=o["seed"], shards=o["shards"])


def _out_dir(out: str | None) -> Path | None:
    if out is None:
        return None
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out must be a directory, got the file {out}")
    return path


@click.command(cls=Command)
@net_options
@click.option("--dataset", type=click.Choice(["synthetic", "digits"]), default="digits", show_default=True)
@click.option(
    "--inputs",
    type=click.Choice(["784", "64"]),
    default="784",
    show_default=True,
    help="784: 28x28 (digits resampled); 64: the 8x8 digits as shipped (DSNN only).",
)
@click.option("--batch", type=validate.BoundedInt(1, 65_536), default=128, show_default=True)
@click.option("--epochs", type=validate.BoundedInt(1, 10_000), default=3, show_default=True)
@click.option(
    "--samples",
    type=validate.BoundedInt(1, 10_000_000),
    default=1280,
    show_default=True,
    help="Synthetic dataset size.",
)
@click.option("--audit", is_flag=True, help="Also train fp64 (and fp32) and judge this precision against them.")
@click.option(
    "--deploy",
    "deploy_to",
    multiple=True,
    type=click.Choice(["loihi", "spinnaker"]),
    help="Deploy the trained DSNN onto a chip's fixed-point model (repeatable).",
)
@click.option("--out", type=validate.OutDir(), default=None, help="Directory for train.json.")
@json_option
@store_options
def train(
    inputs: str,
    dataset: str,
    batch: int,
    epochs: int,
    samples: int,
    audit: bool,
    deploy_to: tuple[str, ...],
    out: str | None,
    as_json: bool,
    **o: object,
) -> None:
    """Train a spiking network (BPTT, surrogate gradients, AdamW) and report accuracy and images/s."""
    from hwbench.plugins.kernels.snn import session

    out_dir = _out_dir(out)
    _check_train_options(o, dataset, deploy_to)
    plan = session.Plan(
        cfg=_config(o, int(inputs)),
        dataset=dataset,
        epochs=epochs,
        batch=batch,
        samples=samples,
        deploy=deploy_to,
        audit=audit,
    )
    if deploy_to:
        from hwbench.plugins.kernels.snn.deploy import check_deployable

        check_deployable(plan.cfg.spec)

    def on_epoch(rec: EpochRecord) -> None:
        acc = "-" if rec.test_accuracy is None else f"{rec.test_accuracy:.4f}"
        stderr.print(f"epoch {rec.epoch}: loss {rec.loss:.4f}, held-out accuracy {acc}")

    result = session.run(plan, on_epoch=on_epoch)
    if out_dir is not None:
        write_json(result, out_dir / "train.json")
    record_result(result)
    if as_json:
        print_json(result)
        return
    _print_train(result)


def _check_train_options(o: dict[str, Any], dataset: str, deploy_to: tuple[str, ...]) -> None:
    """Options that do not apply to the chosen data or network, and deployments that cannot work,
    refused before minutes of training, not ignored or found after."""
    ctx = click.get_current_context()
    if dataset != "synthetic":
        validate.refuse_given(ctx, ("samples",), f"sets the synthetic dataset's size; {dataset} has its own images")
    if o["net"] != "dsnn":
        validate.refuse_given(ctx, ("hidden",), "is the DSNN's hidden width; the CSNN's layers are fixed")
    if deploy_to and o["encoding"] != "rate":
        raise UsageError("--deploy needs spike input: add --encoding rate (and --reset zero for loihi)")
    if "loihi" in deploy_to and o["reset"] != "zero":
        raise UsageError("--deploy loihi needs --reset zero: Loihi's hard-wired LIF neurons reset to zero")


def _print_train(result: TrainResult) -> None:
    cfg = result.config
    click.echo(
        f"{cfg['net']} {cfg['neuron']}/{cfg['reset']} {cfg['surrogate']}, {cfg['precision']}, "
        f"batch {cfg['batch']}, {cfg['n_steps']} steps on {result.dataset}"
    )
    acc = result.final_test_accuracy
    click.echo(
        f"held-out accuracy {'-' if acc is None else f'{acc:.4f}'}; "
        f"training throughput {result.images_per_s:,.0f} images/s ({result.backend})"
    )
    if result.audit:
        v = result.audit["verdict"]
        click.echo(f"precision audit vs fp64: {v['verdict']} (score {v['score']:.3g}); " + "; ".join(v["reasons"]))
    if result.deployments:
        print_table(
            "Deployment (emulated fixed point)",
            ["device", "mode", "accuracy", "float64 model", "agreement"],
            [
                [d.device, d.mode, f"{d.accuracy:.4f}", f"{d.float_accuracy:.4f}", f"{d.agreement:.4f}"]
                for d in result.deployments
            ],
        )


@click.command("train-bench", cls=Command)
@net_options
@click.option(
    "--sweep",
    "sweeps",
    default="batch",
    show_default=True,
    help="Comma-separated: batch (8..128), width (DSNN hidden), depth (CSNN channels), neuron, precision.",
)
@click.option(
    "--batch",
    type=validate.BoundedInt(1, 65_536),
    default=128,
    show_default=True,
    help="Batch of the non-batch sweeps.",
)
@click.option(
    "--repeats", type=validate.REPEATS, default=5, show_default=True, help="Timed steps per point (min reported)."
)
@click.option(
    "--out", type=validate.OutDir(), default=None, help="Directory for train-bench.json and one PNG per sweep."
)
@json_option
@store_options
def train_bench(sweeps: str, batch: int, repeats: int, out: str | None, as_json: bool, **o: object) -> None:
    """Training throughput sweeps (images/s = batch / step time), FLOPs and the compute split."""
    from hwbench.plugins.kernels.snn import throughput as tp
    from hwbench.plugins.kernels.snn.results import TrainBenchResult
    from hwbench.plugins.kernels.snn.session import _backend

    names = [s.strip() for s in sweeps.split(",") if s.strip()]
    bad = [s for s in names if s not in tp.SWEEPS]
    if bad or not names:
        raise UsageError(f"unknown sweep {', '.join(bad) or '(none)'}; choose from: {', '.join(tp.SWEEPS)}")
    if repeats < 1 or batch < 1:
        raise UsageError("--repeats and --batch must be positive integers")
    out_dir = _out_dir(out)
    cfg = _config(o, 784)
    result = TrainBenchResult(
        backend=_backend(),
        dataset="synthetic (seeded uniform images of MNIST's shape)",
        sweeps={},
        notes=[f"each point is the minimum of {repeats} timed steps (the least disturbed by other work on the host)"],
    )
    for name in names:
        stderr.print(f"sweep {name} ...")
        result.sweeps[name] = tp.sweep(name, cfg, batch=batch, repeats=repeats)
    if out_dir is not None:
        from hwbench.plugins.kernels.snn.plots import sweep_plot

        write_json(result, out_dir / "train-bench.json")
        for name, points in result.sweeps.items():
            sweep_plot(name, points, out_dir / f"train-bench-{name}.png")
    record_result(result)
    if as_json:
        print_json(result)
        return
    for name, points in result.sweeps.items():
        print_table(
            f"Training throughput: {name} sweep ({result.backend})",
            ["net", "neuron", "precision", "batch", "size", "images/s", "TFLOPS", "matmul time share"],
            [
                [
                    p.net,
                    p.neuron,
                    p.precision,
                    p.batch,
                    p.hidden if p.net == "dsnn" else "-".join(map(str, p.channels)),
                    f"{p.images_per_s:,.0f}",
                    f"{p.tflops:.3f}",
                    "-" if p.matmul_time_share is None else f"{p.matmul_time_share:.2f}",
                ]
                for p in points
            ],
        )


COMMANDS = [train, train_bench]
