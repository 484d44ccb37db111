"""A judge that runs anywhere: its training rows from a data build, label scoring, and the checks on its adapter."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from gnt.data.build import BuildConfig, build_dataset
from gnt.data.entry import Entry
from gnt.data.errors import DataError, DataErrors
from gnt.generation.scoring import ChoiceRequest, score_choices
from gnt.io import read_json, read_jsonl
from gnt.judge.learned import check_trained_prompts, judge_adapter, judge_recipe_mapping
from gnt.judge.training_rows import (
    JudgeExample,
    JudgeRowSettings,
    JudgeRowsExtra,
    departing_spans,
    mgente_examples,
    templated_examples,
)
from gnt.judge.training_rows import _capped_templated as capped_templated
from gnt.paths import PROJECT_ROOT, RECIPES_DIR
from gnt.recipe import RecipeError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _build(out: Path, **judge: object) -> dict:
    settings = JudgeRowSettings(**{"judge_langs": ("it", "es", "de", "el"), **judge}).validate()  # type: ignore[arg-type]
    return build_dataset(BuildConfig(out_dir=str(out), langs=("it", "es"), templated_pairs=200, progress=False),
                         [JudgeRowsExtra(settings, ("it", "es"))])


@pytest.fixture(scope="module")
def judge_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("judge-build") / "data"
    _build(out)
    return out


# ---------------------------------------------------------------------------------------------- rows
def _entry(**fields: object) -> Entry:
    base = dict(id="X-1", lang="it", set="Set-N", source="The citizens are worried.",
                ref_g="I cittadini sono preoccupati.", ref_n=("La cittadinanza è preoccupata.",),
                gendered_words=("cittadini", "preoccupati"), meta={"gendered_word_genders": "M;M"})
    return Entry(**{**base, **fields})  # type: ignore[arg-type]


def test_reference_labels_follow_from_the_set() -> None:
    set_n = list(mgente_examples(_entry()))
    assert [(e.translation, e.label) for e in set_n] == [
        ("I cittadini sono preoccupati.", "WRONGLY GENDERED"), ("La cittadinanza è preoccupata.", "NEUTRAL")]
    assert set_n[0].phrases[0] == {"phrase": "cittadini", "gender": "M", "gender_correctness": "wrong"}
    assert set_n[1].phrases[0]["gender"] == "N"
    set_g = list(mgente_examples(_entry(set="Set-G", gender="F", source="Mrs Haug is worried.",
                                        ref_n=("A", "B"))))
    assert [e.label for e in set_g] == ["CORRECTLY GENDERED", "NEUTRAL", "NEUTRAL"]
    assert {p["gender"] for p in set_g[0].phrases} == {"F"}


def test_departing_spans_are_the_words_the_neutral_reference_changed() -> None:
    spans = departing_spans("Chi rappresenta la Commissione ci ha detto di essere soddisfatto",
                            "Il commissario ci ha detto di essere soddisfatto")
    assert spans == ("Chi rappresenta la Commissione",)


def test_templated_labels_only_where_the_forms_decide() -> None:
    meta = {"gender_marked": "true", "form_m": "riservato", "form_f": "riservata", "form_n": "una persona riservata"}
    det = Entry("p1-det", "it", "Set-G", '"You are reserved," I told her.', "«Sei riservata», le dissi.",
                ("«Sei una persona riservata», le dissi.",), gender="F", origin="templated", meta=meta)
    got = {e.translation: e.label for e in templated_examples(det)}
    assert got == {"«Sei riservata», le dissi.": "CORRECTLY GENDERED",
                   "«Sei riservato», le dissi.": "WRONGLY GENDERED"}  # the other gender contradicts the source
    epicene = Entry("p2-det", "it", "Set-G", '"I am funny," he said.', "«Sono divertente», disse.",
                    ("«Sono divertente», disse.",), gender="M", origin="templated",
                    meta={**meta, "gender_marked": "false"})
    assert list(templated_examples(epicene)) == []  # nothing in the forms says whether it genders anyone
    amb = Entry("p1-amb", "it", "Set-N", '"You are reserved," I said.', "«Sei riservato», dissi.",
                ("«Sei una persona riservata», dissi.",), origin="templated", meta=meta)
    assert {e.label for e in templated_examples(amb)} == {"NEUTRAL", "WRONGLY GENDERED"}


def test_adjective_swaps_gender_a_neutral_target_whose_noun_was_rewritten() -> None:
    meta = {"gender_marked": "true", "form_m": "curioso", "form_f": "curiosa", "form_n": "una persona curiosa"}
    amb = Entry("p3-amb", "it", "Set-N", '"As an engineer, I am curious," I said.', "«Come ingegnere, sono curioso», dissi.",
                ("«Nel mio lavoro di ingegneria, sono una persona curiosa», dissi.",), origin="templated", meta=meta)
    assert len(list(templated_examples(amb))) == 2, "off by default: the neutral and the masculine-default target"
    got = {e.translation: (e.label, e.phrases[0]["gender"]) for e in templated_examples(amb, adjective_swaps=True)}
    assert got["«Nel mio lavoro di ingegneria, sono curioso», dissi."] == ("WRONGLY GENDERED", "M")
    assert got["«Nel mio lavoro di ingegneria, sono curiosa», dissi."] == ("WRONGLY GENDERED", "F")
    assert got["«Nel mio lavoro di ingegneria, sono una persona curiosa», dissi."][0] == "NEUTRAL"
    no_noun = Entry("p4-amb", "it", "Set-N", '"You are curious," I said.', "«Sei curioso», dissi.",
                    ("«Sei una persona curiosa», dissi.",), origin="templated", meta=meta)
    texts = [e.translation for e in templated_examples(no_noun, adjective_swaps=True)]
    assert texts.count("«Sei curioso», dissi.") == 1, "the masculine swap is the Ref-G itself: written once"
    assert "«Sei curiosa», dissi." in texts
    epicene = Entry("p5-amb", "it", "Set-N", '"I am happy," I said.', "«Sono felice», dissi.", ("«Sono felice», dissi.",),
                    origin="templated", meta={**meta, "gender_marked": "false", "form_n": "felice"})
    assert [e.label for e in templated_examples(epicene, adjective_swaps=True)] == ["NEUTRAL"]


def test_genderless_rewrites_are_neutral_only_where_the_adjective_was_the_only_cue() -> None:
    meta = {"gender_marked": "true", "form_m": "testardo", "form_f": "testarda", "form_n": "una persona testarda",
            "cue_on_adjective_only": "true"}
    det = Entry("p6-det", "it", "Set-G", '"People who know me say I am stubborn," she admitted.',
                "«Chi mi conosce dice che sono testarda», ammise.",
                ("«Chi mi conosce dice che sono una persona testarda», ammise.",), gender="F", origin="templated",
                meta=meta)
    assert len(list(templated_examples(det))) == 2, "off by default: the gendered target and its swap"
    got = {e.translation: e.label for e in templated_examples(det, genderless_rewrites=True)}
    assert got["«Chi mi conosce dice che sono una persona testarda», ammise."] == "NEUTRAL"
    assert got["«Chi mi conosce dice che sono testarda», ammise."] == "CORRECTLY GENDERED"
    epicene = Entry("p7-det", "it", "Set-G", '"People who know me say I am happy," he admitted.',
                    "«Chi mi conosce dice che sono felice», ammise.", ("«Chi mi conosce dice che sono felice», ammise.",),
                    gender="M", origin="templated", meta={**meta, "gender_marked": "false", "form_n": "felice"})
    assert [e.label for e in templated_examples(epicene, genderless_rewrites=True)] == ["NEUTRAL"]
    cued = Entry("p8-det", "it", "Set-G", '"You are stubborn," I told her.', "«Sei testarda», le dissi.",
                 ("«Sei una persona testarda», le dissi.",), gender="F", origin="templated",
                 meta={**meta, "cue_on_adjective_only": "false"})
    assert "NEUTRAL" not in {e.label for e in templated_examples(cued, genderless_rewrites=True)}, \
        "the rewrite keeps 'le': it still genders the person"


def test_pairs_record_whether_the_adjective_is_the_determined_targets_only_cue() -> None:
    from gnt.data.templated import generate_pairs

    pairs = generate_pairs(langs=("it", "de"))
    flags = {(p.lang, p.template_id): p.determined_cue_on_adjective_only for p in pairs}
    assert flags[("it", "i_people_say")] and not flags[("it", "i_think_smiled")]  # "La donna sorrise" is a cue
    assert not any(flag for (lang, _), flag in flags.items() if lang == "de"), "German targets say er/sie"


def _example(n: int, origin: str, label: str, lang: str = "it") -> JudgeExample:
    return JudgeExample(lang=lang, source=f"s{n}", translation=f"t{n}", label=label, origin=origin,
                        id=f"{origin}-{label}-{n}")


def test_templated_rows_are_split_evenly_between_neutral_and_gendered() -> None:
    mgente = [_example(i, "mgente", "NEUTRAL") for i in range(40)]
    gendered = [_example(i, "templated", "WRONGLY GENDERED" if i % 2 else "CORRECTLY GENDERED") for i in range(60)]
    neutral = [_example(100 + i, "templated", "NEUTRAL") for i in range(30)]
    examples = mgente + gendered + neutral

    def labels(kept: list[JudgeExample]) -> tuple[int, int]:
        templated = [e for e in kept if e.origin == "templated"]
        return sum(e.label == "NEUTRAL" for e in templated), sum(e.label != "NEUTRAL" for e in templated)

    assert labels(capped_templated(examples, 0.5, balance=True)) == (10, 10)  # budget 20: half each
    assert labels(capped_templated(examples, 2.0, balance=True)) == (30, 30)  # the scarcer label bounds both
    unbalanced = labels(capped_templated(examples, 2.0, balance=False))
    assert sum(unbalanced) == 80 and unbalanced[1] > unbalanced[0], "without balance: a sample regardless of label"
    again = capped_templated(list(reversed(examples)), 0.5, balance=True)
    assert {e.id for e in again} == {e.id for e in capped_templated(examples, 0.5, balance=True)}, "a stable sample"


def test_the_build_writes_judge_rows_from_training_and_dev_sources_only(judge_build: Path) -> None:
    manifest = read_json(judge_build / "manifest.json")
    judge = manifest["judge"]
    assert judge["format"] == "MONO-L" and judge["labels"] == ["GENDERED", "NEUTRAL"]
    assert judge["langs"] == ["it", "es", "de", "el"], "every judge language, beside the build's it/es"
    train = read_jsonl(judge_build / "judge" / "train.jsonl")
    dev = read_jsonl(judge_build / "judge" / "dev.jsonl")
    references = [Entry.from_record(r) for r in read_jsonl(judge_build / "eval" / "judge_references.jsonl")]
    assert {r["lang"] for r in train} == {"it", "es", "de", "el"}
    assert {r["label"] for r in train} == set(judge["labels"])
    held_out = {e.source_key for e in references}
    assert held_out and not held_out & {r["source_key"] for r in train + dev}, "no held-out source in judge rows"
    assert {e.lang for e in references} == {"it", "es", "de", "el"}
    translation_test = {r["source_key"] for r in read_jsonl(judge_build / "eval" / "mgente_test.jsonl")}
    assert translation_test <= held_out, "the translator's test sources are held out from the judge too"
    row = train[0]
    assert row["completion"] == [{"role": "assistant", "content": json.dumps({"label": row["label"]}, ensure_ascii=False)}]
    assert row["prompt"][-1]["content"].startswith("Target: ") and row["cell"].startswith("judge/")
    assert json.loads(row["prompt"][-1]["content"].removeprefix("Target: "))  # the untrusted text is delimited
    cross = JudgeRowSettings(judge_format="CROSS-L").validate()
    assert cross.judge_format == "CROSS-L"
    by_origin = judge["counts"]["train"]["by_origin"]
    assert by_origin["templated"] <= 0.5 * by_origin["mgente"] + 4, "templated rows are capped per language"


def test_a_balanced_build_holds_as_many_neutral_as_gendered_templated_rows(tmp_path: Path) -> None:
    """Texts are deduplicated before the sample, so the balance the sample draws is the balance written."""
    _build(tmp_path / "balanced", judge_templated_balance=True)
    templated = [r for r in read_jsonl(tmp_path / "balanced" / "judge" / "train.jsonl") if r["origin"] == "templated"]
    for lang in ("it", "es"):
        labels = [r["label"] for r in templated if r["lang"] == lang]
        assert labels and labels.count("NEUTRAL") == labels.count("GENDERED"), f"{lang}: templated labels balanced"


def test_more_templated_dev_pairs_leave_the_judge_rows_as_they_are(judge_build: Path, tmp_path: Path) -> None:
    """The extra dev pairs are for telling translator settings apart; the judge trains and is validated as before."""
    settings = JudgeRowSettings(judge_langs=("it", "es", "de", "el")).validate()
    out = tmp_path / "data"
    manifest = build_dataset(BuildConfig(out_dir=str(out), langs=("it", "es"), templated_pairs=200,
                                         templated_dev_pairs=30, progress=False), [JudgeRowsExtra(settings, ("it", "es"))])
    assert manifest["counts"]["templated_pairs"]["dev_added"] == 30
    for name in ("judge/train.jsonl", "judge/dev.jsonl", "eval/judge_references.jsonl",
                 "eval/judge_dev_references.jsonl"):
        assert (out / name).read_bytes() == (judge_build / name).read_bytes(), name
    assert len(read_jsonl(out / "eval" / "templated_dev.jsonl")) == len(
        read_jsonl(judge_build / "eval" / "templated_dev.jsonl")) + 60


def test_distilled_judgments_are_learned_only_from_training_sources(judge_build: Path, tmp_path: Path) -> None:
    references = read_jsonl(judge_build / "eval" / "judge_references.jsonl")
    source = read_jsonl(judge_build / "eval" / "mgente_train.jsonl")[0]["source"]  # a training source
    cache = tmp_path / "judgments.jsonl"
    good = {"lang": "it", "source": source, "translation": "Una traduzione qualsiasi.", "label": "NEUTRAL"}
    cache.write_text(json.dumps(good) + "\n")
    _build(tmp_path / "ok", judge_distill=(str(cache),))
    rows = read_jsonl(tmp_path / "ok" / "judge" / "train.jsonl")
    assert any(r["origin"] == "distilled" and r["label"] == "NEUTRAL" for r in rows)

    leak = {**good, "source": references[0]["source"]}
    cache.write_text(json.dumps(good) + "\n" + json.dumps(leak) + "\n")
    with pytest.raises(DataError, match=r"judgments.jsonl:2.*held-out \(test\) source"):
        _build(tmp_path / "leak", judge_distill=(str(cache),))
    assert not (tmp_path / "leak").exists(), "nothing written"

    cache.write_text(json.dumps({**good, "label": "GENDERED"}) + "\n")
    with pytest.raises(DataError, match="a CROSS judge cannot learn from it"):
        _build(tmp_path / "mono", judge_distill=(str(cache),), judge_format="CROSS-L")
    cache.write_text(json.dumps({**good, "label": "MAYBE"}) + "\n")
    with pytest.raises(DataError, match="judgments.jsonl:1:label: unknown label 'MAYBE'"):
        _build(tmp_path / "unknown-label", judge_distill=(str(cache),))
    cache.write_text(json.dumps({**good, "source": "A sentence no build has."}) + "\n")
    with pytest.raises((DataError, DataErrors), match="not a source of this build"):
        _build(tmp_path / "unknown", judge_distill=(str(cache),))


def test_training_refuses_a_judge_row_with_an_unknown_label(judge_build: Path, tmp_path: Path) -> None:
    import shutil

    from gnt.training.data import load_training_data

    data = tmp_path / "data"
    shutil.copytree(judge_build, data)
    rows = (data / "judge" / "train.jsonl").read_text().splitlines()
    bad = json.loads(rows[2])
    bad["label"] = "MAYBE"
    rows[2] = json.dumps(bad)
    (data / "judge" / "train.jsonl").write_text("\n".join(rows) + "\n")

    class Tok:  # rows are checked before any tokenizing
        pass

    with pytest.raises(DataError, match=r"train.jsonl:3:label: unknown label 'MAYBE'"):
        load_training_data(data, "sft", tokenizer=Tok(), system_role=True, max_length=None, rows_name="judge")


# ---------------------------------------------------------------------------------------------- scoring
def _decision_logprobs(model_dir: Path, prompt, choices) -> list[float]:
    """Log-probabilities of each choice's first distinguishing token after the prompt and the shared tokens, from
    one unpadded forward pass of the model (the reference the batched scorer must equal)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    turns = [{"role": r, "content": c} for r, c in prompt]
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    replies = [tokenizer(tokenizer.apply_chat_template([*turns, {"role": "assistant", "content": c}], tokenize=False)
                         [len(text):].rstrip("\n"), add_special_tokens=False)["input_ids"] for c in choices]
    common = 0
    while len({r[common] for r in replies}) == 1:
        common += 1
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"] + replies[0][:common]])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, -1].float(), -1)
    return [logprobs[r[common]].item() for r in replies]


