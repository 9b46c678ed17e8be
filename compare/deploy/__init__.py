"""The two ways to deploy a WebApp: `helm` (chart + pyhelm3) and `operator` (CRD + controller).

Both take a ClusterTarget, a WebApp and a namespace and leave a Deployment and a Service named
after the WebApp; the judge (`compare.judge`) holds them to the objects in `desired`.
"""
