"""What a step of the evaluation pipeline is: its settings, whether its files are complete, and how it runs.

Each step package (the grid sweep, the judge, xCOMET, attribution, the templated suite, the report) defines one
:class:`Step` in its ``step`` module; :mod:`gnt.pipeline` runs them in the order a recipe lists them. A step's
settings are its own command's config: the keys of ``eval/judge.py`` are the keys of the judge step, so the
pipeline adds ordering and resumption, never a second implementation or a second set of keys.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from gnt.recipe import construct
from gnt.results.folder import ResultsFolder


class Step(Protocol):
    """One step of the pipeline."""

    name: str
    settings: tuple[type, ...]
    """The settings classes whose fields the step's recipe mapping takes (its command's)."""
    not_settings: dict[str, str]
    """Keys of those classes the step does not take, each with where it is set instead."""

    def config(self, settings: dict[str, Any], evaluation: Any) -> Any:
        """The step's config from its checked recipe settings and the evaluation's config (the sweep's keys)."""
        ...

    def complete(self, config: Any, folder: ResultsFolder) -> str | None:
        """Why the step's files for ``config`` are complete in ``folder`` (it is then skipped), or None."""
        ...

    def run(self, config: Any, folder: ResultsFolder) -> None:
        """Compute the step's files in ``folder``; raises on failure (the later steps do not run)."""
        ...

    def skipped(self, config: Any, folder: ResultsFolder) -> None:
        """What a skipped step still shows (the grid prints its table)."""
        ...

    def check(self, config: Any, pipeline: Any) -> None:
        """Refuse, before the first step runs, what this step would fail on later given the whole pipeline (the
        grid's cells, its models, the steps before it); raises RecipeError."""
        ...


class FolderStep:
    """What most steps share: their config is their command's settings class built from the step's settings,
    and a skipped step shows nothing. A step overrides what it does differently."""

    name: ClassVar[str]
    settings: ClassVar[tuple[type, ...]]
    not_settings: ClassVar[dict[str, str]] = {}

    def config(self, settings: dict[str, Any], evaluation: Any) -> Any:
        return construct(self.settings[0], settings)

    def skipped(self, config: Any, folder: ResultsFolder) -> None:
        return None

    def check(self, config: Any, pipeline: Any) -> None:
        return None


class PartStep(FolderStep):
    """A step that writes one part of each selected model folder (:data:`gnt.results.model_folder.PARTS`): it is
    complete when every selected folder's part checks out (whole, and computed from the folder's generations);
    its config names the folders in ``models``."""

    part: ClassVar[str]
    done: ClassVar[str]
    """What a complete part means, for the pipeline's line (``every generation judged``)."""

    def complete(self, config: Any, folder: ResultsFolder) -> str | None:
        return self.done if folder.incomplete(config.models, self.part) is None else None
