#!/usr/bin/env bash
# The soak under faults: our TCP transport (net::SocketTransport, driven as NCCL's proxy drives
# it) between two network namespaces joined by a veth pair, while faults hit it on a schedule.
#   tests/soak/run.sh [--seconds N] [--seed S] [--bin PATH] [--keep-logs]
#
# Layout: 4 process pairs (A<i> in one namespace, B<i> in the other), each pair holding 4
# communicators (a send and a receive comm each way), 16 in all; each pair runs the transport
# with other settings (defaults; no data streams; 4 streams of 128K chunks on 2 helper threads;
# 1 stream, no eager messages). Every step of every direction is a grouped receive (irecv of 1
# to 8 tagged buffers, a little larger than their messages) and the matching tagged sends in a
# shuffled order, of 0 to 16 MiB, all derived from (seed, communicator, epoch, direction, step):
# the receiver checks every byte, the reported sizes, and that the slack stayed untouched.
# Faults, one at a time, in rounds of all five kinds in an order of the seed's: nftables drops
# every packet of namespace A for 2 s; the link goes down (1 s to timeout + 1 s) and up; one
# process is killed (SIGKILL) and restarted; a communicator is re-created while strangers flood
# its new listener, or while a peer with the wrong secret connects to it. After each: what broke
# must have failed within NCCL_PILOT_SOCKET_TIMEOUT_MS (3000 here, + 750 ms) of the fault (or of
# when what it waited for was sent), the far end of a connection within a timeout of the near end;
# nothing may hang; the communicators the fault did not touch keep moving (through a kill,
# before the victim restarts); every broken one is re-established (new listen/connect) and
# moves; and every process is back to its descriptors (exactly) and
# memory (within 2 MiB). The seed is printed first; --seed replays the same schedule and data.
# The last line: soak: T transfers, B bytes verified, F faults, 0 corrupted, 0 hung, max detect
# D ms, fds X->Y, rss X->Y MiB. Exits 0 only when every check held and every kind was
# injected; 77 (a skip) where namespaces cannot be made (as tests/net/netns_test skips), or
# where ip or nft is missing outside CI.
# Everything it creates (namespaces, veth, nftables tables, processes) goes on every way out.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=300
seed=
bin=$root/build/bin/pilot_soak
keep=0
while (($# > 0)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --keep-logs) keep=1; shift ;;
    *) echo "usage: $0 [--seconds N] [--seed S] [--bin PATH] [--keep-logs]" >&2; exit 2 ;;
  esac
done

skip() {
  echo "soak: skipped: $1"
  exit 77
}

[[ -x $bin ]] || { echo "soak: no $bin (build the pilot_soak target)" >&2; exit 2; }
for tool in ip nft; do
  if ! command -v "$tool" >/dev/null; then
    # CI installs both (tools/install-deps.sh): there a missing one is a broken set-up.
    [[ ${CI:-} == true || ${CI:-} == 1 ]] && { echo "soak: no '$tool' command" >&2; exit 1; }
    skip "no '$tool' command (tools/install-deps.sh installs it)"
  fi
done

id=$$
ns_a=pilot-soak-a-$id
ns_b=pilot-soak-b-$id
if_a=psa$id
if_b=psb$id
logs=$(mktemp -d /tmp/pilot-soak-XXXXXX)
coordinator=

cleanup() {
  local status=$?
  if [[ -n $coordinator ]]; then
    kill "$coordinator" 2>/dev/null || true  # its processes die with it (PR_SET_PDEATHSIG)
    wait "$coordinator" 2>/dev/null || true
  fi
  # Deleting a namespace takes its veth end (and so the pair) and its nftables tables along.
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  # The summary stays the last line: the first line named the log folder already.
  if ((keep == 0 && (status == 0 || status == 77))); then rm -rf "$logs"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! ip netns add "$ns_a" 2>/dev/null; then
  skip "cannot create network namespaces here (run as root or with CAP_SYS_ADMIN)"
fi
ip netns add "$ns_b"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b"
ip -n "$ns_a" addr add 10.98.0.1/24 dev "$if_a"
ip -n "$ns_b" addr add 10.98.0.2/24 dev "$if_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$if_a" up
ip -n "$ns_b" link set "$if_b" up
# Carrier on a new veth pair comes asynchronously (link watch); until then the interface is not
# RUNNING and the transport would not use it.
for _ in $(seq 100); do
  if ip -n "$ns_a" -o link show dev "$if_a" | grep -q LOWER_UP &&
    ip -n "$ns_b" -o link show dev "$if_b" | grep -q LOWER_UP; then
    break
  fi
  sleep 0.1
done

args=(run --seconds "$seconds" --ns-a "$ns_a" --ns-b "$ns_b" --if-a "$if_a" --if-b "$if_b"
  --log-dir "$logs")
[[ -n $seed ]] && args+=(--seed "$seed")
"$bin" "${args[@]}" &
coordinator=$!
status=0
wait "$coordinator" || status=$?
coordinator=  # reaped: its pid may be anyone's now
(exit "$status")  # the script's status, with which the EXIT trap runs
