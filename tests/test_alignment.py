"""On-policy alignment: GNT rewards, best-vs-worst pairs of the policy's own samples, rounds, and its bad inputs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gnt.alignment.onpolicy import OnPolicyConfig, pair_groups, run_onpolicy, settings_record
from gnt.alignment.rewards import (
    RewardSpec,
    Sample,
    adequacy_reward,
    adjective_form_reward,
    chrf_reward,
    judge_reward,
    label_reward,
    read_samples,
    target_chrf_reward,
)
from gnt.data.entry import Entry
from gnt.io import read_json, read_jsonl
from gnt.recipe import RecipeError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SET_N = Entry("X-1", "it", "Set-N", "The citizens are worried.", "I cittadini sono preoccupati.",
              ("La cittadinanza è preoccupata.",))
SET_G = Entry("X-2", "it", "Set-G", "Mrs Haug is worried.", "La signora Haug è preoccupata.",
              ("Haug è in pensiero.",), gender="F")


def _sample(entry: Entry, text: str, verdict: str | None = None) -> Sample:
    sample = read_samples([entry], [text])[0]
    return Sample(sample.entry, sample.text, sample.extraction, sample.chrf, verdict)


def test_each_reward_reads_the_output_against_its_entry() -> None:
    neutral = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è preoccupata.]", "NEUTRAL")
    gendered = _sample(SET_N, "<it> **GENDERED** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    nonsense = _sample(SET_N, "<it> **NEUTRAL** [Il tempo è bello oggi a Roma.]", "NEUTRAL")
    broken = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza", None)
    assert [label_reward(s) for s in (neutral, gendered, nonsense, broken)] == [1, 0, 1, 0]
    assert [judge_reward(s) for s in (neutral, gendered, nonsense, broken)] == [1, 0, 1, 0]
    assert [adequacy_reward(s) for s in (neutral, gendered, nonsense, broken)] == [1, 1, 0, 0]
    correct = _sample(SET_G, "<it> **GENDERED** [La signora Haug è preoccupata.]", "CORRECTLY GENDERED")
    wrong = _sample(SET_G, "<it> **GENDERED** [Il signor Haug è preoccupato.]", "WRONGLY GENDERED")
    assert (judge_reward(correct), judge_reward(wrong)) == (1, 0)


def test_pairs_are_best_against_worst_and_ties_and_all_bad_groups_are_counted() -> None:
    spec = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0})
    good = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è preoccupata.]", "NEUTRAL")
    masc = _sample(SET_N, "<it> **GENDERED** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    half = _sample(SET_N, "<it> **NEUTRAL** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    junk = _sample(SET_N, "<it> **GENDERED** [Roma è bella.]", "NEUTRAL")
    groups = [[spec.score(s) for s in group] for group in ([half, good, masc], [masc, masc], [junk, junk, masc][:2],
                                                            [junk, _sample(SET_N, "<it> **NEUTRAL** [Oggi.]", "NEUTRAL")])]
    pairs, counts = pair_groups(groups)
    assert [(i, best.sample.text, worst.sample.text) for i, best, worst in pairs] == [(0, good.text, masc.text)]
    assert (counts.prompts, counts.pairs, counts.ties, counts.all_bad) == (4, 1, 2, 1)
    assert counts.samples == 9 and counts.rewards_mean["adequacy"] == pytest.approx(5 / 9, abs=1e-3)


def test_the_chrf_reward_ranks_samples_the_binary_rewards_score_alike() -> None:
    close = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è preoccupata.]", "NEUTRAL")
    looser = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è molto in ansia.]", "NEUTRAL")
    broken = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza", None)
    assert chrf_reward(close) == pytest.approx(close.chrf / 100) and 0 < chrf_reward(looser) < chrf_reward(close)
    assert chrf_reward(broken) == 0.0
    binary, graded = RewardSpec(), RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0, "chrf": 1.0})
    assert adequacy_reward(looser) == 1.0, "both adequate: the binary rewards cannot tell them apart"
    _, counts = pair_groups([[binary.score(s) for s in (looser, close)]])
    assert (counts.pairs, counts.ties) == (0, 1)
    pairs, counts = pair_groups([[graded.score(s) for s in (looser, close)]])
    assert [(best.sample.text, worst.sample.text) for _, best, worst in pairs] == [(close.text, looser.text)]
    gendered = _sample(SET_N, "<it> **NEUTRAL** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    assert gendered.chrf > looser.chrf, "the gendered one is closer to Ref-G"
    pairs, _ = pair_groups([[graded.score(s) for s in (looser, gendered)]])
    assert pairs[0][1].sample.text == looser.text, "a whole binary reward outweighs the grade"


TEMPLATED_META = {"gender_marked": "true", "form_m": "curioso", "form_f": "curiosa", "form_n": "una persona curiosa"}
TPL_N = Entry("tpl-it-1-amb", "it", "Set-N", '"As an engineer, I am curious," I said.',
              "«Come ingegnere, sono curioso», dissi.",
              ("«Nel mio lavoro di ingegneria, sono una persona curiosa», dissi.",), origin="templated",
              meta=TEMPLATED_META)
TPL_G = Entry("tpl-it-1-det", "it", "Set-G", '"As an engineer, I am curious," she said.',
              "«Come ingegnera, sono curiosa», disse.", ("«Come ingegnera, sono una persona curiosa», disse.",),
              gender="F", origin="templated", meta=TEMPLATED_META)


def test_adjective_form_sees_the_gendered_adjective_a_small_judge_calls_neutral() -> None:
    """The policy's rewrite of the noun with the adjective still feminine earns nothing, whatever the judge said."""
    def reward(entry: Entry, translation: str) -> float:
        return adjective_form_reward(_sample(entry, f"<it> **NEUTRAL** [{translation}]", "NEUTRAL"))

    assert reward(TPL_N, "«Nel mio lavoro di ingegneria, sono curiosa», dissi.") == 0.0
    assert reward(TPL_N, "«Come ingegnere, sono Curioso», dissi.") == 0.0, "either gender, any case"
    assert reward(TPL_N, "«Nel mio lavoro di ingegneria, sono una persona curiosa», dissi.") == 1.0
    assert reward(TPL_N, "«Sono curiosità», dissi.") == 1.0, "whole words only"
    assert reward(TPL_G, "«Come ingegnera, sono curiosa», disse.") == 1.0
    assert reward(TPL_G, "«Come ingegnera, sono una persona curiosa», disse.") == 0.0, "neutral: not her gender"
    assert reward(replace(TPL_G, gender=None), "«Come ingegnere, sono curioso», disse.") == 1.0, "no stated gender"
    assert reward(TPL_G, "«Come ingegnere, sono curioso», disse.") == 0.0, "the other gender contradicts the source"
    epicene = replace(TPL_N, meta={**TEMPLATED_META, "gender_marked": "false"})
    assert reward(epicene, "«Sono curiosa», dissi.") == 1.0, "no forms to read: constant, never ranks samples"
    assert reward(SET_N, "I cittadini sono preoccupati.") == 1.0, "mGeNTE: the lexicon says nothing"
    assert adjective_form_reward(_sample(TPL_N, "<it> **NEUTRAL** [Nel mio", None)) == 0.0
    spec = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0, "adjective_form": 1.0})
    kept = _sample(TPL_N, "<it> **NEUTRAL** [«Nel mio lavoro di ingegneria, sono curiosa», dissi.]", "NEUTRAL")
    rewritten = _sample(TPL_N, "<it> **NEUTRAL** [«Nel mio lavoro di ingegneria, sono una persona curiosa», dissi.]",
                        "NEUTRAL")
    pairs, _ = pair_groups([[spec.score(s) for s in (kept, rewritten)]])
    assert [(best.sample.text, worst.sample.text) for _, best, worst in pairs] == [(rewritten.text, kept.text)]


