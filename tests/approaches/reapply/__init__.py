"""A fifth approach from outside `compare/`: `reapply`, a plain "apply the manifest again"
baseline, registered by the tests that use it (`compare.approaches.registered`).

Its arm is a chart (the target's Helm arm, rendered); a deploy applies the rendering
server-side and stores it, and its controller - a local Python process, one per cluster -
re-applies every stored manifest every two seconds (forced, with its own field manager), so
drift of a field the manifest sets is undone within one interval; drift the manifest says
nothing about (an added env var, a foreign label) stays.

- `approach`: the approach (`Reapply`), over the shared mechanics (`compare.deploy.chart_target`
  renders, `compare.kube.served` applies and deletes, the judge waits and judges);
- `controllers`: starting and stopping its controller process;
- `controller`: the process itself (run as a script: it imports no test code but `manifests`);
- `manifests`: the stored manifests and the lock that keeps a controller's pass apart from a
  deploy's or undeploy's change of them.

This package's `__init__` imports nothing: the controller process imports `manifests` through
it without loading the toolkit's approaches.
"""
