"""LoRA/QLoRA training of GNT translators: SFT then DPO, with TRL + PEFT + accelerate.

Entry points: ``train/sft.py`` and ``train/dpo.py`` (thin files running the commands of :mod:`gnt.cli.train`),
over the library functions :func:`gnt.training.sft.run_sft` / :func:`gnt.training.dpo.run_dpo`.
Recipe parsing (:mod:`gnt.recipe`, :mod:`gnt.training.config`) imports TRL only to read its config fields, so a
bad recipe fails before torch loads a model; trainers, PEFT and W&B are imported where they are used.
"""
