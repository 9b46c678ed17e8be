"""Every name the operator writes into a cluster, and its exit codes, in one place.

The manifests generator, the reconciler, the local runner and the tests all import these, so a
renamed label or lease cannot drift between the code and the committed YAML.
"""

from __future__ import annotations

from typing import Final

from compare.webapp import API_GROUP, API_VERSION, KIND, PLURAL

OPERATOR_NAME: Final = "webapp-operator"
# The field manager of every server-side apply the operator sends.
FIELD_MANAGER: Final = OPERATOR_NAME
# The seed's finalizer: kopf adds it, runs the cleanup handler, then removes it.
FINALIZER: Final = f"{API_GROUP}/cleanup"
# kopf keeps its handler progress and last-handled spec in annotations with this prefix.
ANNOTATION_PREFIX: Final = f"operator.{API_GROUP}"
# On each child: the WebApp generation it was last converged to. A difference found while it
# matches is drift (someone changed the child); otherwise the spec moved (an update).
GENERATION_ANNOTATION: Final = f"{ANNOTATION_PREFIX}/generation"

CRD_NAME: Final = f"{PLURAL}.{API_GROUP}"
API_GROUP_VERSION: Final = f"{API_GROUP}/{API_VERSION}"
SINGULAR: Final = KIND.lower()
SHORT_NAMES: Final = ("wa",)

# Labels on every child; `managed-by` tells other tools (and humans) who owns the object.
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
INSTANCE_LABEL: Final = "app.kubernetes.io/instance"

# The process's exit codes, read by its supervisor (the kubelet, or the local runner's). A
# replica that lost its Lease must stand by again as a fresh process: it is restarted however
# often that happens.
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_LEASE_LOST: Final = 4

# Where the operator itself lives (kubebuilder's <project>-system convention).
OPERATOR_NAMESPACE: Final = "webapp-system"
SERVICE_ACCOUNT: Final = OPERATOR_NAME
CLUSTER_ROLE: Final = OPERATOR_NAME
NAMESPACE_ROLE: Final = f"{OPERATOR_NAME}-leader-election"
LEASE_NAME: Final = f"{OPERATOR_NAME}-leader"
# The inventory the finalizer cleans up: one data key per WebApp the operator serves.
REGISTRY_CONFIGMAP: Final = f"{OPERATOR_NAME}-registry"

# Admission: the handler ids double as the URL paths of kopf's webhook server.
WEBHOOK_CONFIGURATION: Final = OPERATOR_NAME
WEBHOOK_ID: Final = "validate-webapp"
SCALE_WEBHOOK_ID: Final = "validate-webapp-scale"
WEBHOOK_SERVICE: Final = f"{OPERATOR_NAME}-webhook"
WEBHOOK_SECRET: Final = f"{OPERATOR_NAME}-webhook-tls"
DEFAULT_WEBHOOK_PORT: Final = 9443
DEFAULT_HEALTH_PORT: Final = 8081

__all__ = [
    "ANNOTATION_PREFIX",
    "API_GROUP",
    "API_GROUP_VERSION",
    "API_VERSION",
    "CLUSTER_ROLE",
    "CRD_NAME",
    "DEFAULT_HEALTH_PORT",
    "DEFAULT_WEBHOOK_PORT",
    "FIELD_MANAGER",
    "FINALIZER",
    "GENERATION_ANNOTATION",
    "INSTANCE_LABEL",
    "KIND",
    "LEASE_NAME",
    "MANAGED_BY_LABEL",
    "NAMESPACE_ROLE",
    "OPERATOR_NAME",
    "OPERATOR_NAMESPACE",
    "PLURAL",
    "REGISTRY_CONFIGMAP",
    "SCALE_WEBHOOK_ID",
    "SERVICE_ACCOUNT",
    "SHORT_NAMES",
    "SINGULAR",
    "WEBHOOK_CONFIGURATION",
    "WEBHOOK_ID",
    "WEBHOOK_SECRET",
    "WEBHOOK_SERVICE",
]
