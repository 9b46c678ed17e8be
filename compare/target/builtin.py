"""The built-in WebApp as a target's arm: what `compare run` without `--target` deploys.

The operator arm is the toolkit's own operator (install form `toolkit`) with the WebApp as its
one resource: ready when Available, held to the built-in chart's rendering of it.
"""

from __future__ import annotations

from compare.target.load import READY_CONDITION, Operator, OperatorInstall
from compare.webapp import API_GROUP, API_VERSION, KIND, WebApp, to_cr


def builtin_operator(webapp: WebApp) -> Operator:
    """The operator arm of the built-in target: `webapp` for the toolkit's own operator."""
    return Operator(
        install=OperatorInstall("toolkit"),
        resources=(to_cr(webapp),),
        ready_condition=READY_CONDITION,
        webapps=(webapp,),
    )


def webapp_named(name: str) -> Operator:
    """The toolkit operator's arm naming one WebApp by name alone: what removing it needs
    (without its spec there is no desired state: never deployed or judged through this)."""
    body = {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": KIND, "metadata": {"name": name}}
    return Operator(OperatorInstall("toolkit"), (body,), READY_CONDITION)