def test_target_chrf_reads_only_the_references_in_the_form_the_set_asks_for() -> None:
    """A Set-N sample the judge wrongly passes, copied from Ref-G, tops ``chrf`` but not ``target_chrf``."""
    copied = _sample(SET_N, "<it> **NEUTRAL** [I cittadini sono preoccupati.]", "NEUTRAL")  # a judge error
    neutral = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è in ansia.]", "NEUTRAL")
    assert chrf_reward(copied) > chrf_reward(neutral) and target_chrf_reward(copied) < target_chrf_reward(neutral)
    by_chrf = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0, "chrf": 1.0})
    by_target = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0, "target_chrf": 1.0})
    assert by_chrf.score(copied).total > by_chrf.score(neutral).total, "chrf prefers the copy of Ref-G"
    pairs, _ = pair_groups([[by_target.score(s) for s in (copied, neutral)]])
    assert [(best.sample.text, worst.sample.text) for _, best, worst in pairs] == [(neutral.text, copied.text)]
    gendered = _sample(SET_G, "<it> **GENDERED** [La signora Haug è preoccupata.]", "CORRECTLY GENDERED")
    assert target_chrf_reward(gendered) == pytest.approx(1.0), "Set-G: its Ref-G is the target"
    assert target_chrf_reward(_sample(SET_N, "<it> **NEUTRAL** [La cittadinanza", None)) == 0.0


