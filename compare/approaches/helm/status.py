"""The `compare status` row of a Helm release (`target_app`): the helm approach's
`target_row`, for a target file's arm and for every release of the built-in chart `compare
status` finds, judged closed-world against the release's applied manifest (`compare.judge`): a
drifted Helm release shows here as drifted until someone runs `helm upgrade` again.
"""

from __future__ import annotations

from compare.cluster import ClusterTarget
from compare.deploy.chart_target import manifest_desired
from compare.deploy.charts import get_release, release_objects
from compare.deploy.rows import DeployedApp, judged_row, unjudged
from compare.judge import judged_objects
from compare.target import HelmInstall, Target


def target_app(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> DeployedApp | None:
    """The row of a Helm release (None when it is not installed), judged closed-world against
    every object of the release's applied manifest (`manifest_desired`)."""
    release = get_release(cluster, namespace, install.release)
    if release is None:
        return None
    detail = f"revision {release.revision}, {release.status}"
    objects = release_objects(cluster, namespace, install.release) or []
    if not judged_objects(objects):
        return unjudged("helm", release.release, namespace, detail, "nothing in the release")
    api = cluster.api_client()
    try:
        return judged_row(
            api,
            approach="helm",
            name=release.release,
            namespace=namespace,
            detail=detail,
            desired=manifest_desired(api, target, install, namespace, objects),
        )
    finally:
        api.close()
