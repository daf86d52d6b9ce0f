#!/usr/bin/env bash
# Build the code-sandbox base image from local files, once. Idempotent: exits at once if the image exists
# at the current image version (its failforge.sandbox.image-version label); an older one is rebuilt.
#
# Nothing can be pulled from an image registry here, so the image is a Debian bookworm minbase root
# filesystem made by debootstrap from the machine's configured Debian mirror, plus python3, imported
# with `docker import`. Every uid of the reserved sandbox range (each container runs as one of them)
# is named "sandbox" in /etc/passwd and /etc/group, so `ls -l`, `whoami` and `id` print the same name
# whichever uid a run happened to lease. Pass --force to rebuild. Environment:
#   FAILFORGE_SANDBOX_IMAGE  image tag (default failforge-sandbox:bookworm)
#   FAILFORGE_DEBIAN_MIRROR  mirror URL (default: the first Debian mirror in /etc/apt/sources.list*)
#   FAILFORGE_SANDBOX_UIDS   BASE:COUNT of the reserved uid range (default 0x70000000:512, as in failforge)
#   FAILFORGE_SANDBOX_EXTRA  comma-separated Debian packages added to python3 (the DA-Bench image:
#                            FAILFORGE_SANDBOX_IMAGE=failforge-sandbox-data:bookworm with python3-pandas,... ;
#                            scripts/install_sandbox.sh --data builds it)
set -euo pipefail
IMAGE="${FAILFORGE_SANDBOX_IMAGE:-failforge-sandbox:bookworm}"
# Bump when the image contents change; the sandbox records it, so a seed says which image it ran on.
IMAGE_VERSION=2
UIDS="${FAILFORGE_SANDBOX_UIDS:-0x70000000:512}"
EXTRA="${FAILFORGE_SANDBOX_EXTRA:-}"

have="$(docker image inspect -f '{{ index .Config.Labels "failforge.sandbox.image-version" }}' "$IMAGE" 2>/dev/null || true)"
if [ "${1:-}" != "--force" ] && [ "$have" = "$IMAGE_VERSION" ]; then
  echo "failforge: sandbox image $IMAGE (version $IMAGE_VERSION) already present" >&2
  exit 0
fi
[ -z "$have" ] || echo "failforge: sandbox image $IMAGE is version $have; building version $IMAGE_VERSION" >&2
command -v debootstrap >/dev/null || { echo "failforge: debootstrap is missing: apt-get install debootstrap (or run scripts/install_sandbox.sh)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "failforge: the docker engine is not answering: start dockerd (scripts/install_sandbox.sh does)" >&2; exit 1; }

mirror="${FAILFORGE_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # deb822 (URIs: ...) and one-line (deb URL suite ...) sources; the main archive, not -security.
  mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | sed -nE 's/^URIs:[[:space:]]*//p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
    | tr ' ' '\n' | grep -E '/debian/?$' | grep -v security | head -n1 || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

rootfs="$(mktemp -d /var/tmp/failforge-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
echo "failforge: debootstrap bookworm (minbase + python3) from $mirror into $rootfs ..." >&2
debootstrap --variant=minbase --include="python3${EXTRA:+,$EXTRA}" bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
  || { tail -n 30 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
mkdir -p "$rootfs/workspace"
chmod 1777 "$rootfs/workspace"
uid_base=$((${UIDS%%:*})); uid_count=$((${UIDS##*:}))
awk -v b="$uid_base" -v c="$uid_count" 'BEGIN { for (i = 0; i < c; i++) printf "sandbox:x:%d:%d:failforge sandbox:/tmp:/usr/sbin/nologin\n", b + i, b + i }' >> "$rootfs/etc/passwd"
awk -v b="$uid_base" -v c="$uid_count" 'BEGIN { for (i = 0; i < c; i++) printf "sandbox:x:%d:\n", b + i }' >> "$rootfs/etc/group"
echo "failforge: importing $IMAGE ..." >&2
tar --numeric-owner -C "$rootfs" -c . | docker import \
  --change 'WORKDIR /workspace' \
  --change 'USER 65534:65534' \
  --change 'ENV LANG=C.UTF-8 TZ=UTC PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0' \
  --change "LABEL failforge.sandbox.image-version=$IMAGE_VERSION" \
  --change 'CMD ["/bin/sh"]' \
  - "$IMAGE" >/dev/null
docker run --rm --network none "$IMAGE" python3 -c 'import sys; print("failforge: image python", sys.version.split()[0])' >&2
