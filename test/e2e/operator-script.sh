#!/usr/bin/env bash
# A network driven the way an operator drives one written for the reference node: only `rbtnode`
# verbs with the reference's flags, no bootstrap call (the nodes find each other by mDNS), readiness
# by polling `getalldid`, success judged by exit codes and balances only.
#
#   operator-script.sh <work dir>
#
# Nine nodes on the default ports (20000 + n, inside the network namespace the caller made):
# nodes 1-7 each host one quorum DID; node 8 hosts alice, node 9 bob. Two quorum lists: alice's
# node uses quorums 1-5, bob's node quorums 3-7. The set-up part (DIDs from one mnemonic, their
# registration, test RBT, quorum set-up, quorum lists) runs twice, as a script run again does; the
# second run must change nothing but the new test RBT. In between and after: transfers both ways
# and a self transfer.
set -uo pipefail

WORK=${1:?usage: operator-script.sh <work dir>}
PW=script-password
MNEMONIC="abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art"
NODES=9
QUORUMS=7
ALICE_NODE=8
BOB_NODE=9
LIST_ALICE="1 2 3 4 5"
LIST_BOB="3 4 5 6 7"
DEADLINE_S=${SCRIPT_DEADLINE_S:-120}

mkdir -p "$WORK"
port() { echo $((20000 + $1)); }
log() { echo "== $*" >&2; }
fail() { echo "FAILED: $*" >&2; exit 1; }

# runs a verb against node $1; fails the script on a non-zero exit or an [ERROR] line (scripts read
# any [ERROR] as a failed call); prints the verb's stdout. Safe in parallel jobs (its own stderr file).
call() {
  local node=$1; shift
  local out rc errf
  errf=$(mktemp "$WORK/stderr.XXXXXX")
  out=$(rbtnode "$@" -port "$(port "$node")" 2>"$errf")
  rc=$?
  if [ $rc -ne 0 ]; then cat "$errf" >&2; fail "rbtnode $* -port $(port "$node") exited $rc"; fi
  if grep -q '\[ERROR\]' "$errf"; then cat "$errf" >&2; fail "rbtnode $* printed [ERROR] on success"; fi
  rm -f "$errf"
  printf '%s' "$out"
}

# polls `rbtnode <verb>` against node $1 until it exits 0, up to the deadline
until_ok() {
  local node=$1; shift
  local end=$((SECONDS + DEADLINE_S))
  until rbtnode "$@" -port "$(port "$node")" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "rbtnode $* -port $(port "$node") did not succeed within ${DEADLINE_S}s"
    sleep 0.3
  done
}

balance() {
  local info
  info=$(call "$1" getaccountinfo -did "$2") || exit 1
  printf '%s\n' "$info" | awk '/^RBT \(free\)/ { print $3 }'
}

expect_balance() {
  local got
  got=$(balance "$1" "$2") || exit 1
  [ "$got" = "$3" ] || fail "balance of $2 on node $1 is $got, expected $3"
  log "balance of $2: $got"
}

quorum_list() {
  local file=$1; shift
  local sep="" out="["
  for q in "$@"; do out="$out$sep{\"type\":2,\"address\":\"${QDID[$q]}\"}"; sep=","; done
  echo "$out]" >"$file"
}

declare -a QDID
ALICE=""
BOB=""

# one node's part of the set-up, run as a background job: its DID (from the mnemonic, so the same
# DID on every run), registered, funded; a quorum node's DID set up as quorum. Writes the DID to a file.
setup_node() {
  local i=$1 did
  did=$(call "$i" createdid -didType 4 -mnemonic "$MNEMONIC" -childPath "$i" -privPWD "$PW" -quorumPWD "$PW") || exit 1
  call "$i" registerdid -did "$did" -privPWD "$PW" >/dev/null || exit 1
  if [ "$i" -le $QUORUMS ]; then
    call "$i" generatetestrbt -did "$did" -numTokens 4 -privPWD "$PW" >/dev/null || exit 1
    call "$i" setupquorum -did "$did" -privPWD "$PW" -quorumPWD "$PW" >/dev/null || exit 1
  else
    # a user DID is funded twice
    call "$i" generatetestrbt -did "$did" -numTokens 2 -privPWD "$PW" >/dev/null || exit 1
    if [ "$i" -eq $ALICE_NODE ]; then call "$i" generatetestrbt -did "$did" -numTokens 2 -privPWD "$PW" >/dev/null || exit 1; fi
  fi
  echo "$did" >"$WORK/did$i"
}

