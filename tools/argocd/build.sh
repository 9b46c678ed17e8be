#!/usr/bin/env bash
# Builds Argo CD (the `argocd` approach) into the cache's argocd/: one multi-call `argocd`
# binary (its name selects the component, so argocd-application-controller and
# argocd-repo-server are symlinks to it), the Helm 3 CLI its repo-server runs, and the
# Application/AppProject CRDs and the controllers' RBAC of the same module version. Its own
# stamp (bin/.stamp-argocd): building it never touches the control plane or Flux.
# tools/build.sh runs it; it also runs alone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPARE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-vs-operator}
stamp="$cache/bin/.stamp-argocd"
out="$cache/argocd"
# shellcheck source=versions.env
source "$here/versions.env"

die() { echo "tools/argocd/build.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go >= 1.26 (https://go.dev/doc/install) and re-run"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "$go_minor" -ge 26 ] || die "Go $(go env GOVERSION) is too old: the pinned Argo CD module needs Go >= 1.26"

grep -q "github.com/argoproj/argo-cd/v3 $ARGOCD_VERSION" "$here/go.mod" \
  || die "ARGOCD_VERSION=$ARGOCD_VERSION disagrees with tools/argocd/go.mod"

# Two builds at once (two commands, or two test sessions, on a cold cache) would overwrite
# each other's output: one at a time; the second then finds the stamp and returns.
mkdir -p "$cache"
exec 9>"$cache/.build-argocd.lock"
flock 9

want=$(cat "$here/versions.env" "$here/build.sh" "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
wanted=(bin/argocd bin/argocd-application-controller bin/argocd-repo-server bin/helm
  crds/application-crd.yaml crds/appproject-crd.yaml rbac/application-controller-clusterrole.yaml)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  missing=0
  for f in "${wanted[@]}"; do [ -e "$out/$f" ] || missing=1; done
  if [ $missing = 0 ]; then
    [ "${1:-}" = "--quiet" ] || echo "Argo CD $ARGOCD_VERSION up to date in $out"
    exit 0
  fi
fi

mkdir -p "$cache/bin"
rm -f "$stamp"
echo "Building Argo CD $ARGOCD_VERSION (and Helm $ARGOCD_HELM_VERSION for its repo-server) into $out"
echo "  The first build takes minutes; later runs reuse it."
start=$(date +%s)
log="$cache/build-argocd.log"
: > "$log"
run() { "$@" >>"$log" 2>&1 || die "build failed: $* (see $log)"; }
step() { printf '  %-26s' "$1"; }
ok() { echo "done ($(( $(date +%s) - $1 ))s)"; }

rm -rf "$out.new"
mkdir -p "$out" "$out.new/bin" "$out.new/crds" "$out.new/rbac"

# Argo CD's Makefile stamps these variables of its common package. A module download carries
# no commit hash, so it reports itself as v3.2.9+unknown (`argocd version --client`).
pkg=github.com/argoproj/argo-cd/v3/common
ldflags="-s -w -X $pkg.version=${ARGOCD_VERSION#v} -X $pkg.gitTag=$ARGOCD_VERSION"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
t=$(date +%s); step argocd
(cd "$here" && run go build -trimpath -tags netgo,osusergo -ldflags "$ldflags" \
  -o "$out.new/bin/argocd" github.com/argoproj/argo-cd/v3/cmd); ok "$t"
# cmd/main.go dispatches on the base name of argv[0].
ln -s argocd "$out.new/bin/argocd-application-controller"
ln -s argocd "$out.new/bin/argocd-repo-server"

helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$ARGOCD_HELM_VERSION"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
t=$(date +%s); step "helm $ARGOCD_HELM_VERSION"
GOBIN="$out.new/bin" run go install -trimpath -ldflags "$helm_ldflags" "helm.sh/helm/v3/cmd/helm@$ARGOCD_HELM_VERSION"; ok "$t"

# The CRDs and the application controller's cluster role of exactly this module version,
# from the Go module cache.
module_dir=$(cd "$here" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
for f in application-crd.yaml appproject-crd.yaml; do
  [ -f "$module_dir/manifests/crds/$f" ] || die "no manifests/crds/$f in $module_dir"
  cp "$module_dir/manifests/crds/$f" "$out.new/crds/"
done
role="$module_dir/manifests/cluster-rbac/application-controller/argocd-application-controller-clusterrole.yaml"
[ -f "$role" ] || die "no $role"
cp "$role" "$out.new/rbac/application-controller-clusterrole.yaml"
chmod -R u+w "$out.new"

# Only what the build makes is replaced: $out/clusters holds the running processes' state.
for d in bin crds rbac; do
  rm -rf "${out:?}/$d"
  mv "$out.new/$d" "$out/$d"
done
rmdir "$out.new"
echo "$want" > "$stamp"
echo "Built in $(( $(date +%s) - start ))s: argocd ($(du -m "$out/bin/argocd" | cut -f1) MB), helm $ARGOCD_HELM_VERSION"