def test_choices_are_scored_at_their_decision_token_in_one_pass(tiny_model_dir: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend

    system = ("system", "Label the translation. " * 6)
    choices = ('{"label": "CORRECTLY GENDERED"}', '{"label": "WRONGLY GENDERED"}', '{"label": "NEUTRAL"}')
    prompts = [(system, ("user", f"Source: {s}\nTarget: {t}")) for s, t in (
        ("The citizens are worried.", "I cittadini sono preoccupati."),
        ("She thanked the rapporteur for his excellent work on this file.", "Ha ringraziato il relatore."),
        ("I am tired.", "Sono stanca."))]
    for reuse in (True, False):
        backend = TransformersBackend(str(tiny_model_dir), device="cpu", prefix_reuse=reuse)
        got = score_choices(backend, [ChoiceRequest(p, choices) for p in prompts], batch_size=2)  # padded batches
        for prompt, scores in zip(prompts, got, strict=True):
            assert scores.error is None
            assert scores.logprobs == pytest.approx(_decision_logprobs(tiny_model_dir, prompt, choices), abs=1e-3)
            assert sum(scores.probabilities()) == pytest.approx(1.0)
        if reuse:
            assert backend.stats.prefix_builds >= 1, "the system text is computed once per cluster"
    same_start = ('{"label": "A"}', '{"label": "A"}')
    assert "cannot be told apart" in (score_choices(backend, [ChoiceRequest(prompts[0], same_start)])[0].error or "")


def test_a_label_scoring_judge_keeps_the_probability_and_caches_it(tiny_model_dir: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend
    from gnt.judge.llm_judge import JudgeCache, JudgeItem, JudgeSettings, LLMJudge

    backend = TransformersBackend(str(tiny_model_dir), device="cpu")
    settings = JudgeSettings(format="CROSS-L", label_scoring=True, n_exemplars=0)
    judge = LLMJudge(backend, settings, JudgeCache())
    items = [JudgeItem("it", "The citizens are worried.", "I cittadini sono preoccupati."),
             JudgeItem("es", "I am tired.", "Estoy cansada.")]
    first = judge.judge(items)
    assert all(j.ok and j.label in ("CORRECTLY GENDERED", "WRONGLY GENDERED", "NEUTRAL") for j in first)
    for j in first:
        assert math.isclose(sum(j.label_probabilities.values()), 1.0, abs_tol=1e-4)
        assert j.probability == max(j.label_probabilities.values())
        assert j.neutral == (j.label == "NEUTRAL")
    assert "label-scoring" in judge.model_id
    again = judge.judge(items)
    assert judge.stats.cached == 2 and judge.stats.judged == 0
    assert [j.probability for j in again] == [j.probability for j in first]
    with pytest.raises(ValueError, match="label scoring needs an L format"):
        LLMJudge(backend, JudgeSettings(format="CROSS-P+L", label_scoring=True))


def test_near_tie_verdicts_are_scored_again_in_the_recheck_dtype(tiny_model_dir: Path) -> None:
    from gnt.generation.transformers_backend import TransformersBackend
    from gnt.judge.llm_judge import JudgeCache, JudgeItem, JudgeSettings, LLMJudge

    loaded: list[TransformersBackend] = []

    def float32_judge() -> TransformersBackend:
        loaded.append(TransformersBackend(str(tiny_model_dir), device="cpu", dtype="float32"))
        return loaded[-1]

    def settings(**recheck: object) -> JudgeSettings:
        return JudgeSettings(format="MONO-L", label_scoring=True, n_exemplars=0, **recheck)

    items = [JudgeItem("it", "", "I cittadini sono preoccupati."), JudgeItem("es", "", "Estoy cansada."),
             JudgeItem("de", "", "Die Lehrkräfte sind müde.")]
    reference = LLMJudge(float32_judge(), settings()).judge(items)
    loaded.clear()
    bf16 = TransformersBackend(str(tiny_model_dir), device="cpu", dtype="bfloat16")
    never = LLMJudge(bf16, settings(recheck_dtype="float32", recheck_margin=1e-9), JudgeCache(), recheck=float32_judge)
    assert all(j.ok and j.rechecked_in is None for j in never.judge(items))
    assert not loaded, "no verdict was near a tie: the recheck model is not loaded"
    always = LLMJudge(bf16, settings(recheck_dtype="float32", recheck_margin=0.5), JudgeCache(), recheck=float32_judge)
    judged = always.judge(items)
    always.judge([JudgeItem("el", "", "Οι πολίτες ανησυχούν.")])
    assert len(loaded) == 1, "the recheck model is loaded once, when first needed"
    assert always.stats.rechecked == 1 and all(j.rechecked_in == "float32" for j in judged)
    for mine, theirs in zip(judged, reference, strict=True):
        assert mine.label == theirs.label
        assert all(math.isclose(mine.label_probabilities[k], v, abs_tol=1e-5)
                   for k, v in theirs.label_probabilities.items())
    assert "|recheck-float32<0.5" in always.model_id and always.model_id != never.model_id, "separate cache keys"
    always.close()
    assert loaded[0]._model is None
    assert "recheck" not in LLMJudge(bf16, settings(recheck_dtype="float32")).model_id, "no recheck model, no recheck"


def test_a_recheck_needs_label_scoring_and_a_margin_below_one_half() -> None:
    from gnt.judge.config import load_judge_recipe

    judge = str(RECIPES_DIR / "judge-gemma270m.yaml")
    assert load_judge_recipe(judge).recheck_dtype == "float32"
    with pytest.raises(RecipeError, match="recheck_dtype=float32 needs label_scoring"):
        load_judge_recipe(judge, [("label_scoring", False)])
    with pytest.raises(RecipeError, match=r"recheck_margin must be in \(0, 0.5\]"):
        load_judge_recipe(judge, [("recheck_margin", 0.0)])
    assert load_judge_recipe(judge, [("recheck_dtype", None), ("label_scoring", False)]).recheck_dtype is None


# ---------------------------------------------------------------------------------------------- recipes
def test_a_training_recipe_reads_as_a_judge_recipe(tmp_path: Path) -> None:
    keys, lines = judge_recipe_mapping(RECIPES_DIR / "judge-gemma270m.yaml")
    assert keys["judge_model"] == "gnt:gemma" and keys["judge_adapter"] == "outputs/demo-gemma/runs/judge"
    assert keys["format"] == "MONO-L" and keys["label_scoring"] is True and keys["judge"] == "llm"
    assert lines["judge_adapter"] > 0
    plain = tmp_path / "plain.yaml"
    plain.write_text("judge: lexical\n")
    assert judge_recipe_mapping(plain)[0] == {"judge": "lexical"}
    broken = tmp_path / "train.yaml"
    broken.write_text("model_name_or_path: gnt:tiny\noutput_dir: runs/x\n")
    with pytest.raises(RecipeError, match="needs a `judge:` section"):
        judge_recipe_mapping(broken)


def _judge_cli(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "eval/judge.py", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_a_missing_adapter_is_one_error_line(tmp_path: Path) -> None:
    out = tmp_path / "validation.json"
    done = _judge_cli("validate", "recipes/judge-gemma270m.yaml", f"judge_adapter={tmp_path / 'nothing'}",
                      f"validation={out}")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "does not exist: train the judge first" in errors[0]
    assert not out.exists()


def test_an_adapter_of_another_base_model_is_refused(eval_tiny_run: Path, tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="trained on the base model .* not on judge_model"):
        judge_adapter(eval_tiny_run / "checkpoint-1", str(tmp_path / "some-other-model"))
    adapter, record = judge_adapter(eval_tiny_run / "checkpoint-1", record_base(eval_tiny_run))
    assert adapter.weights_hash and record


def record_base(run: Path) -> str:
    return read_json(run / "gnt_run.json")["base_model"]


def test_prompts_other_than_the_trained_ones_are_refused() -> None:
    record = {"rows_manifest": {"format": "CROSS-L", "prompt_fingerprints": {"it": "a", "es": "b"},
                                "prompts_dir": "data/judge/prompts-learned"}}
    assert check_trained_prompts(record, "CROSS-L", {"it": "a"}, "runs/j") == []
    assert check_trained_prompts(record, "CROSS-L", {"it": "a", "de": "z"}, "runs/j") == ["de"]
    with pytest.raises(RecipeError, match="trained on CROSS-L rows, not format=MONO-L"):
        check_trained_prompts(record, "MONO-L", {"it": "a"}, "runs/j")
    with pytest.raises(RecipeError, match="learned other prompt texts for it"):
        check_trained_prompts(record, "CROSS-L", {"it": "changed"}, "runs/j")


# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_train_validate_and_judge_with_a_tiny_judge(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The whole path on the tiny model: rows → train/sft.py on them → validate on held-out references (files the
    report reads) → judge an evaluation's translations, with probabilities in the judgments."""
    data = tmp_path / "data"
    build = subprocess.run([sys.executable, "data/build.py", f"out_dir={data}", "langs=it", "judge_langs=it,es",
                            "templated_pairs=20", "progress=false"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    recipe = tmp_path / "judge.yaml"
    recipe.write_text((RECIPES_DIR / "judge-gemma270m.yaml").read_text()
                      .replace("model_name_or_path: gnt:gemma", f"model_name_or_path: {tiny_model_dir}")
                      .replace("dtype: bfloat16", "dtype: float32"))
    run = tmp_path / "judge-run"
    train = subprocess.run([sys.executable, "train/sft.py", str(recipe), f"data_dir={data}", f"output_dir={run}",
                            "max_steps=2", "save_steps=2", "per_device_train_batch_size=4", "max_length=512"],
                           cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr[-2000:]
    record = read_json(run / "gnt_run.json")
    assert record["data_rows"] == "judge" and record["rows_manifest"]["format"] == "MONO-L"
    out = tmp_path / "validation.json"
    done = _judge_cli("validate", str(recipe), f"judge_adapter={run}", f"data={data}/eval/judge_references.jsonl",
                      f"validation={out}", "langs=it,es")
    assert done.returncode == 0, done.stderr[-2000:]
    report = read_json(out)
    assert report["kind"] == "references" and report["judge_info"]["scoring"] == "labels"
    every = next(r for r in report["results"] if r["lang"] == "all")
    assert every["cells"]["overall"]["errors"] == 0 and every["binary"]["n"] == every["cells"]["overall"]["n"]
    wrong = _judge_cli("validate", str(recipe), f"judge_adapter={run}", "format=CROSS-L",
                       f"validation={tmp_path / 'x.json'}")
    assert wrong.returncode == 2 and "trained on MONO-L rows" in wrong.stderr


def test_the_report_names_the_judges_validation_and_calls_a_lone_lexical_judge_unvalidated(tmp_path: Path) -> None:
    from _report_fixtures import make_results

    from gnt.report.collect import collect
    from gnt.report.document import _validation_text, judge_line

    results = make_results(tmp_path / "eval", steps=(2,), langs=("it",), rows_per_set=2, extras=False,
                           validation=False)
    sentence, _ = judge_line(collect(results))
    assert "lexical judge ran alone" in sentence and "**unvalidated**" in sentence
    binary = {"accuracy": 0.96, "n": 100, "per_label": {"GENDERED": {"recall": 0.94}, "NEUTRAL": {"recall": 0.98}}}
    report = {"kind": "references", "results": [{"lang": "it", "binary": binary}, {"lang": "all", "binary": binary}]}
    assert _validation_text(report) == ("binary accuracy 96.0% on 100 held-out mGeNTE references (GENDERED recall "
                                        "94.0%, NEUTRAL recall 98.0%)")
    report["by_origin"] = {"mgente": {"overall": {"accuracy": 1.0, "n": 60}},
                           "templated": {"overall": {"accuracy": 0.9, "n": 40}}}
    assert _validation_text(report) == ("binary accuracy 96.0% on 100 held-out mGeNTE and templated Set-N references "
                                        "(GENDERED recall 94.0%, NEUTRAL recall 98.0%); 90.0% on the 40 templated "
                                        "ones alone")
