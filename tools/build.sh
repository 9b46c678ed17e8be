#!/usr/bin/env bash
# Builds the embedded control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok, kwokctl) and helm from Go modules into a cache directory.
# A stamp of the pinned versions makes a re-run instant; a version change rebuilds.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPARE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-vs-operator}
bin="$cache/bin"
stamp="$bin/.stamp"
# shellcheck source=versions.env
source "$here/versions.env"

die() { echo "tools/build.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go >= 1.26 (https://go.dev/doc/install) and re-run"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "$go_minor" -ge 26 ] || die "Go $(go env GOVERSION) is too old: the pinned modules need Go >= 1.26"

grep -q "k8s.io/kubernetes $KUBE_VERSION" "$here/kube/go.mod" || die "KUBE_VERSION=$KUBE_VERSION disagrees with tools/kube/go.mod"
grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$here/etcd/go.mod" || die "ETCD_VERSION=$ETCD_VERSION disagrees with tools/etcd/go.mod"

want=$(cat "$here/versions.env" "$here/build.sh" "$here/kube/go.mod" "$here/etcd/go.mod" | sha256sum | cut -d' ' -f1)
# >>> flux: source-controller and helm-controller (the `flux` approach) have their own pins, build
# script and stamp in tools/flux/. This block is left out of the control-plane stamp (the next
# line hashes this file without it), so adding or changing it never rebuilds the control plane,
# and a Flux version change rebuilds only the two controllers.
mkdir -p "$cache"
# One build at a time (two commands or test sessions on a cold cache would overwrite each
# other's output); kept in this block so that adding the lock never rebuilds the control plane.
exec 9>"$cache/.build-control-plane.lock"
flock 9
bash "$here/flux/build.sh" "$@"
# Argo CD (the `argocd` approach) likewise: tools/argocd/ has its own pins, script and stamp.
bash "$here/argocd/build.sh" "$@"
want=$(cat "$here/versions.env" <(sed '/^# >>> flux/,/^# <<< flux/d' "$here/build.sh") "$here/kube/go.mod" "$here/etcd/go.mod" | sha256sum | cut -d' ' -f1)
# <<< flux
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl helm)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  missing=0
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing=1; done
  if [ $missing = 0 ]; then
    [ "${1:-}" = "--quiet" ] || echo "control-plane binaries up to date in $bin"
    exit 0
  fi
fi

mkdir -p "$bin"
rm -f "$stamp"
echo "Building the embedded control plane into $bin"
echo "  Kubernetes $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION, helm $HELM_VERSION"
echo "  The first build takes minutes (measured on 2 cores: about 8, or about 14 with an empty Go
  module cache, which downloads ~1.7 GB); later runs reuse it."
start=$(date +%s)

step() { printf '  %-26s' "$1"; }
ok() { echo "done ($(( $(date +%s) - $1 ))s)"; }

kv=${KUBE_VERSION#v}; major=${kv%%.*}; rest=${kv#*.}; minor=${rest%%.*}
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

log="$cache/build.log"
: > "$log"
run() { "$@" >>"$log" 2>&1 || die "build failed: $* (see $log)"; }

t=$(date +%s); step etcd
(cd "$here/etcd" && run go build -trimpath -ldflags "-s -w" -o "$bin/etcd" .); ok "$t"

for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  t=$(date +%s); step "$cmd"
  (cd "$here/kube" && run go build -trimpath -ldflags "$kube_ldflags" -o "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd"); ok "$t"
done

kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$kv"
for cmd in kwok kwokctl; do
  t=$(date +%s); step "$cmd"
  GOBIN="$bin" run go install -trimpath -ldflags "$kwok_ldflags" "sigs.k8s.io/kwok/cmd/$cmd@$KWOK_VERSION"; ok "$t"
done

helm_ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.metadata= -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
t=$(date +%s); step helm
GOBIN="$bin" run go install -trimpath -ldflags "$helm_ldflags" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"; ok "$t"

echo "$want" > "$stamp"
echo "Built in $(( $(date +%s) - start ))s: ${binaries[*]}"
