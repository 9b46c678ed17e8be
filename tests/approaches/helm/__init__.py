"""Tests of the Helm path: the chart, helm error parsing, deploy/upgrade/uninstall, the CLI."""
