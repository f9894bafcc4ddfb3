#!/usr/bin/env bash
# Optional: run one docker-compose service (`chaosproxy serve travel`) in a real container,
# where no base image can be pulled. The root file system is made with debootstrap from
# Debian's packages (python3 and venv included), chaosproxy is pip-installed into it from
# this repository, it is imported into podman, and the service's compose command runs in it
# (runc, cgroupfs, host networking, explicit nofile/nproc limits: podman's defaults, and even
# the host's own hard limits, are refused by runc here), answering /health and one tool call.
#
#   sudo bash scripts/container_smoke.sh [ROOTFS_DIR]     # root: debootstrap, chroot, podman
#
# Not part of scripts/test.sh or CI. Needs: debootstrap, podman, runc, curl, network to
# Debian's mirror and PyPI. Nothing is left running; the image stays (podman rmi to drop).
set -euo pipefail
cd "$(dirname "$0")/.."

rootfs=${1:-/tmp/chaosproxy-rootfs}
image=localhost/chaosproxy-rootfs:smoke
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ ! -x "$rootfs/usr/bin/python3" ]; then
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$rootfs" "$mirror"
fi

# chaosproxy from this repository (the working tree's committed state), into /opt/chaosproxy.
rm -rf "$rootfs/src" && mkdir -p "$rootfs/src"
git archive HEAD pyproject.toml setup.py README.md chaosproxy domains agents profiles \
  | tar -x -C "$rootfs/src"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# The host's CA bundle, in case this network reaches PyPI through a TLS-inspecting proxy.
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
chroot "$rootfs" /bin/sh -c \
  'python3 -m venv /opt/chaosproxy && /opt/chaosproxy/bin/pip install -q /src && rm -rf /src'
chroot "$rootfs" /bin/sh -c 'id chaos >/dev/null 2>&1 || useradd --uid 10001 chaos'

tar -C "$rootfs" -c . | podman import --change 'USER chaos' - "$image" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
name=chaosproxy-smoke-$$
podman --runtime runc --cgroup-manager cgroupfs run -d --rm --name "$name" --network host \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 -e CHAOSPROXY_ORACLE_TOKEN=smoke \
  "$image" /opt/chaosproxy/bin/chaosproxy serve travel --host 127.0.0.1 --port "$port" >/dev/null
trap 'podman --runtime runc --cgroup-manager cgroupfs stop -t 5 "$name" >/dev/null 2>&1 || true' EXIT

for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.5
done
echo "health: $(curl -fsS "http://127.0.0.1:$port/health")"
echo "user:   $(podman --runtime runc --cgroup-manager cgroupfs exec "$name" id -un)"
curl -fsS -X POST "http://127.0.0.1:$port/tools/search_flights" \
  -H 'Content-Type: application/json' -H 'X-Chaos-Episode: smoke' \
  -d '{"origin": "SFO", "dest": "JFK", "date": "2026-03-10"}' \
  | python3 -c 'import json, sys; reply = json.load(sys.stdin); print("tool call: flights found:", reply["total"])'
echo "container smoke test passed"
