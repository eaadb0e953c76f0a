"""The report: the last stage. It reads what every earlier stage wrote to the warehouse and imports their section
modules; no earlier stage imports it (their metadata tables and inline plots come from `oprag_pipeline.rendering`).

One domain's report is `metrics.json`, `report.md`, `report.html` and PNG plots, written for a reader first: one
plain sentence, a table of contents, the verdict in figures, the answers (generation) section, then the statistics.

- `labels.py`: the variants' names and colours, the headline metrics, numbers and CIs as text;
- `data.py`: the figures read from the marts (`metrics.json`) and the rows the verdict picks;
- `verdict.py`: the plain sentence and the verdict in figures;
- `summary.py`: the summary table, for the report, the asset's metadata and the terminal;
- `figures.py`: the PNG plots;
- `sections.py`: the sections in order (`SECTIONS`, a list to extend);
- `contents.py`, `markdown_page.py`, `html_page.py`: the table of contents and the two renderings;
- `build.py`: `render` and `write_report`, which put it together;
- `assets.py`: the `evaluation_report` asset.
"""

from oprag_pipeline.rendering import embedded_png
from oprag_pipeline.report.build import write_report

__all__ = ["embedded_png", "write_report"]
