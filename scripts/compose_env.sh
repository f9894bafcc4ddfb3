#!/usr/bin/env bash
# docker-compose.yml in real containers, where no container registry is reachable (root).
#
#   sudo bash scripts/compose_env.sh build   # podman + base image + wheelhouse + project image
#   sudo bash scripts/compose_env.sh up      # build, then podman-compose up -d (services + proxy)
#   sudo bash scripts/compose_env.sh down    # podman-compose down: no containers, pods, networks left
#   sudo bash scripts/compose_env.sh test    # build, then tests/compose/test_compose_containers.py
#
# build:
#  (a) podman, runc, netavark, iptables, mmdebstrap from Debian's packages if missing, and
#      podman-compose 1.6.0 from PyPI in a venv under the cache (Debian's 1.0.3 breaks CMD healthchecks);
#  (b) a base image with Python 3.11 from Debian bookworm's packages (mmdebstrap, a venv in
#      /opt/venv first on PATH, pip reading wheels from /wheels only), `podman import`ed as
#      $CHAOSPROXY_BASE_IMAGE; skipped when that image exists;
#  (c) a wheelhouse on the host: `pip wheel` of this project and its dependencies pinned by
#      constraints.txt (+ setuptools, the build backend); the dependencies are rebuilt only
#      when pyproject.toml or constraints.txt change;
#  (d) the project's image from the unmodified Dockerfile (`--build-arg BASE=...`), with the
#      wheelhouse mounted at /wheels and no network during the build.
#
# Environment: CHAOSPROXY_COMPOSE_CACHE (wheelhouse, default ~/.cache/chaosproxy-compose),
# CHAOSPROXY_BASE_IMAGE (default localhost/chaosproxy-base:bookworm), DEBIAN_MIRROR,
# COMPOSE_FILES (default docker-compose.yml; e.g. "docker-compose.yml docker-compose.host.yml").
# Podman runs with runc and cgroupfs and explicit nofile/nproc limits (runc here refuses
# podman's defaults), set through CONTAINERS_CONF so podman-compose's calls get them too.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${CHAOSPROXY_COMPOSE_CACHE:-$HOME/.cache/chaosproxy-compose}
base_image=${CHAOSPROXY_BASE_IMAGE:-localhost/chaosproxy-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
project_image=localhost/chaosproxy:local
podman_compose_version=1.6.0
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-chaosproxy}

log() { printf '[compose_env %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

containers_conf() {
  mkdir -p "$cache"
  cat >"$cache/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
  export CONTAINERS_CONF="$cache/containers.conf"
}

install_tools() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v iptables >/dev/null || missing+=(iptables) # netavark's firewall driver
  [ -x /usr/lib/podman/netavark ] || missing+=(netavark aardvark-dns)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  # podman-compose from PyPI, pinned: Debian's 1.0.3 turns a healthcheck's CMD list into a
  # broken shell string (every check fails), ignores `profiles:` and leaves the network on down.
  if [ "$("$cache/podman-compose/bin/podman-compose" --version 2>/dev/null | head -1)" != "podman-compose version $podman_compose_version" ]; then
    log "installing podman-compose $podman_compose_version from PyPI into $cache/podman-compose"
    python3 -m venv "$cache/podman-compose"
    "$cache/podman-compose/bin/pip" install -q --disable-pip-version-check \
      "podman-compose==$podman_compose_version"
  fi
  export PODMAN_COMPOSE="$cache/podman-compose/bin/podman-compose"
}

build_base() {
  if podman image exists "$base_image"; then
    log "base image $base_image exists (cached)"
    return
  fi
  log "building $base_image with mmdebstrap (bookworm, python3 + venv)"
  # pip in the image installs only from /wheels (mounted during the project's build).
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
    --customize-hook='chroot "$1" python3 -m venv /opt/venv' \
    --customize-hook='printf "[global]\nno-index = true\nfind-links = /wheels\n" >"$1/etc/pip.conf"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    bookworm - "$mirror" |
    podman import \
      --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["python"]' \
      - "$base_image" >/dev/null
}

