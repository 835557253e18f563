#!/usr/bin/env bash
# Frugal worker startup script: a TEMPLATE for cloud-init user data (AWS) or a GCE
# startup-script, rendered by config/providers/render-startup and run as root at boot.
# Each placeholder (a NAME between two at-signs, only in the assignments below) becomes one
# bash word, the value quoted with printf %q: the exec provider's FRUGAL_* variables, the
# checkpoint root (may be empty) and the interruption notice URL and format (empty: none).
# To change the script, copy it and set WORKER_STARTUP_TEMPLATE in the pool's env.
# It assumes the machine image already holds frugal-worker (on PATH or in /usr/local/bin),
# frugal-keeper beside it, and the NVIDIA driver. It writes the join token to a root-only file, and a systemd unit
# that runs the worker as root (Restart=on-failure), so that jobs run under uids of their own
# (decision 0019). Nothing here prints the token.
set -euo pipefail
url=@FRUGAL_URL@
pool=@FRUGAL_POOL@
node=@FRUGAL_NODE@
gpus=@FRUGAL_NODE_GPUS@
checkpoint_root=@CHECKPOINT_ROOT@
notice_url=@NOTICE_URL@
notice_format=@NOTICE_FORMAT@
token=@FRUGAL_JOIN_TOKEN@
# Jobs must not read this script (it holds the token) from the metadata service: only root
# (the worker, which polls the interruption notice) may reach 169.254.169.254. Set to 0 if
# jobs need instance credentials from it, knowing any job can then read the join token.
block_metadata_for_jobs=1

[[ $node != @*@ ]] || { echo "worker-startup.sh is a template: render it with render-startup" >&2; exit 1; }
worker=$(command -v frugal-worker || echo /usr/local/bin/frugal-worker)
[[ -x $worker ]] || { echo "frugal-worker is not in this machine image" >&2; exit 1; }
[[ -x $(dirname "$worker")/frugal-keeper ]] ||
  { echo "frugal-keeper is not beside $worker in this machine image" >&2; exit 1; }

if ((block_metadata_for_jobs)) && command -v iptables >/dev/null; then
  rule=(OUTPUT -d 169.254.169.254/32 -m owner ! --uid-owner 0 -j REJECT)
  iptables -C "${rule[@]}" 2>/dev/null || iptables -I "${rule[@]}"
elif ((block_metadata_for_jobs)); then
  echo "warning: no iptables: jobs can read this script from the metadata service" >&2
fi
# Jobs run with this user's group, each under a uid of its own (as scripts/setup does).
id frugal-job >/dev/null 2>&1 ||
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin frugal-job

install -d -m 0755 /etc/frugal
(umask 077 && printf '%s\n' "$token" >/etc/frugal/join-token)
unset token
args=(--url "$url" --pool "$pool" --node "$node" --gpus "$gpus" --work-dir /var/lib/frugal-worker)
[[ -z $checkpoint_root ]] || args+=(--checkpoint-root "$checkpoint_root")
[[ -z $notice_url ]] || args+=(--notice-url "$notice_url" --notice-format "$notice_format")
# A multi-node gang's peers reach rank 0 at this address: the primary private IP.
addr=$(hostname -I 2>/dev/null | awk '{print $1}')
[[ -z $addr ]] || args+=(--advertise-address "$addr")
# The worker reads its token from FRUGAL_WORKER_TOKEN (flags show in ps).
cat >/etc/frugal/start-worker <<'START'
#!/usr/bin/env bash
# Written by the Frugal startup script; run by frugal-worker.service.
FRUGAL_WORKER_TOKEN=$(</etc/frugal/join-token)
export FRUGAL_WORKER_TOKEN
START
{ printf 'exec'; printf ' %q' "$worker" "${args[@]}"; echo; } >>/etc/frugal/start-worker
chmod 0700 /etc/frugal/start-worker

cat >/etc/systemd/system/frugal-worker.service <<'UNIT'
[Unit]
Description=Frugal worker: joins the scheduler and runs its jobs
Wants=network-online.target
After=network-online.target
StartLimitIntervalSec=0

[Service]
ExecStart=/etc/frugal/start-worker
Restart=on-failure
RestartSec=10
# SIGTERM to the worker only: it stops its jobs itself (reported preempted), then exits.
KillMode=mixed
TimeoutStopSec=90

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now frugal-worker.service
