#!/usr/bin/env bash
# A real single-node Slurm on localhost for the tests, from Debian 12's slurmctld, slurmd and munge.
#
#   local_slurm.sh start DIR   writes DIR/slurm.conf and a munge key, starts munged, slurmctld and
#                              slurmd with their state, logs and pid files under DIR, and waits
#                              until the node is idle. Then `export SLURM_CONF=DIR/slurm.conf`.
#   local_slurm.sh stop DIR    stops the three daemons.
#
# What a container or a CI machine cannot do is switched off: no cgroups (proctrack/linuxproc,
# task/none), no accounting database, no systemd. The daemons run as the calling user, which is
# root in CI; jobs then run as that user too.
set -euo pipefail

action=${1:?usage: local_slurm.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: local_slurm.sh start|stop DIR}")
user=$(id -un)

stop() {
  for daemon in slurmd slurmctld munged; do
    if [ -f "$dir/$daemon.pid" ]; then
      kill "$(cat "$dir/$daemon.pid")" 2>/dev/null || true
    fi
  done
  for daemon in slurmd slurmctld munged; do
    if [ -f "$dir/$daemon.pid" ]; then
      pid=$(cat "$dir/$daemon.pid")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$daemon.pid"
    fi
  done
}

if [ "$action" = stop ]; then
  stop
  exit 0
fi
[ "$action" = start ] || { echo "usage: local_slurm.sh start|stop DIR" >&2; exit 2; }

for program in munged slurmctld slurmd sbatch sinfo; do
  command -v "$program" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$program" >/dev/null || {
    echo "local_slurm.sh: $program not found; install Debian's slurmctld slurmd munge slurm-client" >&2
    exit 2
  }
done

mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 700 "$dir/munge"
# munged insists on a key only its user can read, in a folder only its user can write.
dd if=/dev/urandom bs=1 count=1024 of="$dir/munge/munge.key" status=none
chmod 400 "$dir/munge/munge.key"

# Free ports, so that a test never meets another Slurm on this machine.
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
ports = []
sockets = []
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); ports.append(s.getsockname()[1]); sockets.append(s)
print(*ports)
PY
)

node=$(hostname -s)
# The node as slurmd sees it (CPUs, memory), so that it is not refused as smaller than declared.
node_line=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$node NodeAddr=127.0.0.1/")

cat > "$dir/slurm.conf" <<CONF
ClusterName=pelabtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=600
KillWait=2
$node_line State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf

munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
       --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
       --seed-file="$dir/munge/munge.seed" --force
slurmctld -i
slurmd
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && { echo "local Slurm up: node $node idle, SLURM_CONF=$dir/slurm.conf"; exit 0; }
  sleep 0.2
done
echo "local_slurm.sh: the node did not become idle (state '${state:-none}'); logs in $dir/log" >&2
tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop
exit 1
