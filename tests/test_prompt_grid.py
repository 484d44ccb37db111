"""The prompt grid: every cell of every language, roles, shot balance and order, and part spans."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gnt.data.entry import LANGUAGES
from gnt.data.errors import DataErrors
from gnt.paths import PROMPTS_DIR
from gnt.prompts.chat import locate_parts, render_prompt_text, supports_system_role
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS, Cell, PromptGrid, fit_messages, grid_cells, source_turn
from gnt.prompts.texts import load_prompt_texts

SOURCE = 'The report [A6-0123/2009] by Mrs Lulling, "on workers", was adopted.'


@pytest.fixture(scope="module")
def grid() -> PromptGrid:
    return PromptGrid(LANGUAGES, seed=0)


def test_grid_has_48_cells() -> None:
    cells = grid_cells()
    assert len(cells) == 48 == len(set(cells))
    assert {c.config for c in cells} == set(CONFIGS) and {c.shots for c in cells} == set(SHOT_COUNTS)
    assert Cell.parse("el/G+S/4") == Cell("el", "G+S", 4)
    with pytest.raises(ValueError, match="unknown prompt configuration"):
        Cell("it", "X", 0)


@pytest.mark.parametrize("cell", grid_cells(), ids=lambda c: c.name)
def test_every_cell_renders_with_correct_roles_and_spans(grid: PromptGrid, cell: Cell) -> None:
    prompt = grid.render(SOURCE, cell)
    texts = grid.texts[cell.lang]
    roles = [m["role"] for m in prompt.messages]
    # roles: optional system, then strictly alternating user/assistant, ending with the user's source
    body = roles[1:] if cell.has_system else roles
    assert roles[0] == ("system" if cell.has_system else "user")
    assert body == ["user", "assistant"] * cell.shots + ["user"]
    # shot balance: half gendered then half neutral, recorded in order
    shot_types = [p.shot_type for p in prompt.parts if p.kind == "shot_assistant"]
    assert shot_types == ["gendered"] * (cell.shots // 2) + ["neutral"] * (cell.shots // 2)
    assert list(prompt.shot_sources) == grid.shot_orders([cell])[cell.name]
    # each part's recorded span holds exactly that part's text
    by_name = {p.name: prompt.part_text(p) for p in prompt.parts}
    assert by_name["preamble"] == texts.preamble
    assert by_name["source"] == source_turn(SOURCE)
    assert ("system" in by_name) == cell.has_system and ("guidelines" in by_name) == cell.has_guidelines
    if cell.has_guidelines:
        assert by_name["guidelines"] == texts.guidelines
    for number, source in enumerate(prompt.shot_sources, start=1):
        assert by_name[f"shot{number}_user"] == source_turn(source)
        assert by_name[f"shot{number}_assistant"].startswith(f"<{cell.lang}> **")


def test_shot_order_is_seeded_and_shared_across_configurations() -> None:
    a, b = PromptGrid(["it"], seed=0), PromptGrid(["it"], seed=0)
    assert a.shot_orders(grid_cells(["it"])) == b.shot_orders(grid_cells(["it"]))
    orders = a.shot_orders(grid_cells(["it"], shots=[4]))
    assert len({tuple(v) for v in orders.values()}) == 1  # same shots for G+S, G, S, None
    seeds = {tuple(PromptGrid(["it"], seed=s).shot_orders([Cell("it", "G", 4)])["it/G/4"]) for s in range(8)}
    assert len(seeds) > 1  # the seed changes the order


def test_no_system_role_moves_system_text_into_first_user_turn(grid: PromptGrid) -> None:
    prompt = grid.render(SOURCE, Cell("de", "G+S", 2), system_role=False)
    assert prompt.messages[0]["role"] == "user"
    assert prompt.messages[0]["content"].startswith(grid.texts["de"].system)
    system_part = next(p for p in prompt.parts if p.kind == "system")
    assert prompt.part_text(system_part) == grid.texts["de"].system


def test_fit_messages_merges_same_role_turns() -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}]
    assert fit_messages(messages, system_role=True) == messages
    assert fit_messages(messages, system_role=False) == [
        {"role": "user", "content": "S\n\nU"},
        {"role": "assistant", "content": "A"},
    ]


def test_parts_located_in_the_rendered_chat_template(grid: PromptGrid, tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert supports_system_role(tokenizer)
    for config in CONFIGS:
        prompt = grid.render(SOURCE, Cell("el", config, 4))
        text = render_prompt_text(tokenizer, prompt.as_messages())
        for located in locate_parts(text, prompt):
            assert text[located.start : located.end] == prompt.part_text(located.part)


def _copy_prompts(tmp_path: Path) -> Path:
    target = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, target)
    return target


def test_prompt_files_report_contradicting_demonstration(tmp_path: Path) -> None:
    prompts = _copy_prompts(tmp_path)
    path = prompts / "el.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    first = data["demonstrations"][0]
    first["gender"] = "M" if first["gender"] == "F" else "F"  # the known defect: a swapped gender
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(DataErrors) as excinfo:
        load_prompt_texts("el", prompts)
    messages = [str(e) for e in excinfo.value.errors]
    assert any("contradicts" in m and "demonstrations[0]" in m and str(path) in m for m in messages), messages


def test_prompt_files_report_missing_text_and_bad_shape(tmp_path: Path) -> None:
    prompts = _copy_prompts(tmp_path)
    path = prompts / "it.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["guidelines"] = ""
    data["demonstrations"] = data["demonstrations"][:3]
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(DataErrors) as excinfo:
        load_prompt_texts("it", prompts)
    text = str(excinfo.value)
    assert "missing or empty text 'guidelines'" in text
    (prompts / "it.yaml").write_text("guidelines: [unclosed\n", encoding="utf-8")
    with pytest.raises(Exception, match="malformed YAML"):
        load_prompt_texts("it", prompts)
