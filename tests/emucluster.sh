#!/usr/bin/env bash
# tests/emucluster.sh — end-to-end test of scripts/emucluster.
#
# Needs root, `ip netns`, tc and Open MPI (mpirun, mpicc); skips (exit 0) with
# a message when any is missing. Brings up 4 hosts at 100 Mbit/s, checks
# status / refusal of a second up / host identity / -x and cwd propagation,
# measures a lone 4 MiB send and incoming / outgoing conflicts with
# tests/programs/emu_pingpong.c, then tears down and checks nothing is left.
# Also checks that an `up` failing midway leaves nothing behind.
#
# Usage: bash tests/emucluster.sh        (exit 0 = pass or skip)
# Environment: EMU_STATE_DIR is honoured (default /run/emucluster).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
EMU=$ROOT/scripts/emucluster
PROGSRC=$HERE/programs/emu_pingpong.c
NHOSTS=4

skip() { echo "SKIP tests/emucluster.sh: $*"; exit 0; }
fail() { echo "FAIL tests/emucluster.sh: $*" >&2; exit 1; }
ok()   { echo "ok   $*"; }

[[ $(id -u) -eq 0 ]] || skip "not root (network namespaces need root)"
command -v ip >/dev/null 2>&1 || skip "'ip' (iproute2) not installed"
command -v tc >/dev/null 2>&1 || skip "'tc' (iproute2) not installed"
if ! ip netns list >/dev/null 2>&1; then skip "'ip netns' is not available"; fi
# probe that namespaces can really be created here (e.g. not in an unprivileged container)
probe=emutest-probe-$$
if ! ip netns add "$probe" 2>/dev/null; then skip "cannot create network namespaces here"; fi
ip netns del "$probe"
command -v mpirun >/dev/null 2>&1 || skip "mpirun (Open MPI) not installed"
command -v mpicc >/dev/null 2>&1 || skip "mpicc (Open MPI) not installed"

if "$EMU" status >/dev/null 2>&1; then
    fail "an emulated cluster is already up; run '$EMU down' first (not touching it)"
fi

TMP=$(mktemp -d)
brought_up=0
cleanup() {
    local rc=$?
    if (( brought_up )); then "$EMU" down >/dev/null 2>&1 || true; fi
    rm -rf "$TMP"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_range() {  # in_range VALUE LO HI
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v + 0 >= lo && v + 0 <= hi) }'
}
nothing_left() {  # assert no namespace / state / /etc/netns entry of ours remains
    local k left
    left=$(ip netns list | awk '{print $1}' | grep -E '^(h[0-9]+|emusw)$' || true)
    [[ -z $left ]] || fail "$1: namespaces left behind: $(echo $left)"
    for (( k=0; k<16; k++ )); do
        [[ ! -e /etc/netns/h$k ]] || fail "$1: /etc/netns/h$k left behind"
    done
    [[ ! -e ${EMU_STATE_DIR:-/run/emucluster} ]] || fail "$1: state dir left behind"
    if grep -q "${EMU_STATE_DIR:-/run/emucluster}" /proc/mounts; then fail "$1: mounts left behind"; fi
    if pgrep -f "scripts/wan-delay" >/dev/null; then fail "$1: the wan-delay forwarder is still running"; fi
}

# ---- a failing `up` cleans up after itself
if EMU_FAIL_AFTER_HOST=1 "$EMU" up 3 >"$TMP/failup.out" 2>&1; then
    brought_up=1
    fail "up with EMU_FAIL_AFTER_HOST=1 succeeded"
fi
nothing_left "after a failed up"
ok "failed up midway leaves nothing behind"

# ---- bad sizes are refused before anything is built, with the option named
for bad in "--burst 100" "--burst x" "--host-queue 10" "--queue -5"; do
    set +e
    # shellcheck disable=SC2086
    "$EMU" up 2 $bad >"$TMP/bad.out" 2>&1
    rc=$?
    set -e
    [[ $rc -eq 1 ]] || fail "up 2 $bad: expected exit 1, got $rc"
    grep -q -- "${bad%% *}" "$TMP/bad.out" || fail "up 2 $bad: message does not name the option: $(cat "$TMP/bad.out")"
    nothing_left "after up 2 $bad"