build_wheels() {
  local wheels="$cache/wheels" stamp
  stamp=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
  mkdir -p "$wheels"
  if [ "$(cat "$cache/wheels.stamp" 2>/dev/null)" != "$stamp" ]; then
    log "wheelhouse: dependencies pinned by constraints.txt"
    python3 -m pip wheel -q --disable-pip-version-check -c constraints.txt -w "$wheels" \
      . "setuptools>=77"
    echo "$stamp" >"$cache/wheels.stamp"
  else
    # The Dockerfile installs the project from its sources (`pip install /src`), so only the
    # dependencies and the build backend have to be in the wheelhouse.
    log "wheelhouse: dependencies cached ($stamp)"
  fi
}

build_image() {
  log "building $project_image from the Dockerfile (BASE=$base_image, no network)"
  local old
  old=$(podman image inspect --format '{{.Id}}' "$project_image" 2>/dev/null || true)
  podman build -q --network none --volume "$cache/wheels:/wheels:ro" \
    --build-arg "BASE=$base_image" -t "$project_image" . >/dev/null
  # The previous build, now untagged, would pile up run after run.
  if [ -n "$old" ] && [ "$old" != "$(podman image inspect --format '{{.Id}}' "$project_image")" ]; then
    podman rmi "$old" >/dev/null 2>&1 || true
  fi
}

build() {
  local started=$SECONDS
  install_tools
  containers_conf
  build_base
  build_wheels
  build_image
  log "build done in $((SECONDS - started)) s"
}

compose() {
  local files=() file
  for file in ${COMPOSE_FILES:-docker-compose.yml}; do files+=(-f "$file"); done
  "$PODMAN_COMPOSE" "${files[@]}" "$@"
}

# The file's healthcheck, run by hand until it passes: podman 4.3 runs healthchecks from
# systemd timers only, and podman-compose ignores `condition: service_healthy` on podman < 4.6.
wait_healthy() {
  local name="${COMPOSE_PROJECT_NAME}_$1_1" deadline=$((SECONDS + 180))
  until podman healthcheck run "$name" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      podman logs --tail 30 "$name" >&2
      log "$name never became healthy"
      return 1
    fi
    sleep 1
  done
}

domains="coding ecommerce healthcare logistics medical_records scheduling support travel weather"

case "${1:-build}" in
build) build ;;
up)
  build
  : "${CHAOSPROXY_CONTROL_TOKEN:?set CHAOSPROXY_CONTROL_TOKEN}" "${CHAOSPROXY_ORACLE_TOKEN:?set CHAOSPROXY_ORACLE_TOKEN}"
  mkdir -p "${CHAOSPROXY_RUNS:-runs}"
  started=$SECONDS
  compose up -d $domains # word splitting: one argument per service
  for service in $domains; do wait_healthy "$service"; done
  compose up -d --no-deps proxy
  wait_healthy proxy
  log "up and healthy in $((SECONDS - started)) s (proxy on 127.0.0.1:${CHAOSPROXY_PORT_PROXY:-8700})"
  ;;
env)
  # what the container test needs from this script, for a test command run elsewhere:
  # eval "$(bash scripts/compose_env.sh env)"
  echo "export CONTAINERS_CONF='$cache/containers.conf'"
  echo "export PODMAN_COMPOSE='$cache/podman-compose/bin/podman-compose'"
  echo "export CHAOSPROXY_COMPOSE_TIER=1"
  ;;
down)
  install_tools
  containers_conf
  compose --podman-rm-args=-v down -v -t 5 # -v on rm: the containers' anonymous volumes too
  ;;
test)
  build
  CHAOSPROXY_COMPOSE_TIER=1 \
    "${PYTHON:-.venv/bin/python}" -m pytest tests/compose/test_compose_containers.py -q -p no:cacheprovider
  ;;
*)
  echo "usage: $0 [build|up|down|test|env]" >&2
  exit 2
  ;;
esac
