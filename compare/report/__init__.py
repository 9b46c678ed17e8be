"""Reports of one run, regenerated from its results.json alone (no cluster).

`data` bundles what every format needs (the run's cells, an optional policy verdict, where the
output goes); `text` renders the terminal and Markdown tables, `html` the self-contained page
with `chart`'s inline SVG, `junit` the CI test report, `summary` the machine-readable JSON.
`render` picks one by `ReportFormat`.
"""

from compare.report.data import ReportData
from compare.report.render import ReportFormat, render

__all__ = ["ReportData", "ReportFormat", "render"]
