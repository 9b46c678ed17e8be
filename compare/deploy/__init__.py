"""Deploy mechanics every approach shares, none of them an approach's (those live in their
packages, `compare.approaches.<name>`):

    charts        the Helm engine (pyhelm3): install, upgrade, render, uninstall a chart
    chart_errors  helm's stderr as one line naming the values field
    chart_target  a target's chart arm rendered, installed as a release, judged
    chart_server  the local Helm repository served on 127.0.0.1 (for GitOps controllers)
    processes     local processes and their one lifecycle (`Controllers`), `local` their state
    supervise     restartPolicy Always for a local process
    install       CLI tools (kubectl, helm), server-side apply, the identity kubeconfig
    ownership     what each deployer writes on the objects it applies
    live          waiting until a desired state holds (the judge's verdict)
    rows          one `compare status` row, judged
    rollback      a failed deploy leaves nothing half-done
"""

# Seconds a deploy, or an undeploy, of any approach may take before it is an error: the default
# of `compare deploy/undeploy NAME --timeout` and of `compare run --deploy-timeout`.
DEPLOY_TIMEOUT_S = 120.0
