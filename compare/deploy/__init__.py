"""The two ways to deploy a WebApp: `helm` (chart + pyhelm3) and `operator` (CRD + controller).

Both take a ClusterTarget, a WebApp and a namespace and leave a Deployment and a Service named
after the WebApp whose owned fields match `compare.webapp.desired_state`.
"""