done
ok "bad --burst, --host-queue and --queue are refused"

# ---- up
brought_up=1
"$EMU" up "$NHOSTS" --rate 100mbit || fail "up $NHOSTS failed"
ok "up $NHOSTS --rate 100mbit"

# ---- status
"$EMU" status >"$TMP/status" || fail "status exited non-zero while up"
cat "$TMP/status"
grep -q 'up' "$TMP/status" || fail "status does not say up"
grep -q '100mbit' "$TMP/status" || fail "status does not show the rate"
for (( k=0; k<NHOSTS; k++ )); do
    grep -qE "h$k +10\.77\.0\.$(( k + 1 ))" "$TMP/status" || fail "status misses h$k and its address"
done
# the switch's ports keep a switch-sized queue, the hosts' side a host's (2 MB); a
# 100 Mbit/s port's bucket is two frames (3028 B, which tc prints as 3025b)
grep -q "queue: 100000 B (hosts' side 2000000 B)   burst: 3028 B" "$TMP/status" || fail "status does not show both queues and the burst"
ip netns exec h1 tc qdisc show dev eth0 | grep -q 'tbf.*burst 3025b lat 160ms' \
    || fail "h1's side is not a 2 MB tbf queue: $(ip netns exec h1 tc qdisc show dev eth0)"
ip netns exec emusw tc qdisc show dev p-h1 | grep -q 'tbf.*burst 3025b lat 7.76ms' \
    || fail "the switch's port to h1 is not a 100,000 B tbf queue: $(ip netns exec emusw tc qdisc show dev p-h1)"
ok "status"

# ---- busy: every core kept busy by a loop reads as busy; a bad argument is refused
loops=()
for _ in $(seq "$(nproc)"); do timeout 3 sh -c 'while :; do :; done' & loops+=($!); done
b=$("$EMU" busy 1)
wait "${loops[@]}" 2>/dev/null || true
[[ $b =~ ^[0-9]+$ ]] && (( b >= 50 && b <= 100 )) || fail "busy printed '$b' while every core ran a busy loop"
if "$EMU" busy soon >/dev/null 2>&1; then fail "busy accepted 'soon' as seconds"; fi
ok "busy"

# ---- hosts
[[ $("$EMU" hosts | tr '\n' ' ') == "h0 h1 h2 h3 " ]] || fail "hosts printed '$("$EMU" hosts | tr '\n' ' ')'"
ok "hosts"

# ---- second up refused
set +e
"$EMU" up 2 >"$TMP/up2.out" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "second up: expected exit 1, got $rc"
grep -qi 'already up' "$TMP/up2.out" || fail "second up: no clear message: $(cat "$TMP/up2.out")"
"$EMU" status >/dev/null || fail "cluster no longer up after refused second up"
ok "second up refused: $(tail -n 1 "$TMP/up2.out")"

# ---- hostname per rank
timeout 120 "$EMU" run -- -np 4 hostname >"$TMP/hostnames" || fail "run -np 4 hostname failed"
got=$(sort "$TMP/hostnames" | tr '\n' ' ')
[[ $got == "h0 h1 h2 h3 " ]] || fail "run -np 4 hostname gave '$got', expected 'h0 h1 h2 h3 '"
ok "run -np 4 hostname -> $got"

# ---- -x variables and working directory reach the ranks
mkdir -p "$TMP/wd"
(cd "$TMP/wd" && EMU_TEST_VAR=hello timeout 120 "$EMU" run -- -np 4 -x EMU_TEST_VAR \
    sh -c 'echo "$(hostname) $EMU_TEST_VAR $(pwd)"') >"$TMP/envcwd" || fail "run with -x failed"
