#!/usr/bin/env bash
# rootfs.sh DIR LIMITBENCH: writes DIR/rootfs, the root file system host.Dockerfile copies into
# an image FROM scratch, from this machine's files: LIMITBENCH (a static build: CGO_ENABLED=0) at
# /usr/local/bin/limitbench, redis-server and redis-sentinel from PATH at /usr/bin, every library
# ldd lists for them at the path it names, /etc/passwd and /etc/group with root and the user
# limitbench (uid and gid 10001), the CA certificates, a writable /tmp and /work (host.Dockerfile
# gives it to limitbench). Every file is a real copy (cp -L), never a symlink into this machine.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: rootfs.sh DIR LIMITBENCH" >&2
  exit 2
fi
dir=$1 bin=$2
uid=10001
root=$dir/rootfs
certs=/etc/ssl/certs/ca-certificates.crt

for tool in redis-server redis-sentinel ldd; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "rootfs.sh: $tool is not on PATH (Debian: apt-get install redis-server redis-sentinel)" >&2
    exit 2
  fi
done
if [ ! -f "$certs" ]; then
  echo "rootfs.sh: no $certs (Debian: apt-get install ca-certificates)" >&2
  exit 2
fi
if ldd "$bin" >/dev/null 2>&1; then
  echo "rootfs.sh: $bin is dynamically linked; build it with CGO_ENABLED=0" >&2
  exit 2
fi

rm -rf "$root"
mkdir -p "$root"/{usr/local/bin,usr/bin,etc/ssl/certs,tmp,work}
chmod 1777 "$root/tmp"
cp -L "$bin" "$root/usr/local/bin/limitbench"
server=$(command -v redis-server)
cp -L "$server" "$root/usr/bin/redis-server"
cp -L "$(command -v redis-sentinel)" "$root/usr/bin/redis-sentinel"
# "libx.so.1 => /lib/x/libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)": the
# libraries of both binaries (one file on Debian, redis-sentinel being redis-server).
ldd "$server" "$(command -v redis-sentinel)" | sed -nE 's@^[[:space:]]*(.*=>[[:space:]]*)?(/[^[:space:]]+)[[:space:]]+\(0x[0-9a-f]+\)$@\2@p' |
  sort -u | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
cp -L "$certs" "$root$certs"
cat >"$root/etc/passwd" <<PASSWD
root:x:0:0:root:/root:/sbin/nologin
limitbench:x:$uid:$uid:limitbench:/work:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
PASSWD
cat >"$root/etc/group" <<GROUP
root:x:0:
limitbench:x:$uid:
nogroup:x:65534:
GROUP
chmod 0755 "$root/work" # owned by limitbench in the image: host.Dockerfile copies it --chown
