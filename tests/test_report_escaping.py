"""report.md shows untrusted text (model outputs, the results folder's name, a title) without rendering it: no
link, image or HTML of theirs is live, and the H1 stays one literal line."""

from __future__ import annotations

import re
from pathlib import Path

ATTACK = ('[click](javascript:alert(1)) ![p](https://evil.example/track.png) <img src=x onerror=alert(1)> '
          'see https://evil.example and www.evil.example')

LIVE_LINK = re.compile(r"(?<!\\)!?\[(?:[^\]\\\n]|\\.)*(?<!\\)\]\((?P<target>[^)\n]*)\)")
"""Markdown link or image syntax whose brackets are not escaped, with its target."""


def test_links_images_and_html_from_outputs_and_names_are_inert(tmp_path: Path) -> None:
    from _report_fixtures import make_results

    from gnt.report.build import build_report
    from gnt.report.config import ReportConfig

    results = make_results(tmp_path / "res [x](https:__evil.example)", steps=(2,), langs=("it",), rows_per_set=2,
                           extras=False, rewrite=lambda record: {**record, "raw": ATTACK, "translation": ATTACK})
    title = "Evil ](javascript:alert(1)) <b>bold</b>\n# second heading"
    markdown = build_report(results, ReportConfig(title=title)).read_text(encoding="utf-8")
    html = (results / "report" / "report.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert "<h1>Evil ](javascript:alert(1)) &lt;b&gt;bold&lt;/b&gt;\n# second heading</h1>" in html
    assert markdown.count("evil.example/track.png") >= 1  # the outputs are shown ...
    targets = [m.group("target") for m in LIVE_LINK.finditer(markdown)]
    assert targets and all(t.startswith("figures/") for t in targets), targets  # ... and only figures are links
    assert "<img" not in markdown and "<b>" not in markdown and "&lt;img src=x" in markdown
    assert re.search(r"(?<!\\)(https?://|www\.)", markdown.replace("https\\://", "").replace("www\\.", "")) is None
    h1 = markdown.splitlines()[0]
    assert h1 == "# Evil ]\\(javascript:alert(1)) &lt;b&gt;bold&lt;/b&gt; # second heading"
    assert markdown.splitlines()[1] == ""  # the title's line break did not open a second heading
    default = build_report(results, ReportConfig()).read_text(encoding="utf-8").splitlines()[0]
    assert default == "# gnt-align evaluation report — res [x]\\(https\\:\\_\\_evil.example)"
