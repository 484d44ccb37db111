"""On-policy preference optimisation: sample the policy, score its samples with GNT rewards, DPO on best vs worst.

    python train/onpolicy.py recipes/gemma270m-onpolicy.yaml                      # rounds of sample → pair → DPO
    python train/onpolicy.py recipes/gemma270m-onpolicy.yaml rounds=2 seed=1
    python train/onpolicy.py recipes/qwen-onpolicy.yaml pairs_only=true           # GPU: pairs now, then
    accelerate launch train/dpo.py recipes/qwen-dpo.yaml sft_adapter=... data_dir=OUT/pairs-round-1

The keys are the fields of gnt.alignment.onpolicy.OnPolicyConfig: the sampling backend's keys, the rewards and
their judge, and under ``dpo`` the keys of train/dpo.py for each round. Every problem a run can be refused for (a
reward name, k < 2, a policy adapter of another base model, finished rounds another setting would overwrite) is
one error line, exit 2, before anything is sampled.
"""

from __future__ import annotations

from gnt.cli.command import Call, Command


def _settings() -> tuple[type, ...]:
    from gnt.alignment.onpolicy import OnPolicyConfig

    return (OnPolicyConfig,)


def _run(call: Call) -> None:
    from gnt.alignment.onpolicy import OnPolicyConfig, run_onpolicy

    final = run_onpolicy(call.build(OnPolicyConfig))
    print(f"on-policy alignment done: {final}")


COMMAND = Command(
    name="onpolicy", script="train/onpolicy.py", line="on-policy DPO: the policy's own samples scored by GNT rewards",
    settings=_settings, run=_run, summary=__doc__ or "", recipe="an on-policy recipe (recipes/*-onpolicy.yaml)",
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
