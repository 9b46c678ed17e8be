"""The three ways to deploy a WebApp: `helm` (chart + pyhelm3), `operator` (CRD + controller)
and `flux` (a HelmRelease reconciled by the real Flux controllers).

Each takes a ClusterTarget, a WebApp and a namespace and leaves a Deployment and a Service named
after the WebApp; the judge (`compare.judge`) holds them to the objects the approach's
`desired` returns. The approaches themselves - the one interface the rest of the toolkit
uses - are `compare.approaches`, whose modules delegate to the code here.
"""
