#!/usr/bin/env bash
# Builds the Flux source-controller and helm-controller (the `flux` approach) from their Go
# modules into the cache's bin/, and copies their CRDs from the same module versions into
# the cache's flux/crds/. Its own stamp (bin/.stamp-flux): building or rebuilding these never
# touches the control-plane binaries or their stamp. tools/build.sh runs it; it also runs alone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPARE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/helm-vs-operator}
bin="$cache/bin"
crds="$cache/flux/crds"
stamp="$bin/.stamp-flux"
# shellcheck source=versions.env
source "$here/versions.env"

die() { echo "tools/flux/build.sh: $*" >&2; exit 1; }

command -v go >/dev/null || die "no Go toolchain on PATH: install Go >= 1.26 (https://go.dev/doc/install) and re-run"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "$go_minor" -ge 26 ] || die "Go $(go env GOVERSION) is too old: the pinned Flux modules need Go >= 1.26"

grep -q "github.com/fluxcd/source-controller $SOURCE_CONTROLLER_VERSION" "$here/source-controller/go.mod" \
  || die "SOURCE_CONTROLLER_VERSION=$SOURCE_CONTROLLER_VERSION disagrees with tools/flux/source-controller/go.mod"
grep -q "github.com/fluxcd/helm-controller $HELM_CONTROLLER_VERSION" "$here/helm-controller/go.mod" \
  || die "HELM_CONTROLLER_VERSION=$HELM_CONTROLLER_VERSION disagrees with tools/flux/helm-controller/go.mod"

# Two builds at once (two commands, or two test sessions, on a cold cache) would overwrite
# each other's output: one at a time; the second then finds the stamp and returns.
mkdir -p "$cache"
exec 9>"$cache/.build-flux.lock"
flock 9

want=$(cat "$here/versions.env" "$here/build.sh" "$here"/*/go.mod "$here"/*/go.sum | sha256sum | cut -d' ' -f1)
binaries=(source-controller helm-controller)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  missing=0
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing=1; done
  [ -d "$crds" ] || missing=1
  if [ $missing = 0 ]; then
    [ "${1:-}" = "--quiet" ] || echo "Flux controllers up to date in $bin"
    exit 0
  fi
fi

mkdir -p "$bin"
rm -f "$stamp"
echo "Building the Flux controllers into $bin"
echo "  source-controller $SOURCE_CONTROLLER_VERSION, helm-controller $HELM_CONTROLLER_VERSION"
echo "  The first build takes minutes (measured on 2 cores: about 4); later runs reuse it."
start=$(date +%s)
log="$cache/build-flux.log"
: > "$log"
run() { "$@" >>"$log" 2>&1 || die "build failed: $* (see $log)"; }

# $1 = controller. Neither controller declares version variables of its own: its module
# version is in the binary's build info (`go version -m`). The Helm library it links reports
# its version (User-Agent, .Capabilities.HelmVersion) from these ldflags, as helm's own build does.
build() {
  local name=$1 t helm_version module_dir
  t=$(date +%s); printf '  %-26s' "$name"
  helm_version=$(cd "$here/$name" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
  local ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version"
  ldflags+=" -X helm.sh/helm/v4/internal/version.metadata= -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
  (cd "$here/$name" && run go build -trimpath -tags netgo,osusergo -ldflags "$ldflags" \
    -o "$bin/$name.new" "github.com/fluxcd/$name")
  mv -f "$bin/$name.new" "$bin/$name"
  # The CRDs of exactly this module version, from the Go module cache.
  module_dir=$(cd "$here/$name" && go list -m -f '{{.Dir}}' "github.com/fluxcd/$name")
  [ -d "$module_dir/config/crd/bases" ] || die "no config/crd/bases in $module_dir"
  cp "$module_dir"/config/crd/bases/*.yaml "$crds.new/"
  echo "done ($(( $(date +%s) - t ))s)"
}

rm -rf "$crds.new"
mkdir -p "$crds.new"
build source-controller
build helm-controller
chmod -R u+w "$crds.new"
rm -rf "$crds"
mv "$crds.new" "$crds"

echo "$want" > "$stamp"
echo "Built in $(( $(date +%s) - start ))s: ${binaries[*]} (CRDs in $crds)"
