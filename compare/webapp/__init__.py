"""The one WebApp spec: its typed model, loading, and every form derived from it.

`spec` holds the pydantic model (the CRD schema and the chart's values schema are generated
from it), `load` reads a WebApp manifest file with one-line errors, `convert` derives the Helm
values (with a command's extra chart values) and the CR body, `names` holds the names and
selector labels both approaches use.
Nothing here talks to a cluster; what must hold is judged by `compare.judge`.
"""

from compare.paths import DEFAULT_APP
from compare.webapp.convert import chart_values, to_cr, to_helm_values
from compare.webapp.load import load_webapp, parse_webapp
from compare.webapp.names import CONTAINER_NAME, PORT_NAME, selector_labels
from compare.webapp.spec import API_GROUP, API_VERSION, KIND, PLURAL, WebApp, WebAppSpec

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "CONTAINER_NAME",
    "DEFAULT_APP",
    "KIND",
    "PLURAL",
    "PORT_NAME",
    "WebApp",
    "WebAppSpec",
    "chart_values",
    "load_webapp",
    "parse_webapp",
    "selector_labels",
    "to_cr",
    "to_helm_values",
]