setup() {
  log "set-up: a DID on every node (quorums set up, alice funded twice, bob once)"
  local i did pids=()
  for i in $(seq 1 $NODES); do setup_node "$i" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || fail "a node's set-up failed"; done
  for i in $(seq 1 $NODES); do
    did=$(cat "$WORK/did$i")
    case $i in
      $ALICE_NODE) [ -z "$ALICE" ] || [ "$ALICE" = "$did" ] || fail "alice's DID changed"; ALICE=$did ;;
      $BOB_NODE) [ -z "$BOB" ] || [ "$BOB" = "$did" ] || fail "bob's DID changed"; BOB=$did ;;
      *) [ -z "${QDID[$i]:-}" ] || [ "${QDID[$i]}" = "$did" ] || fail "createdid again gave $did, not ${QDID[$i]}"; QDID[$i]=$did ;;
    esac
  done
  log "set-up: two quorum lists"
  # shellcheck disable=SC2086
  quorum_list "$WORK/quorumlist-alice.json" $LIST_ALICE
  # shellcheck disable=SC2086
  quorum_list "$WORK/quorumlist-bob.json" $LIST_BOB
  call $ALICE_NODE addquorum -quorumList "$WORK/quorumlist-alice.json" >/dev/null || exit 1
  call $BOB_NODE addquorum -quorumList "$WORK/quorumlist-bob.json" >/dev/null || exit 1
  local q
  for q in $LIST_ALICE; do until_ok $ALICE_NODE checkQuorumStatus -quorumAddr "${QDID[$q]}"; done
  for q in $LIST_BOB; do until_ok $BOB_NODE checkQuorumStatus -quorumAddr "${QDID[$q]}"; done
}

transfer() {
  local node=$1 from=$2 to=$3 amount=$4
  log "transfer $amount RBT from $from to $to"
  call "$node" transferrbt -senderAddr "$from" -receiverAddr "$to" -rbtAmount "$amount" -transComment "script" -privPWD "$PW" >/dev/null || exit 1
}

log "starting $NODES nodes"
for i in $(seq 1 $NODES); do
  rbtnode run -p "$WORK/node$i" -n "$i" -port "$(port "$i")" -testNet >"$WORK/node$i.log" 2>&1 &
done
for i in $(seq 1 $NODES); do until_ok "$i" getalldid; done

setup
expect_balance $ALICE_NODE "$ALICE" 4.000
expect_balance $BOB_NODE "$BOB" 2.000

transfer $ALICE_NODE "$ALICE" "$BOB" 1.5
transfer $BOB_NODE "$BOB" "$ALICE" 0.5
expect_balance $ALICE_NODE "$ALICE" 3.000
expect_balance $BOB_NODE "$BOB" 3.000

log "self transfer (nothing is due yet: the amount is not used)"
call $ALICE_NODE transferrbt -senderAddr "$ALICE" -receiverAddr "$ALICE" -rbtAmount 1 -privPWD "$PW" >/dev/null || exit 1
expect_balance $ALICE_NODE "$ALICE" 3.000

log "the whole set-up part again"
setup
expect_balance $ALICE_NODE "$ALICE" 7.000
expect_balance $BOB_NODE "$BOB" 5.000

transfer $ALICE_NODE "$ALICE" "$BOB" 2
transfer $BOB_NODE "$BOB" "$ALICE" 1.25
expect_balance $ALICE_NODE "$ALICE" 6.250
expect_balance $BOB_NODE "$BOB" 5.750

log "done"
for i in $(seq 1 $NODES); do rbtnode shutdown -port "$(port "$i")" >/dev/null 2>&1 || true; done
echo "SCRIPT OK"
