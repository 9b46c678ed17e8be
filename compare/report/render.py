"""Choosing a format: `render(fmt, data)` returns the report's text."""

from __future__ import annotations

from enum import StrEnum

from compare.errors import CompareError
from compare.report.data import ReportData
from compare.report.html import render_html
from compare.report.junit import render_junit
from compare.report.summary import render_json
from compare.report.text import render_markdown, render_table


class ReportFormat(StrEnum):
    table = "table"
    md = "md"
    html = "html"
    json = "json"
    junit = "junit"


def render(fmt: ReportFormat, data: ReportData) -> str:
    if fmt is ReportFormat.table:
        return render_table(data)
    if fmt is ReportFormat.md:
        return render_markdown(data)
    if fmt is ReportFormat.html:
        return render_html(data)
    if fmt is ReportFormat.json:
        return render_json(data)
    if data.check is None:
        raise CompareError("the junit format needs a policy (--policy FILE)")
    return render_junit(data, data.check)