n_ok=$(grep -c " hello $TMP/wd\$" "$TMP/envcwd" || true)
[[ $n_ok -eq 4 ]] || fail "-x / cwd did not reach all ranks: $(cat "$TMP/envcwd")"
ok "-x variable and caller's cwd reach all 4 ranks"

# ---- bandwidth and contention
mpicc -O2 -o "$TMP/emu_pingpong" "$PROGSRC" || fail "mpicc failed on $PROGSRC"
(cd "$TMP" && timeout 300 "$EMU" run -- -np 4 ./emu_pingpong all 4194304 3) >"$TMP/pp" \
    || fail "emu_pingpong failed: $(cat "$TMP/pp")"
cat "$TMP/pp"
val() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/pp"; }
for (( k=0; k<3; k++ )); do
    [[ $(val "rank${k}_host") == "h$k" ]] || fail "rank $k ran on '$(val "rank${k}_host")', expected h$k"
done
mbps=$(val single_mbps)
[[ -n $mbps ]] || fail "no single_mbps in output"
# Physics only (figures vary run to run): the shaper caps the port at 100 Mbit/s, and the
# network carries data at all; sharing a port makes two messages slower than one.
in_range "$mbps" 10 110 || fail "single 4 MiB send: $mbps Mbit/s, expected at most the 100mbit shaping (10..110)"
ok "single 4 MiB send h0->h1: $mbps Mbit/s"
inc=$(val incoming_ratio); inc0=$(val incoming_ratio_r0); inc1=$(val incoming_ratio_r1)
echo "incoming conflict (ranks 0,1 -> rank 2): ratio to lone send r0=$inc0 r1=$inc1, both done at $inc"
in_range "$inc" 1.2 1000 || fail "incoming conflict ratio $inc: two senders into one port not slower than one"
ok "incoming conflict ratio $inc"
out=$(val outgoing_ratio)
echo "outgoing conflict (rank 0 -> ranks 1,2): ratio to lone send to1=$(val outgoing_ratio_to1) to2=$(val outgoing_ratio_to2), both done at $out"
in_range "$out" 1.2 1000 || fail "outgoing conflict ratio $out: two messages out of one port not slower than one"
ok "outgoing conflict ratio $out"

# ---- node-local output directories: PMPI_PREDICT_OUT with %h gives each host its own
# directory; rank 0 gathers the other hosts' spools over MPI and writes the full report.
LIB=$ROOT/target/release/libpmpi_predict.so
[[ -f $LIB ]] || fail "$LIB not built (cargo build --release)"
mpicc -O1 -o "$TMP/basic" "$HERE/programs/basic.c" || fail "mpicc failed on basic.c"
(cd "$TMP" && timeout 300 "$EMU" run -- -np 4 --map-by node -x LD_PRELOAD="$LIB" \
    -x PMPI_PREDICT_OUT="$TMP/nl/%h" -x PMPI_PREDICT_QUIET=1 ./basic) >"$TMP/nl.out" 2>&1 \
    || fail "basic with node-local output failed: $(cat "$TMP/nl.out")"
for (( k=0; k<4; k++ )); do
    [[ -f $TMP/nl/h0/rank-0000$k.json && -f $TMP/nl/h0/rank-0000$k.spool ]] \
        || fail "rank $k's files not gathered into h0's directory: $(ls "$TMP/nl/h0")"
done
for (( k=1; k<4; k++ )); do
    # Rank k, alone on its host, also sampled the host's TCP counters (net-0000k.csv,
    # which stays there: its metadata carries what the report needs).
    [[ $(ls "$TMP/nl/h$k") == "net-0000$k.csv"$'\n'"rank-0000$k.json"$'\n'"rank-0000$k.spool" ]] \
        || fail "h$k's directory holds $(ls "$TMP/nl/h$k" | tr '\n' ' '), expected only rank $k's files"
    cmp -s "$TMP/nl/h$k/rank-0000$k.spool" "$TMP/nl/h0/rank-0000$k.spool" \
        || fail "rank $k's gathered spool differs from its own"
