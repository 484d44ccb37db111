"""Online alignment with GRPO (TRL's ``GRPOTrainer``, LoRA): the policy samples, the GNT rewards score, it learns.

The on-policy rounds of :mod:`gnt.alignment.onpolicy` sample, pair and then train; GRPO does all three at every
step: it samples ``num_generations`` answers per prompt from the current policy, scores each with the same reward
functions (:mod:`gnt.alignment.rewards`: label, the judge's verdict, adequacy) and moves the policy towards the
answers that score above their group's mean. It starts from an SFT adapter (``sft_adapter``) and trains it further,
as DPO does. On a CPU it samples with the model itself; on GPUs TRL's vLLM integration samples (``use_vllm: true``,
``vllm_mode: colocate`` in the recipe).

The rows are the build's SFT prompts (one per entry), each with its entry's id and language: a reward reads the
entry's references and set from the build's training entries. The judge of the judge reward is loaded once, with
its adapter, and judges through its cache in the output folder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gnt.alignment.rewards import REWARDS, RewardSpec, check_rewards, read_samples, with_verdicts
from gnt.data.entry import Entry
from gnt.io import read_jsonl
from gnt.recipe import RecipeError, ResolvedRecipe
from gnt.training.config import as_recipe
from gnt.training.runner import PreparedRun, StagePlugin, run_stage


def training_entries(data_dir: str | Path) -> dict[tuple[str, str], Entry]:
    """The build's training entries by (language, id): what a prompt's answers are scored against."""
    entries = {}
    for name in ("mgente_train.jsonl", "templated_train.jsonl"):
        path = Path(data_dir) / "eval" / name
        if not path.is_file():
            if name.startswith("mgente"):
                raise RecipeError(f"data_dir: {path} is missing: rebuild the data with `python data/build.py "
                                  f"out_dir={data_dir}` (builds write their training entries for alignment)")
            continue
        for record in read_jsonl(path):
            entry = Entry.from_record(record)
            entries[(entry.lang, entry.id)] = entry
    return entries


class RewardFunctions:
    """The recipe's rewards as TRL reward functions (one per reward, weighted by TRL's ``reward_weights``); the
    samples of one call are read and judged once, whichever reward asks first."""

    def __init__(self, project: Any, data_dir: str | Path, cache: Path) -> None:
        weights = {name: float(w) for name, w in project.rewards.items()}
        check_rewards(weights)
        self.spec = RewardSpec(weights)
        self.entries = training_entries(data_dir)
        self.project, self.cache = project, cache
        self._judge: Any = None
        self._last: tuple[tuple[str, ...], list[dict[str, float]]] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.spec.weights)

    @property
    def weights(self) -> list[float]:
        return [self.spec.weights[name] for name in self.names]

    def judge(self) -> Any:
        if self._judge is None:
            from gnt.judge.config import load_judge_recipe
            from gnt.judge.run import _llm_judge

            recipe = load_judge_recipe(self.project.judge, list(self.project.judge_keys.items()))
            self._judge, _ = _llm_judge(recipe, cache_path=self.cache)
        return self._judge

    def scores(self, completions: Sequence[Any], ids: Sequence[str], langs: Sequence[str]) -> list[dict[str, float]]:
        texts = tuple(c[-1]["content"] if isinstance(c, list) else str(c) for c in completions)
        if self._last is not None and self._last[0] == texts:
            return self._last[1]
        missing = [(lang, i) for lang, i in zip(langs, ids, strict=True) if (lang, i) not in self.entries]
        if missing:
            raise RecipeError(f"prompts of entries the build has no training entry for: {missing[:3]}")
        samples = read_samples([self.entries[(lang, i)] for lang, i in zip(langs, ids, strict=True)], texts)
        if "judge" in self.spec.weights:
            samples = with_verdicts(samples, self.judge())
        result = [self.spec.score(s).rewards for s in samples]
        self._last = (texts, result)
        return result

    def functions(self) -> list[Callable[..., list[float]]]:
        def make(name: str) -> Callable[..., list[float]]:
            def reward(prompts: Any, completions: Any, id: Sequence[str], lang: Sequence[str], **_: Any) -> list[float]:  # noqa: A002
                return [scores[name] for scores in self.scores(completions, id, lang)]

            reward.__name__ = f"{name}_reward"
            reward.__doc__ = REWARDS[name].__doc__
            return reward

        return [make(name) for name in self.names]


def _resolve(setup: Any) -> tuple[str, Any, str]:
    from gnt.training.dpo import DPO

    return DPO.resolve(setup)


def _check_rows(tokenizer: Any, data: Any, setup: Any) -> None:
    if not setup.project.judge and setup.project.rewards.get("judge"):
        raise RecipeError("the judge reward needs judge: a judge recipe (e.g. recipes/judge-gemma270m.yaml)")


def _build_trainer(run: PreparedRun, callbacks: list) -> Any:
    from trl import GRPOTrainer

    from gnt.training.base_model import load_sft_policy
    from gnt.training.data import to_dataset

    args = run.setup.training_args
    rewards = RewardFunctions(run.setup.project, run.setup.project.data_dir, run.setup.output_dir / "judgments.jsonl")
    args.reward_weights = rewards.weights
    policy = load_sft_policy(run.sft_adapter, run.base_model, run.setup.model_args, args)
    args.model_init_kwargs = None
    trainer = GRPOTrainer(model=policy, reward_funcs=rewards.functions(), args=args,
                          train_dataset=to_dataset(run.data.train), processing_class=run.tokenizer,
                          callbacks=callbacks)
    run.record["rewards"] = {"names": rewards.names, "weights": rewards.weights, "judge": run.setup.project.judge}
    return trainer


GRPO = StagePlugin("grpo", _resolve, _check_rows, _build_trainer)


def run_grpo(recipe: str | ResolvedRecipe | None, overrides: Sequence[tuple[str, Any]] = ()) -> Path:
    """Train an SFT adapter further with GRPO as ``recipe`` says; returns the output directory."""
    return run_stage(GRPO, as_recipe("grpo", recipe, overrides))
