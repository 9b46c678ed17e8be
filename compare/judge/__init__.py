"""The judge: does the desired state of a deployment hold in the live objects?

One closed-world rule for everything that gives a verdict (trials, chaostoolkit probes,
deploy waits, `compare status`). It takes the desired *objects* (whatever a chart rendered or
an operator built), not a model of the app, so it judges any app:

  kinds      the object kinds it reads, watches and defaults (typed client calls, namespaced
             or cluster-scoped, timeouts), and any other kind the API server serves, by
             discovery (`resolve`)
  secrets    a Secret's values as their hashes: judged by key, never printed or kept
  desired    the desired objects, with the API's defaults by server-side dry-run
  allow      the allow-list: what others may set without it being drift, with reasons
  diff       the closed-world comparison of one object (changed, removed, added)
  heal       the full object that restores the desired state (for controllers that heal)
  rollout    when a Deployment's rollout of the desired template is complete (from the pods)
  reading    one reading of a namespace (full re-read or a watch cache)
  endpoints  EndpointSlices someone else added for a desired Service (drift)
  verdict    `problems`: diff of every desired object + rollout + foreign pods and slices
  parts      the app's main workload and Service (what the faults act on), one rule
  watch      a list+watch of a namespace that turns changes into readings as they happen
  wait       waiting until a desired state holds, by watching
"""

from compare.judge.allow import ALLOW_LIST
from compare.judge.desired import (
    DesiredObject,
    DesiredObjects,
    as_given,
    from_pairs,
    judged_objects,
    with_api_defaults,
)
from compare.judge.diff import diff_object, judged_field
from compare.judge.heal import restoring_patch
from compare.judge.kinds import REQUEST_TIMEOUT
from compare.judge.reading import Reading, read
from compare.judge.rollout import terminating, uid
from compare.judge.verdict import mismatches, only_pending, problems, workload
from compare.judge.wait import DEFAULT_SETTLE_S, wait_until_holds
from compare.judge.watch import NamespaceWatch

__all__ = [
    "ALLOW_LIST",
    "DEFAULT_SETTLE_S",
    "REQUEST_TIMEOUT",
    "DesiredObject",
    "DesiredObjects",
    "NamespaceWatch",
    "Reading",
    "as_given",
    "diff_object",
    "from_pairs",
    "judged_field",
    "judged_objects",
    "mismatches",
    "only_pending",
    "problems",
    "read",
    "restoring_patch",
    "terminating",
    "uid",
    "wait_until_holds",
    "with_api_defaults",
    "workload",
]
