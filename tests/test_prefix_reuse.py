"""Shared-prefix reuse in the transformers backend: same greedy tokens as without it, and the prefix really reused.

The tiny model renders grid cells of ~300-500 tokens of which all but the last few dozen are shared by every row,
like the real grid. Each comparison runs the same requests with reuse on and off on one backend (one model load).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gnt.generation.base import Adapter, Constraint, DecodingParams, GenerationRequest
from gnt.generation.identity import adapter_weights_hash
from gnt.generation.prefix_cache import PrefixStore, common_prefix_len, prefix_clusters
from gnt.output_format import output_regex
from gnt.prompts.grid import Cell, PromptGrid

SOURCES = (
    "The citizens are tired of waiting.",
    "Madam President, I would like to thank you.",
    "The doctor told the patient to rest.",
    "We, the members of this House, must act now.",
    "The teachers met the minister yesterday.",
    "Every worker deserves a fair wage.",
    "The rapporteur has done excellent work.",
    "I am grateful to my colleagues for their support.",
)
# (cell, system role of the template): a system turn, the same cell for a template without one (the system text
# opens the first user turn), and a cell without a system prompt
CELLS = ((Cell("it", "G+S", 2), True), (Cell("it", "G+S", 0), False), (Cell("it", "None", 0), True))


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path):
    from gnt.generation.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_model_dir), batch_size=8, device="cpu", cpu_threads=1)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def adapter(eval_tiny_run: Path) -> Adapter:
    folder = eval_tiny_run / "checkpoint-1"
    return Adapter("sft/checkpoint-1", str(folder), adapter_weights_hash(folder))


def grid_requests(adapter: Adapter | None, constrained: bool, sources=SOURCES, max_new_tokens: int = 4):
    grid = PromptGrid(("it",))
    constraint = Constraint("regex", output_regex("it")) if constrained else None
    params = DecodingParams(max_new_tokens=max_new_tokens)
    return [
        GenerationRequest.from_messages(grid.render(text, cell, system_role).messages, adapter, constraint, params)
        for cell, system_role in CELLS
        for text in sources
    ]


def run(backend, requests, reuse: bool, batch_size: int):
    """Generations and token ids with reuse on or off, from an empty prefix store."""
    from gnt.generation.transformers_backend import GenerationStats

    backend.prefix_reuse, backend.batch_size = reuse, batch_size
    backend._prefixes.clear()
    backend.stats = GenerationStats()
    generations = backend.generate(requests)
    assert all(g.error is None for g in generations), [g.error for g in generations if g.error][:2]
    return generations, [list(t) for t in backend.last_token_ids], backend.stats


def test_greedy_tokens_identical_with_and_without_prefix_reuse_batch_8(backend, adapter) -> None:
    # base and adapter, constrained and not, three cells: one call, so grouping and clustering are exercised too
    requests = grid_requests(None, False) + grid_requests(adapter, True)
    off, off_tokens, off_stats = run(backend, requests, reuse=False, batch_size=8)
    on, on_tokens, on_stats = run(backend, requests, reuse=True, batch_size=8)
    assert on_tokens == off_tokens
    assert [g.text for g in on] == [g.text for g in off]
    assert all(tokens for tokens in on_tokens), "every request generated something"
    # the prefix was really reused: one prefix per (adapter, cell), most prompt tokens never recomputed
    assert on_stats.prefix_builds == 2 * len(CELLS)
    assert on_stats.prompt_tokens == off_stats.prompt_tokens
    assert on_stats.prefilled_tokens < 0.4 * on_stats.prompt_tokens
    assert off_stats.prefilled_tokens == off_stats.prompt_tokens
    assert on_stats.wasted_steps == 0 and off_stats.wasted_steps == 0


def test_greedy_tokens_identical_with_and_without_prefix_reuse_batch_1(backend, adapter) -> None:
    requests = grid_requests(None, True, sources=SOURCES[:2]) + grid_requests(adapter, False, sources=SOURCES[:2])
    _, off_tokens, _ = run(backend, requests, reuse=False, batch_size=1)
    _, on_tokens, stats = run(backend, requests, reuse=True, batch_size=1)
    assert on_tokens == off_tokens
    assert stats.batches == len(requests) and stats.prefix_builds == 2 * len(CELLS)


def test_prefix_is_kept_across_calls_and_per_adapter(backend, adapter) -> None:
    base = grid_requests(None, True)[:8]  # one cell
    _, first, stats = run(backend, base, reuse=True, batch_size=8)
    assert stats.prefix_builds == 1
    # a later call with some rows of the same cell (a sweep's next chunk) starts from the stored prefix
    again = backend.generate(base[2:6])
    assert backend.stats.prefix_builds == 1 and backend.last_token_ids == first[2:6]
    assert [g.error for g in again] == [None] * 4
    # the adapter's keys and values differ: its rows get their own prefix
    backend.generate(grid_requests(adapter, True)[:8])
    assert backend.stats.prefix_builds == 2


def test_constrained_rows_stop_when_the_grammar_is_complete(backend) -> None:
    requests = [
        GenerationRequest.from_messages(
            [{"role": "system", "content": "Answer yes or no. " * 8}, {"role": "user", "content": f"Question {i}?"}],
            constraint=Constraint("regex", "(yes|no)"), params=DecodingParams(max_new_tokens=40),
        )
        for i in range(6)
    ]
    generations, tokens, stats = run(backend, requests, reuse=True, batch_size=8)
    assert all(g.text in ("yes", "no") and g.finish_reason == "stop" for g in generations)
    # the batch ran only the steps its longest row needed (answer tokens + the stop token), not the 40-token cap
    assert stats.wasted_steps == 0
    assert stats.decode_steps == max(len(t) for t in tokens)
    assert stats.prefix_builds == 1


def test_prefix_clusters_split_cells_and_leave_every_row_a_suffix() -> None:
    cell_a = [[1] * 40 + [2, 3, i] for i in range(3)]
    cell_b = [[1] * 10 + [5] * 30 + [i] for i in range(2)]
    lone = [[9, 9, 9]]
    prompts = cell_a + cell_b + lone + [[1] * 40 + [2, 3]]  # a prompt equal to cell a's shared prefix
    clusters = {tuple(sorted(c.indices)): c.prefix_len for c in prefix_clusters(prompts, range(len(prompts)))}
    assert clusters == {(0, 1, 2, 6): 41, (3, 4): 40, (5,): 0}
    assert common_prefix_len([1, 2, 3], [1, 2, 4]) == 2


def test_prefix_store_finds_the_longest_stored_prefix_per_adapter() -> None:
    store = PrefixStore(capacity=2)
    store.put("a", [1, 2], "short")
    store.put("a", [1, 2, 3, 4], "long")
    assert store.best("a", [1, 2, 3, 4, 5], min_len=1) == ((1, 2, 3, 4), "long")
    assert store.best("a", [1, 2, 3, 9], min_len=1) == ((1, 2), "short")
    assert store.best("b", [1, 2, 3, 4], min_len=1) is None, "a prefix never serves another adapter"
    assert store.best("a", [1, 2, 3, 4], min_len=3) == ((1, 2, 3, 4), "long")
    store.put("a", [7], "third")  # capacity 2: the least recently used ([1, 2]) goes
    assert store.best("a", [1, 2, 9], min_len=1) is None
    store.drop_adapter("a")
    assert len(store) == 0