done
ranks=$(awk -F, 'NR > 1 { print $1 }' "$TMP/nl/h0/calls.csv" | sort -u | tr '\n' ' ')
[[ $ranks == "0 1 2 3 " ]] || fail "report on h0 has rows of ranks '$ranks', expected 0 1 2 3"
ok "node-local directories: h0's report holds all 4 ranks"

# ---- down
"$EMU" down || fail "down failed"
brought_up=0
nothing_left "after down"
if "$EMU" status >/dev/null 2>&1; then fail "status exits 0 after down"; fi
ok "down left nothing behind"

# ---- two clusters joined by a slower backbone
brought_up=1
"$EMU" up 4 --rate 100mbit --clusters 2 --wan-rate 20mbit --wan-latency 2ms >/dev/null \
    || fail "up 4 --clusters 2 --wan-latency 2ms failed"
st=$("$EMU" status)
[[ $st == *"clusters: h0..h1 | h2..h3   backbone: 20mbit, one-way latency 2ms"* ]] || fail "status does not show the clusters: $st"
# rank 0 on h0, rank 1 on h2: the lone send crosses the backbone
(cd "$TMP" && timeout 300 "$EMU" run -- -np 4 --host h0,h2,h1,h3 ./emu_pingpong all 1048576 2) >"$TMP/pp2" \
    || fail "emu_pingpong across clusters failed: $(cat "$TMP/pp2")"
wan=$(awk '$1 == "single_mbps" { print $2 }' "$TMP/pp2")
# Physics only: the backbone caps a crossing message at its 20 Mbit/s.
in_range "$wan" 1 22 || fail "send across the backbone: $wan Mbit/s, expected at most the 20mbit shaping (1..22)"
ok "two clusters: a send h0->h2 across the backbone: $wan Mbit/s"
# An 8-byte message and its 1-byte acknowledgement cross the 2 ms delay line twice: no
# such exchange can take less than 4 ms (a lower bound of physics, not a measured figure).
(cd "$TMP" && timeout 120 "$EMU" run -- -np 2 --host h0,h2 ./emu_pingpong single 8 5) >"$TMP/pp3" \
    || fail "emu_pingpong single 8 across clusters failed: $(cat "$TMP/pp3")"
rtt=$(awk '$1 == "single_seconds" { print $2 }' "$TMP/pp3")
in_range "$rtt" 0.0039 1000 || fail "an 8-byte round trip across the 2 ms backbone took $rtt s, expected at least 0.004 s"
ok "two clusters: the backbone delays each way by 2 ms (round trip $rtt s)"
"$EMU" down >/dev/null || fail "down after two clusters failed"
brought_up=0
nothing_left "after two clusters"

# ---- above 100mbit a port's bucket is 250 us of data (31,250 B at 1gbit): smaller than a
# 64 KiB GSO packet, so the shaper paces every frame instead of passing a message that
# fits at once (docs/emucluster.md, "A port's bucket")
brought_up=1
"$EMU" up 2 --rate 1gbit >/dev/null || fail "up 2 --rate 1gbit failed"
st=$("$EMU" status)
[[ $st == *"burst: 31250 B"* ]] || fail "a 1gbit port's bucket is not 31250 B: $st"
ip netns exec emusw tc qdisc show dev p-h1 | grep -qE 'tbf .*rate 1Gbit burst 31[0-9]{3}b' \
    || fail "the switch's port to h1 is not a 1gbit tbf with a 31 kB bucket: $(ip netns exec emusw tc qdisc show dev p-h1)"
"$EMU" down >/dev/null || fail "down after up 2 --rate 1gbit failed"
brought_up=0
nothing_left "after up 2 --rate 1gbit"
ok "a 1gbit port's bucket is 31250 B"

echo "PASS tests/emucluster.sh: single ${mbps} Mbit/s, incoming ratio ${inc}, outgoing ratio ${out}, across clusters ${wan} Mbit/s, round trip ${rtt} s"
