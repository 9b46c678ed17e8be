"""The deploy code of every approach: Helm (chart + pyhelm3), the operator (CRD + controller),
Flux (a HelmRelease reconciled by the real Flux controllers) and Argo CD (an Application).

Each approach's arm of a target has one module (`helm_arm`, `flux_arm`, `argocd_arm`,
`operator_arm`) over its mechanics (`helm`: pyhelm3; `flux`, `argocd`, `operator`: starting,
checking and stopping their controllers); the built-in WebApp is such a target
(`compare.target.builtin_target`), so its Deployment and Service, named after the WebApp, come
the same way. The judge (`compare.judge`) holds what is
deployed to the objects the approach's `desired` returns. The approaches themselves - the one
interface the rest of the toolkit uses - are `compare.approaches`, whose modules delegate to
the code here.
"""

# Seconds a deploy, or an undeploy, of any approach may take before it is an error: the default
# of `compare deploy/undeploy NAME --timeout` and of `compare run --deploy-timeout`.
DEPLOY_TIMEOUT_S = 120.0
