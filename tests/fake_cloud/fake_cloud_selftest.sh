#!/usr/bin/env bash
# Self-test of tests/fake_cloud/fake-cloud, without a scheduler: a stand-in "worker" (a small
# script written here) records its arguments and token and sleeps. Checks the exec
# provider's contract (create, destroy, list), the pool behaviour files and the test verbs
# (reclaim, leak, bill, instances, alive). Takes about 10 s. Exit 0 when every check passes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FC=$here/fake-cloud
T=$(mktemp -d "${TMPDIR:-/tmp}/fake-cloud-selftest.XXXXXX")
D=$T/cloud
export FAKE_CLOUD_DIR=$D

cleanup() {
  # Whatever a failed check left running: destroyed without the grace period.
  if [[ -d $D/instances ]]; then
    local id
    for id in $("$FC" alive 2>/dev/null || true); do
      FAKE_CLOUD_DESTROY_WAIT_S=0 "$FC" destroy "$id" >/dev/null 2>&1 || true
    done
  fi
  rm -rf "$T"
}
trap cleanup EXIT

checks=0
fail() {
  echo "FAIL: $*" >&2
  echo "--- fake-cloud instances:" >&2
  "$FC" instances >&2 || true
  exit 1
}
ok() { checks=$((checks + 1)); }
expect_eq() {  # WHAT GOT WANT
  [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
  ok
}
# Polls COMMAND... every 0.05 s for up to SECONDS.
wait_for() {  # SECONDS COMMAND...
  local end=$((SECONDS + $1 + 1))
  shift
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.05
  done
}
ms() { echo $(($(date +%s%N) / 1000000)); }

# Runs fake-cloud; stdout goes to our stdout and (of the last call) $T/out, stderr to
# $T/err; both are kept in a transcript, searched for the token at the end. Returns
# fake-cloud's exit status. Safe to run concurrently.
fc() {
  local rc=0 o="$T/out.$BASHPID" e="$T/err.$BASHPID"
  "$FC" "$@" >"$o" 2>"$e" || rc=$?
  cat "$o" "$e" >>"$T/transcript"
  cat "$o"
  mv -f "$o" "$T/out"
  mv -f "$e" "$T/err"
  return "$rc"
}
rc_of() {  # COMMAND... -> prints its exit status
  local rc=0
  "$@" >/dev/null || rc=$?
  echo "$rc"
}
state_of() { cat "$D/instances/$1/state"; }
has_line() { [[ $'\n'$1$'\n' == *$'\n'"$2"$'\n'* ]]; }  # TEXT LINE
in_list() { has_line "$("$FC" list "$1")" "$2"; }            # POOL "ID NODE"
is_alive() { has_line "$("$FC" alive)" "$1"; }
not_alive() { ! is_alive "$1"; }
pid_dead() { ! kill -0 "$1" 2>/dev/null || [[ $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]]; }
count_instances() { "$FC" instances | wc -l; }

# The stand-in worker. Pool "stubborn": ignores SIGTERM and starts a "job" in its own
# process group of the same session (as frugal-worker's jobs are).
WORKER=$T/stand-in-worker
cat >"$WORKER" <<EOF
#!/usr/bin/env bash
work= pool=
args=("\$@")
for ((i = 0; i < \$#; i++)); do
  [[ \${args[i]} == --work-dir ]] && work=\${args[i+1]}
  [[ \${args[i]} == --pool ]] && pool=\${args[i+1]}
done
printf '%s\n' "\$@" >"\$work/args"
printf '%s' "\${FRUGAL_WORKER_TOKEN-<unset>}" >"\$work/token"
printf '%s' "\${FRUGAL_JOIN_TOKEN-<unset>}" >"\$work/join_token"
echo \$\$ >"\$work/worker_pid"
if [[ \$pool == stubborn ]]; then
  trap '' TERM
  set -m
  sleep 300 &
  echo \$! >"\$work/job_pid"
  set +m
fi
exec sleep 300
EOF
chmod +x "$WORKER"

TOKEN="join-$RANDOM$RANDOM-do-not-print"
export FAKE_CLOUD_WORKER_BIN=$WORKER FRUGAL_URL=http://127.0.0.1:1 FRUGAL_JOIN_TOKEN=$TOKEN
export FRUGAL_NODE_GPUS=2 FRUGAL_GPU_TYPE=h100 FRUGAL_GPU_MEM_GB=80 FRUGAL_CAPACITY=spot
export FRUGAL_CHECKPOINT_ROOT=
mkdir -p "$D/pools"/{p1,so,bad,nj,slow,stubborn,dear,par}
echo 1 >"$D/pools/p1/boot_delay_s"
echo 3 >"$D/pools/slow/boot_delay_s"
echo 3600 >"$D/pools/dear/price_per_hour"

echo "== errors"
rc=0
env -u FAKE_CLOUD_DIR "$FC" list p1 >/dev/null 2>"$T/err" || rc=$?
if [[ $rc == 0 ]] || ! grep -q FAKE_CLOUD_DIR "$T/err"; then
  fail "no FAKE_CLOUD_DIR: rc $rc, $(cat "$T/err")"
fi
ok
expect_eq "unknown verb exit" "$(rc_of fc frobnicate)" 2
expect_eq "create without FAKE_CLOUD_WORKER_BIN" \
  "$(FAKE_CLOUD_WORKER_BIN='' rc_of fc create p1 n0)" 1
expect_eq "instances after failed creates" "$(count_instances)" 0

echo "== create: prompt, detached, the contract's environment only (no PATH)"
t0=$(ms)
rc=0
# As the scheduler runs it: a clean environment, and it reads stdout (and here stderr) to EOF.
env -i FAKE_CLOUD_DIR="$D" FAKE_CLOUD_WORKER_BIN="$WORKER" FRUGAL_POOL=p1 FRUGAL_NODE=n1 \
  FRUGAL_JOIN_TOKEN="$TOKEN" FRUGAL_URL="$FRUGAL_URL" FRUGAL_NODE_GPUS=2 FRUGAL_GPU_TYPE=h100 \
  FRUGAL_GPU_MEM_GB=80 FRUGAL_CAPACITY=spot FRUGAL_CHECKPOINT_ROOT= \
  "$FC" create p1 n1 2>&1 | timeout 5 cat >"$T/create_out" || rc=$?
elapsed=$(($(ms) - t0))
cat "$T/create_out" >>"$T/transcript"
[[ $rc == 0 ]] || fail "create exit/EOF: rc $rc (124: its output pipe stayed open): $(cat "$T/create_out")"
((elapsed < 2000)) || fail "create took ${elapsed} ms with boot_delay_s=1 (want < 2 s)"
ok
A=$(awk 'NF { print; exit }' "$T/create_out")
[[ $A =~ ^i-[0-9]{6}$ ]] || fail "create printed '$A', want an instance id"
ok
st=$(state_of "$A")
[[ $st == booting || ($st == running && elapsed -gt 900) ]] ||
  fail "state right after create: $st (after ${elapsed} ms, boot_delay_s=1)"
ok
in_list p1 "$A n1" || fail "list p1 lacks '$A n1': $("$FC" list p1)"
ok
echo "   create returned $A in ${elapsed} ms"

# A second instance while the first boots, with a checkpoint root.
B=$(FRUGAL_CHECKPOINT_ROOT=$T/ckpt fc create p1 n2)

echo "== the worker's arguments and token"
W=$D/instances/$A/work
wait_for 4 test -s "$W/worker_pid" || fail "the stand-in worker of $A did not start"
ok
expect_eq "state after the boot" "$(state_of "$A")" running
printf '%s\n' --url "$FRUGAL_URL" --pool p1 --node n1 --gpus 2 --gpu-type h100 --gpu-mem-gb 80 \
  --work-dir "$W" --notice-file "$D/instances/$A/notice" --grace 5s >"$T/want_args"
diff "$T/want_args" "$W/args" >&2 || fail "worker arguments differ (above: want, got)"
ok
expect_eq "FRUGAL_WORKER_TOKEN" "$(cat "$W/token")" "$TOKEN"
expect_eq "FRUGAL_JOIN_TOKEN in the worker" "$(cat "$W/join_token")" "<unset>"
! grep -qF -- "$TOKEN" "$W/args" || fail "the token is on the worker's argv"
ok
expect_eq "pid file is the worker (exec'd, session leader)" \
  "$(cat "$D/instances/$A/pid")" "$(cat "$W/worker_pid")"
expect_eq "worker is its session's leader" \
  "$(ps -o sid= -p "$(cat "$W/worker_pid")" | tr -d ' ')" "$(cat "$W/worker_pid")"
for f in pool node gpus price_per_hour created_at state pid; do
  [[ -s $D/instances/$A/$f ]] || fail "instances/$A/$f missing"
done
ok
expect_eq "pool file" "$(cat "$D/instances/$A/pool")" p1
expect_eq "gpus file" "$(cat "$D/instances/$A/gpus")" 2
expect_eq "price_per_hour default" "$(cat "$D/instances/$A/price_per_hour")" 1.0
[[ $(cat "$D/instances/$A/created_at") =~ ^[0-9]+\.[0-9]+$ ]] || fail "created_at not epoch.frac"
ok

echo "== checkpoint root"
wait_for 4 test -s "$D/instances/$B/work/args" || fail "worker of $B did not start"
expect_eq "checkpoint root flag" "$(tail -n 2 "$D/instances/$B/work/args" | paste -sd ' ')" \
  "--checkpoint-root $T/ckpt"
! grep -q -- --checkpoint-root "$W/args" || fail "--checkpoint-root given with an empty root"
ok

echo "== concurrent creates"
for i in 1 2 3 4 5 6; do fc create par "c$i" >"$T/par$i" 2>&1 & done
wait
ids=$(cat "$T"/par? | sort -u | grep -c '^i-[0-9]\{6\}$' || true)
expect_eq "distinct ids from 6 concurrent creates" "$ids" 6
expect_eq "listed in pool par" "$("$FC" list par | wc -l)" 6

echo "== stockout and fail"
n=$(count_instances)
touch "$D/pools/so/stockout"
expect_eq "stockout exit" "$(rc_of fc create so s1)" 75
[[ -s $T/err ]] || fail "stockout printed no message on stderr"
ok
[[ ! -s $T/out ]] || fail "stockout printed on stdout: $(cat "$T/out")"
ok
touch "$D/pools/bad/fail"
expect_eq "fail exit" "$(rc_of fc create bad b1)" 1
expect_eq "instances after stockout and fail" "$(count_instances)" "$n"

echo "== never_join (3 of 5 concurrent creates)"
echo 3 >"$D/pools/nj/never_join"
for i in 1 2 3 4 5; do fc create nj "j$i" >"$T/nj$i" 2>&1 & done
wait
nj_ids=$(cat "$T"/nj?)
expect_eq "never_join left" "$(cat "$D/pools/nj/never_join")" 0
never=()
for id in $nj_ids; do [[ $(state_of "$id") == never_join ]] && never+=("$id"); done
expect_eq "never_join instances" "${#never[@]}" 3
expect_eq "nj instances listed" "$("$FC" list nj | wc -l)" 5
sleep 0.3
for id in "${never[@]}"; do
  [[ ! -e $D/instances/$id/work/args && ! -e $D/instances/$id/pid ]] ||
    fail "never_join instance $id started something"
  not_alive "$id" || fail "never_join instance $id is alive"
done
ok
nj_bill=$("$FC" bill nj | awk -v id="${never[0]}" '$1 == id { print $5 }')
awk -v d="$nj_bill" 'BEGIN { exit !(d > 0) }' || fail "never_join instance bills $nj_bill"
ok

echo "== reclaim"
WPID=$(cat "$W/worker_pid")
fc reclaim "$A" 2 >/dev/null &
rpid=$!
wait_for 3 test -e "$D/instances/$A/notice" || fail "reclaim wrote no notice"
kill -0 "$WPID" 2>/dev/null || fail "the worker died before the notice period ended"
ok
in_list p1 "$A n1" || fail "$A left list during its notice period"
ok
wait "$rpid" || fail "reclaim exited non-zero"
ok
pid_dead "$WPID" || fail "worker $WPID still runs after the reclaim"
ok
expect_eq "state after reclaim" "$(state_of "$A")" reclaimed
! in_list p1 "$A n1" || fail "$A still listed after the reclaim"
ok
[[ -s $D/instances/$A/ended_at ]] || fail "no ended_at after the reclaim"
ok
expect_eq "reclaim of a gone instance" "$(rc_of fc reclaim "$A" 0)" 0
expect_eq "reclaim of an unknown instance" "$(rc_of fc reclaim i-999999 0)" 1

echo "== destroy"
BPID=$(cat "$D/instances/$B/work/worker_pid")
expect_eq "destroy exit" "$(rc_of fc destroy "$B")" 0
pid_dead "$BPID" || fail "worker $BPID of $B survived destroy"
ok
expect_eq "state after destroy" "$(state_of "$B")" terminated
! in_list p1 "$B n2" || fail "$B still listed after destroy"
ok
ended=$(cat "$D/instances/$B/ended_at")
expect_eq "destroy again" "$(rc_of fc destroy "$B")" 0
expect_eq "ended_at kept by a second destroy" "$(cat "$D/instances/$B/ended_at")" "$ended"
expect_eq "destroy of a never created id" "$(rc_of fc destroy i-999999)" 0
expect_eq "destroy of a path" "$(rc_of fc destroy ../pools)" 0
[[ -d $D/pools/p1 && ! -e $D/pools/ended_at ]] || fail "destroy ../pools touched the pools"
ok
expect_eq "destroy of a reclaimed instance" "$(rc_of fc destroy "$A")" 0
expect_eq "reclaimed stays reclaimed" "$(state_of "$A")" reclaimed

echo "== destroy during the boot"
S=$(fc create slow s1)
expect_eq "slow state" "$(state_of "$S")" booting
is_alive "$S" || fail "booting instance $S is not alive"
ok
fc destroy "$S" >/dev/null
expect_eq "destroyed while booting" "$(state_of "$S")" terminated
not_alive "$S" || fail "$S still alive after destroy during boot"
ok

echo "== destroy of a worker that ignores SIGTERM, with a job in its own process group"
X=$(fc create stubborn x1)
XW=$D/instances/$X/work
wait_for 4 test -s "$XW/job_pid" || fail "stubborn worker did not start its job"
XPID=$(cat "$XW/worker_pid") JPID=$(cat "$XW/job_pid")
[[ $(ps -o pgid= -p "$JPID" | tr -d ' ') != "$XPID" ]] || fail "the job is not in its own group"
ok
t0=$(ms)
FAKE_CLOUD_DESTROY_WAIT_S=1 fc destroy "$X" >/dev/null
elapsed=$(($(ms) - t0))
((elapsed >= 900 && elapsed < 5000)) || fail "stubborn destroy took ${elapsed} ms (want about 1 s)"
ok
pid_dead "$XPID" || fail "stubborn worker survived"
pid_dead "$JPID" || fail "the job of the stubborn worker survived"
ok

echo "== leak"
L=$(fc leak p1 stray)
[[ $L =~ ^i-[0-9]{6}$ ]] || fail "leak printed '$L'"
ok
in_list p1 "$L stray" || fail "leak $L not listed: $("$FC" list p1)"
ok
expect_eq "leak state" "$(state_of "$L")" leaked
not_alive "$L" || fail "leak $L has a process"
ok

echo "== bill"
sum_ok() {  # BILL: the lines' dollars add up to the total
  awk '$1 == "total" { t = $2; n++; next } { s += $5; lines++ }
       END { exit !(n == 1 && sprintf("%.6f", s) == t) }' <<<"$1"
}
b1=$(fc bill)
sum_ok "$b1" || fail "bill lines do not add up to the total:"$'\n'"$b1"
ok
expect_eq "bill lines" "$(grep -vc '^total ' <<<"$b1")" "$(count_instances)"
expect_eq "bill's last line" "$(tail -n 1 <<<"$b1" | grep -c '^total [0-9]*\.[0-9]\{6\}$')" 1
p1a=$(fc bill p1)
awk '$1 != "total" && $2 != "p1" { exit 1 }' <<<"$p1a" || fail "bill p1 shows other pools"
ok
sleep 0.3
p1b=$(fc bill p1)
awk -v a="$(tail -n 1 <<<"$p1a" | cut -d' ' -f2)" -v b="$(tail -n 1 <<<"$p1b" | cut -d' ' -f2)" \
  'BEGIN { exit !(b > a) }' || fail "p1's bill did not grow while $L lives: $p1a / $p1b"
ok
secs() { awk -v id="$2" '$1 == id { print $4 }' <<<"$1"; }
expect_eq "an ended instance's seconds stay" "$(secs "$p1b" "$B")" "$(secs "$p1a" "$B")"
D1=$(fc leak dear d1)
sleep 0.5
db=$(fc bill dear)
awk -v id="$D1" '$1 == id { s = $4; d = $5 } END { exit !(s >= 0.5 && d - s < 0.002 && s - d < 0.002) }' \
  <<<"$db" || fail "at \$3600/h dollars should equal seconds: $db"
ok

echo "== cleanup: destroy everything; nothing alive"
while read -r id _ _ st; do
  case $st in terminated | reclaimed) ;; *) fc destroy "$id" >/dev/null & ;; esac
done < <("$FC" instances)
wait
expect_eq "instances not ended" "$("$FC" instances | awk '$4 != "terminated" && $4 != "reclaimed"')" ""
for p in p1 nj par; do
  expect_eq "list $p at the end" "$("$FC" list "$p")" ""
done
expect_eq "alive at the end" "$(fc alive)" ""
sum_ok "$(fc bill)" || fail "final bill does not add up"
ok

echo "== the token was never printed or stored by the fake cloud"
! grep -qF -- "$TOKEN" "$T/transcript" || fail "the token appears in fake-cloud's output"
ok
# Only the stand-in's own record (work/token) may hold it.
leaks=$(grep -rlF -- "$TOKEN" "$D" | grep -v '/work/token$' || true)
[[ -z $leaks ]] || fail "the token is in: $leaks"
ok

echo "PASS: fake-cloud self-test, $checks checks"
