"""The report's WMT24 gender-resolution block: our checkpoints ranked among the WMT24 systems.

Read from ``<results>/wmt24/summary.json`` (written by ``python eval/templated.py wmt24 ...`` with the same
``--out``); nothing is shown when that file is absent. Rendered under the templated suite's section.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gnt.filenames import LEAKAGE, SUMMARY
from gnt.io import read_json
from gnt.report.blocks import Heading, Image, Para, Table


def _ci(stat: dict | None, signed: bool = True) -> str:
    if not stat or stat.get("value") is None:
        return "—"
    fmt = "{:+.3f}" if signed else "{:.3f}"
    text = fmt.format(stat["value"])
    if stat.get("ci"):
        text += " [" + ", ".join(fmt.format(x) for x in stat["ci"]) + "]"
    return text


def wmt24_blocks(directory: Path, figures: Path, data: dict) -> list[Any]:
    """Heading, ranking table (by ΔN on omission), the ranking figure and the leakage note; [] without results."""
    path = directory / "wmt24" / SUMMARY
    if not path.is_file():
        return []
    summary = read_json(path)
    systems = summary.get("systems", {})

    def key(item: tuple[str, dict]) -> float:
        value = item[1]["ambiguity"]["omission"]["dN"].get("value")
        return -(value if value is not None else -9.0)

    rows, kept = [], {}
    for name, entry in sorted(systems.items(), key=key):
        amb = entry["ambiguity"]
        mark = " (ours)" if entry.get("kind") == "model" else ""
        rows.append([f"{name}{mark}", _ci(amb["omission"]["dN"]), _ci(amb["active"]["dN"]),
                     _ci(amb["omission"]["N_amb"], signed=False), _ci(amb["active"]["N_amb"], signed=False),
                     f"{entry.get('unknown_rate', 0):.1%}"])
        kept[name] = {"kind": entry.get("kind"), "dN_omission": amb["omission"]["dN"], "dN_active": amb["active"]["dN"]}
    data["wmt24"] = {"lang": summary.get("lang"), "systems": kept}
    lang = summary.get("lang", "?")
    blocks: list[Any] = [
        Heading(3, f"WMT24 gender-resolution suite (en-{lang})"),
        Table(["system", "ΔN omission", "ΔN active", "N_amb omission", "N_amb active", "unknown"], rows,
              "Dawkins et al. (2024) dialogue suite: ΔN = N_amb − N_det per ambiguity kind (95% paired bootstrap "
              "CI), proportions of classified adjective slots; our models marked (ours).", name="wmt24"),
    ]
    for png in sorted((directory / "wmt24").glob("ranking_*.png")):
        dest = figures / "wmt24" / png.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, dest)
        blocks.append(Image(dest, f"WMT24 ranking — {png.stem}", "systems and our checkpoints by ΔN and N_amb"))
    leakage = directory / "wmt24" / LEAKAGE
    if leakage.is_file():
        overlap = read_json(leakage).get("in_project_templates", [])
        blocks.append(Para(f"{len(overlap)} of the suite's adjectives also occur in the project's templated "
                           f"training data ({', '.join(overlap[:12])}{' …' if len(overlap) > 12 else ''}); "
                           "per-checkpoint overlap in wmt24/leakage.json.", "note"))
    return blocks