def test_same_label_pairs_differ_in_the_translation_only() -> None:
    spec = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0})
    good = _sample(SET_N, "<it> **NEUTRAL** [La cittadinanza è preoccupata.]", "NEUTRAL")
    masc = _sample(SET_N, "<it> **GENDERED** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    half = _sample(SET_N, "<it> **NEUTRAL** [I cittadini sono preoccupati.]", "WRONGLY GENDERED")
    groups = [[spec.score(s) for s in group] for group in ([half, good, masc], [good, masc, masc])]
    total, _ = pair_groups(groups)
    assert [worst.sample.text for _, _, worst in total] == [masc.text, masc.text], "across labels: the wrong label"
    pairs, counts = pair_groups(groups, "same_label")
    assert [(i, best.sample.text, worst.sample.text) for i, best, worst in pairs] == [(0, good.text, half.text)]
    assert (counts.pairs, counts.too_few_right_labels, counts.ties) == (1, 1, 0)


def test_verdict_pairs_set_an_accepted_translation_against_a_rejected_one_both_adequate() -> None:
    spec = RewardSpec({"label": 1.0, "judge": 1.0, "adequacy": 1.0})
    good, masc, junk, wrong_label = (_sample(SET_N, f"<it> **{label}** [{text}]", verdict) for label, text, verdict in (
        ("NEUTRAL", "La cittadinanza è preoccupata.", "NEUTRAL"),
        ("NEUTRAL", "I cittadini sono preoccupati.", "WRONGLY GENDERED"),  # adequate, right label, gendered
        ("NEUTRAL", "Roma è bella.", "WRONGLY GENDERED"),  # no translation of the source
        ("GENDERED", "I cittadini sono preoccupati.", "WRONGLY GENDERED")))
    groups = [[spec.score(s) for s in group] for group in ([junk, good, masc], [good, junk, wrong_label], [good, good])]
    total, _ = pair_groups(groups)
    assert total[0][2].sample.text == junk.text, "best against worst: a broken translation is the rejected one"
    pairs, counts = pair_groups(groups, "verdict")
    assert [(i, best.sample.text, worst.sample.text) for i, best, worst in pairs] == [(0, good.text, masc.text)]
    assert (counts.pairs, counts.no_verdict_contrast, counts.ties, counts.all_bad) == (1, 2, 0, 0)


def _config(tmp_path: Path, run: Path, data: Path, **keys: object) -> OnPolicyConfig:
    values = dict(policy=str(run / "checkpoint-2"), data_dir=str(data), output_dir=str(tmp_path / "onpolicy"),
                  samples_per_prompt=2, prompts_per_round=6, max_new_tokens=24, temperature=1.0, top_p=1.0,
                  rewards={"label": 1.0}, device="cpu", cpu_threads=1, batch_size=8, progress=False,
                  dpo={"max_steps": 1, "per_device_train_batch_size": 2, "learning_rate": 1e-3, "report_to": "none",
                       "save_steps": 1, "max_length": 8192, "bf16": False})
    values.update(keys)
    return OnPolicyConfig(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("keys", "message"), [
    ({"rewards": {"label": 1.0, "neutrality": 1.0}}, "unknown reward.*neutrality.*valid: label, judge, adequacy"),
    ({"samples_per_prompt": 1}, "samples_per_prompt must be >= 2"),
    ({"model": "gnt:smollm"}, "was trained on the base model .* not on model=gnt:smollm"),
    ({"rewards": {"judge": 1.0}}, "the judge reward needs judge"),
    ({"dpo": {"output_dir": "x"}}, "set per round by train/onpolicy.py"),
    ({"pairing": "same_label", "rewards": {"adequacy": 1.0}}, "pairing: same_label keeps the samples whose label"),
    ({"pairing": "verdict", "rewards": {"label": 1.0}}, "pairing: verdict .* add adequacy, judge to rewards"),
    ({"prompt_sets": ("Set-N", "Set-X")}, r"prompt_sets: unknown or no set \['Set-X'\]; valid: Set-G, Set-N"),
    ({"anchor_pairs": -1}, "anchor_pairs must be >= 0"),
])
def test_bad_input_is_one_error_before_any_sampling(tmp_path: Path, eval_tiny_run: Path, eval_data_dir: Path,
                                                    keys: dict, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        run_onpolicy(_config(tmp_path, eval_tiny_run, eval_data_dir, **keys))
    assert not (tmp_path / "onpolicy").exists(), "nothing written"


def test_a_learned_judge_is_refused_as_the_policy(tmp_path: Path, eval_tiny_run: Path) -> None:
    """A judge is an SFT-stage run too (on the judge's rows): its record says so, and it is not a translator."""
    import shutil

    from gnt.alignment.onpolicy import policy_adapter
    from gnt.recipe import RecipeError

    judge = tmp_path / "judge"
    shutil.copytree(eval_tiny_run / "checkpoint-2", judge)
    record = json.loads((eval_tiny_run / "gnt_run.json").read_text(encoding="utf-8"))
    (judge / "gnt_run.json").write_text(json.dumps({**record, "stage": "sft", "data_rows": "judge"}), encoding="utf-8")
    with pytest.raises(RecipeError, match="policy: .*judge is a learned judge .*data_rows: judge"):
        policy_adapter(str(judge))
    (judge / "gnt_run.json").write_text(json.dumps({**record, "stage": "sft", "data_rows": "sft"}), encoding="utf-8")
    assert policy_adapter(str(judge))[1], "the same adapter as a translation SFT run is a policy"


def test_finished_rounds_of_other_settings_are_never_overwritten(tmp_path: Path, eval_tiny_run: Path,
                                                                 eval_data_dir: Path) -> None:
    config = _config(tmp_path, eval_tiny_run, eval_data_dir)
    from gnt.output_folder import claim_output_folder

    out = claim_output_folder(tmp_path / "onpolicy", "onpolicy")  # a folder an earlier run wrote
    recorded = {**settings_record(config), "samples_per_prompt": 7}
    recorded["dpo"] = {**recorded["dpo"], "learning_rate": 1.0}
    (out / "onpolicy.json").write_text(json.dumps({"format": "gnt-align/onpolicy/1", "settings_key": "other",
                                                   "settings": recorded, "rounds": {"1": {"status": "complete"}}},
                                                  default=str))
    with pytest.raises(RecipeError, match=r"finished round\(s\) 1 made with other settings "
                                          r"\(dpo\.learning_rate: 1\.0 -> .*; samples_per_prompt: 7 -> 2\)") as refused:
        run_onpolicy(config)
    assert "output_dir" not in str(refused.value).split("(")[1], "keys that agree are not listed"


def test_sampling_gives_k_outputs_per_prompt_and_a_rerun_generates_nothing(tmp_path: Path, eval_tiny_run: Path,
                                                                             eval_data_dir: Path) -> None:
    from gnt.alignment.onpolicy import chosen_prompts, sample_round, training_prompts

    config = _config(tmp_path, eval_tiny_run, eval_data_dir, samples_per_prompt=3).validate()
    prompts = chosen_prompts(training_prompts(eval_data_dir, templated=True), 4, seed=1)
    assert len(prompts) == 4 and all(p.messages[-1][0] == "user" for p in prompts)
    cache = tmp_path / "cache.jsonl"
    texts = sample_round(config, prompts, config.policy or "", 1, cache)
    assert [len(group) for group in texts] == [3, 3, 3, 3]
    assert all(len(set(group)) > 1 for group in texts), "sampled, not greedy: the k outputs differ"
    lines = cache.read_text().count("\n")
    assert sample_round(config, prompts, config.policy or "", 1, cache) == texts
    assert cache.read_text().count("\n") == lines, "a rerun of the round samples nothing again"


def test_align_prompts_are_of_sources_sft_never_saw_and_their_pairs_count_as_trained(tmp_path: Path,
                                                                                       eval_data_dir: Path) -> None:
    from gnt.alignment.onpolicy import training_prompts, write_pairs
    from gnt.data.build import BuildConfig, build_dataset

    with pytest.raises(RecipeError, match="prompt_split=align: .*onpolicy/align.jsonl is missing.*align_fraction"):
        training_prompts(eval_data_dir, templated=False, split="align")
    data = tmp_path / "data"
    manifest = build_dataset(BuildConfig(out_dir=str(data), langs=("it",), templated_pairs=20, align_fraction=0.3,
                                         progress=False))
    prompts = training_prompts(data, templated=True, split="align")
    keys = {p.entry.source_key for p in prompts}
    assert {p.entry.origin for p in prompts} == {"mgente", "templated"}
    assert keys == set(manifest["source_keys"]["align"])
    assert not keys & {r["source_key"] for r in read_jsonl(data / "sft" / "train.jsonl")}
    assert all(p.messages[-1][0] == "user" and p.entry.source in p.messages[-1][1] for p in prompts)
    assert _config(tmp_path, tmp_path, data, prompt_split="align").settings_key() != _config(
        tmp_path, tmp_path, data).settings_key()

    rows = [{"source_key": prompts[0].entry.source_key}]
    write_pairs(tmp_path / "pairs", data, rows, [], {"round": 1})  # what a round's DPO run records as trained on
    trained = read_json(tmp_path / "pairs" / "manifest.json")["source_keys"]["train"]
    assert prompts[0].entry.source_key in trained and set(manifest["source_keys"]["train"]) <= set(trained)


def test_prompt_sets_sample_the_asked_sets_alone_and_the_default_keeps_finished_rounds_keys(
        tmp_path: Path, eval_data_dir: Path) -> None:
    from dataclasses import asdict

    from gnt.alignment.onpolicy import sampled_prompts
    from gnt.io import hash_json

    every = _config(tmp_path, tmp_path, eval_data_dir)
    neutral = _config(tmp_path, tmp_path, eval_data_dir, prompt_sets=("Set-N",))
    kept = sampled_prompts(neutral)
    assert kept and {p.entry.set for p in kept} == {"Set-N"}
    assert {p.entry.set for p in sampled_prompts(every)} == {"Set-G", "Set-N"}
    assert neutral.settings_key() != every.settings_key()
    reordered = _config(tmp_path, tmp_path, eval_data_dir, prompt_sets=("Set-N", "Set-G"))
    assert reordered.settings_key() == every.settings_key(), "the same sets in another order are the same settings"
    # rounds finished before the key existed recorded a settings key without it: the default must keep that key
    older = {k: v for k, v in asdict(every).items()
             if k not in ("rounds", "progress", "pairs_only", "cache_dir", "prompt_split", "prompt_sets",
                          "anchor_pairs", "anchor_twins", "sample_twins")}
    assert every.settings_key() == hash_json(older)


def test_anchor_pairs_join_a_set_n_round_as_set_g_references_under_one_label(
        tmp_path: Path, eval_tiny_run: Path, eval_data_dir: Path, monkeypatch) -> None:
    """A Set-N round's pairs plus Set-G reference pairs: Ref-G over Ref-N, both GENDERED (only the wording differs),
    drawn the same way on a rerun, counted apart; without anchors the settings key is the one it always was."""
    import gnt.alignment.onpolicy as onpolicy
    from gnt.output_format import extract

    monkeypatch.setattr(onpolicy, "sample_round", _scripted)
    plain = _config(tmp_path, eval_tiny_run, eval_data_dir, prompt_sets=("Set-N",), pairs_only=True)
    anchored = replace(plain, anchor_pairs=3)
    assert anchored.settings_key() != plain.settings_key()
    assert replace(plain, anchor_pairs=0).settings_key() == plain.settings_key()
    pairs = run_onpolicy(anchored, say=lambda _msg: None)
    rows = read_jsonl(pairs / "dpo" / "train.jsonl")
    anchors = [r for r in rows if r.get("anchor")]
    assert len(anchors) == 3 and len(rows) > 3 and all(r["set"] == "Set-N" for r in rows if not r.get("anchor"))
    entries = {(e.lang, e.id): e for e in (p.entry for p in onpolicy.anchor_prompts(anchored))}
    for row in anchors:
        entry = entries[(row["lang"], row["id"])]
        chosen = extract(row["chosen"][0]["content"], entry.lang)
        rejected = extract(row["rejected"][0]["content"], entry.lang)
        assert row["set"] == "Set-G" and row["kind"] == "onpolicy" and "scores" not in row
        assert chosen.label == rejected.label == "GENDERED"
        assert (chosen.translation, rejected.translation) == (entry.ref_g, entry.ref_n[0])
    assert read_json(tmp_path / "onpolicy" / "onpolicy.json")["rounds"]["1"]["counts"]["anchors"] == 3
    again = onpolicy.chosen_prompts(onpolicy.anchor_prompts(anchored), 3, "anchors|0|1")
    assert {(p.entry.lang, p.entry.id) for p in again} == {(r["lang"], r["id"]) for r in anchors}


def test_twin_anchors_are_the_set_g_twins_of_the_rounds_own_templated_pairs(
        tmp_path: Path, eval_tiny_run: Path, training_data_dir: Path, monkeypatch) -> None:
    """On a build with templated pairs, with anchor_twins every anchor is the determined twin (same language and template pair) of a templated
    Set-N prompt that gave a pair this round, as many as there are up to anchor_pairs; the option changes the key."""
    import gnt.alignment.onpolicy as onpolicy

    monkeypatch.setattr(onpolicy, "sample_round", _scripted)
    drawn = _config(tmp_path / "drawn", eval_tiny_run, training_data_dir, prompt_sets=("Set-N",), pairs_only=True,
                    prompts_per_round=24, anchor_pairs=6)
    twins = replace(drawn, output_dir=str(tmp_path / "twins" / "onpolicy"), anchor_twins=True)
    assert twins.settings_key() != drawn.settings_key()
    with pytest.raises(RecipeError, match="anchor_twins draws the anchors"):
        replace(twins, anchor_pairs=0).validate()
    rows = read_jsonl(run_onpolicy(twins, say=lambda _msg: None) / "dpo" / "train.jsonl")
    sampled = {(p.entry.lang, p.entry.id): p for p in onpolicy.sampled_prompts(twins)}
    paired = [sampled[(r["lang"], r["id"])] for r in rows if not r.get("anchor")]
    templated = {(p.entry.lang, p.entry.meta["pair_id"]) for p in paired if p.entry.origin == "templated"}
    anchors = [r for r in rows if r.get("anchor")]
    assert templated and anchors, "the fixture's round pairs templated prompts, and their twins are anchored"
    pool = {(p.entry.lang, p.entry.id): p.entry for p in onpolicy.anchor_prompts(twins)}
    for row in anchors:
        twin = pool[(row["lang"], row["id"])]
        assert twin.set == "Set-G" and (twin.lang, twin.meta.get("pair_id")) in templated, "a twin, not a draw"
    assert len(anchors) == min(6, len(onpolicy.twins_of(onpolicy.anchor_prompts(twins), paired)))
    plain = read_jsonl(run_onpolicy(drawn, say=lambda _msg: None) / "dpo" / "train.jsonl")
    assert len([r for r in plain if r.get("anchor")]) == 6, "the plain draw takes its six from the whole split"


def test_sampled_twins_are_the_set_g_twins_of_the_rounds_templated_set_n_prompts(
        tmp_path: Path, eval_tiny_run: Path, training_data_dir: Path, monkeypatch) -> None:
    """With sample_twins a Set-N round also samples, scores and pairs the Set-G twin (same language and template
    pair) of each templated Set-N prompt it drew, and nothing else; counted apart; the option changes the key and
    needs Set-N prompts to twin."""
    import gnt.alignment.onpolicy as onpolicy

    monkeypatch.setattr(onpolicy, "sample_round", _scripted)
    drawn = _config(tmp_path / "drawn", eval_tiny_run, training_data_dir, prompt_sets=("Set-N",), pairs_only=True,
                    prompts_per_round=24)
    twinned = replace(drawn, output_dir=str(tmp_path / "twinned" / "onpolicy"), sample_twins=True)
    assert twinned.settings_key() != drawn.settings_key()
    with pytest.raises(RecipeError, match="sample_twins .* needs templated: true and Set-N in prompt_sets"):
        replace(twinned, prompt_sets=("Set-G",)).validate()
    pairs = run_onpolicy(twinned, say=lambda _msg: None)
    sampled = {(r["lang"], r["id"], r["set"]) for r in read_jsonl(pairs / "samples.jsonl")}
    plain = {(r["lang"], r["id"], r["set"]) for r in
             read_jsonl(run_onpolicy(drawn, say=lambda _msg: None) / "samples.jsonl")}
    assert {key for key in sampled if key[2] == "Set-N"} == plain, "the same Set-N draw"
    by_key = {(p.entry.lang, p.entry.id): p.entry for p in onpolicy.set_g_prompts(twinned)}
    entries = {(p.entry.lang, p.entry.id): p.entry for p in onpolicy.sampled_prompts(drawn)}
    templated = {(lang, entries[(lang, id_)].meta["pair_id"]) for lang, id_, _ in plain
                 if entries[(lang, id_)].origin == "templated"}
    twins = {(lang, id_) for lang, id_, set_name in sampled if set_name == "Set-G"}
    assert templated and twins, "the fixture's draw holds templated Set-N prompts with twins"
    assert {(lang, by_key[(lang, id_)].meta["pair_id"]) for lang, id_ in twins} == templated
    assert all(by_key[key].gender in ("M", "F") for key in twins)
    rows = read_jsonl(pairs / "dpo" / "train.jsonl")
    assert {r["set"] for r in rows} == {"Set-N", "Set-G"}, "the twins' own samples are paired"
    counts = read_json(tmp_path / "twinned" / "onpolicy" / "onpolicy.json")["rounds"]["1"]["counts"]
    assert counts["twin_prompts"] == len(twins) and counts["prompts"] == len(plain) + len(twins)


def _scripted(config, prompts, policy, round_number, cache):
    """Samples a policy could write: the reference with the right label, then with the wrong one (the tiny model's
    own outputs are noise, none of which extracts). The policy is resolved as the real sampler resolves it."""
    from gnt.alignment.onpolicy import policy_adapter

    policy_adapter(policy, config.model)
    out = []
    for prompt in prompts:
        entry = prompt.entry
        right, wrong = entry.label, ("NEUTRAL" if entry.label == "GENDERED" else "GENDERED")
        text = entry.ref_n[0] if entry.set == "Set-N" else entry.ref_g
        out.append([f"<{entry.lang}> **{right}** [{text}]", f"<{entry.lang}> **{wrong}** [{text}]"]
                   [: config.samples_per_prompt])
    return out


@pytest.mark.slow
def test_a_round_pairs_and_trains_and_a_rerun_does_nothing_again(tmp_path: Path, eval_tiny_run: Path,
                                                                 eval_data_dir: Path, monkeypatch) -> None:
    import gnt.alignment.onpolicy as onpolicy

    monkeypatch.setattr(onpolicy, "sample_round", _scripted)
    config = _config(tmp_path, eval_tiny_run, eval_data_dir, rewards={"label": 1.0, "adequacy": 1.0})
    final = run_onpolicy(config, say=lambda _msg: None)
    out = tmp_path / "onpolicy"
    assert final == out / "round-1" and (final / "adapter_config.json").is_file()
    rows = read_jsonl(out / "pairs-round-1" / "dpo" / "train.jsonl")
    assert len(rows) == 6 and all(r["kind"] == "onpolicy" and r["round"] == 1 for r in rows)
    for row in rows:
        assert row["scores"]["chosen"]["rewards"] == {"label": 1.0, "adequacy": 1.0}
        assert row["scores"]["rejected"]["rewards"] == {"label": 0.0, "adequacy": 1.0}
        assert row["prompt"][-1]["role"] == "user"
    assert len(read_jsonl(out / "pairs-round-1" / "samples.jsonl")) == 6 * 2
    state = read_json(out / "onpolicy.json")
    assert state["rounds"]["1"]["counts"]["pairs"] == 6 and state["rounds"]["1"]["status"] == "complete"
    record = read_json(final / "gnt_run.json")
    assert record["stage"] == "dpo" and record["sft_adapter"].endswith("checkpoint-2")
    assert record["status"] == "complete"
    # the round's model is scored on the held-out rows of the build its pairs were drawn from, like its SFT start
    from gnt.evaluation.discovery import run_checkpoints
    from gnt.evaluation.rows import _resolve_data_dir, drawn_from

    assert drawn_from(out / "pairs-round-1") == eval_data_dir.resolve()
    aligned, sft = run_checkpoints(final)[-1], run_checkpoints(eval_tiny_run)[-1]
    assert _resolve_data_dir(aligned) == _resolve_data_dir(sft) == eval_data_dir.resolve()

    def no_sampling(*_args):
        raise AssertionError("a finished round must not sample again")

    monkeypatch.setattr(onpolicy, "sample_round", no_sampling)
    assert run_onpolicy(config, say=lambda _msg: None) == final

    # a second round samples the first round's DPO adapter and trains from it (the round count is not a setting:
    # the finished round is kept)
    monkeypatch.setattr(onpolicy, "sample_round", _scripted)
    second = run_onpolicy(replace(config, rounds=2), say=lambda _msg: None)
    assert second == out / "round-2" and (second / "adapter_config.json").is_file()
    assert read_json(second / "gnt_run.json")["sft_adapter"].endswith("round-1")
    assert read_json(out / "onpolicy.json")["rounds"]["2"]["policy"] == str(final.resolve())


@pytest.mark.slow
def test_grpo_trains_an_sft_adapter_with_the_gnt_rewards(tmp_path: Path, eval_tiny_run: Path,
                                                         eval_data_dir: Path) -> None:
    """TRL's GRPOTrainer on the tiny model: two steps, rewards from the same functions as on-policy DPO."""
    from gnt.alignment.grpo import run_grpo
    from gnt.paths import RECIPES_DIR

    out = tmp_path / "grpo"
    run_grpo(str(RECIPES_DIR / "tiny-grpo.yaml"), [("sft_adapter", str(eval_tiny_run / "checkpoint-2")),
                                                   ("data_dir", str(eval_data_dir)), ("output_dir", str(out)),
                                                   ("max_train_samples", 8),
                                                   ("rewards", {"label": 1.0, "adequacy": 1.0, "adjective_form": 1.0})])
    record = read_json(out / "gnt_run.json")
    assert record["status"] == "complete" and record["stage"] == "grpo" and record["global_step"] == 2
    assert record["rewards"]["names"] == ["label", "adequacy", "adjective_form"]
    assert (out / "adapter_config.json").is_file()
    state = read_json(out / "trainer_state.json")
    logged = [entry for entry in state["log_history"] if "rewards/label_reward/mean" in entry]
    assert logged, "TRL logs each reward function by its name"
