"""Print (or run) this machine's `accelerate launch` command for a multi-machine training run.

    python scripts/slurm/node_command.py --stage sft --recipe recipes/qwen.yaml          # inside a SLURM job
    python scripts/slurm/node_command.py --stage sft --recipe recipes/qwen.yaml \\
        --num-machines 2 --machine-rank 1 --processes-per-machine 8 --main-ip 10.0.0.1 -- learning_rate=1e-4

Defaults come from the SLURM environment (SLURM_JOB_NUM_NODES, SLURM_NODEID, SLURM_GPUS_ON_NODE, MAIN_ADDR set by
scripts/slurm/train.sbatch). Everything after `--` is passed to the training script as recipe overrides.
With --exec the command replaces this process (what train.sbatch does on every node).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gnt.training.launch import DEFAULT_CONFIG, NodeLaunch, node_command, shell_line, slurm_defaults

ROOT = Path(__file__).resolve().parents[2]


def parse(argv: list[str]) -> tuple[NodeLaunch, bool]:
    overrides: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, overrides = argv[:cut], argv[cut + 1:]
    defaults = slurm_defaults()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", required=True, choices=["sft", "dpo"])
    parser.add_argument("--recipe", required=True)
    parser.add_argument("--num-machines", type=int, default=defaults.get("num_machines"))
    parser.add_argument("--machine-rank", type=int, default=defaults.get("machine_rank"))
    parser.add_argument("--processes-per-machine", type=int, default=defaults.get("processes_per_machine"))
    parser.add_argument("--main-ip", default=defaults.get("main_process_ip"))
    parser.add_argument("--main-port", type=int, default=defaults.get("main_process_port", 29500))
    parser.add_argument("--config-file", default=DEFAULT_CONFIG)
    parser.add_argument("--launch-arg", action="append", default=[], help="extra accelerate launch option (repeat)")
    parser.add_argument("--exec", action="store_true", help="run the command instead of printing it")
    args = parser.parse_args(argv)
    missing = [name for name in ("num_machines", "machine_rank", "processes_per_machine", "main_ip")
               if getattr(args, name) is None]
    if missing:
        parser.error(f"not in a SLURM job and not given: {', '.join('--' + m.replace('_', '-') for m in missing)}")
    launch_args = [part for arg in args.launch_arg for part in arg.split(maxsplit=1)]
    launch = NodeLaunch(
        stage=args.stage, recipe=args.recipe, num_machines=args.num_machines, machine_rank=args.machine_rank,
        processes_per_machine=args.processes_per_machine, main_process_ip=args.main_ip,
        main_process_port=args.main_port, config_file=args.config_file, launch_args=launch_args,
        overrides=overrides,
    )
    return launch, args.exec


def main(argv: list[str] | None = None) -> int:
    launch, run = parse(list(sys.argv[1:] if argv is None else argv))
    command = node_command(launch)
    if run:
        os.chdir(ROOT)
        os.execv(command[0], command)
    print(shell_line(command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
