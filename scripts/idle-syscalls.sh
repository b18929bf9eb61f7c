#!/usr/bin/env bash
# Counts the system calls an idle qtc makes: starts the daemon on a scratch data directory,
# optionally logs one telnet user in and leaves the session idle, optionally with a NET/ROM node
# on an AXUDP port (its first broadcast and poll gone, the next an hour away), optionally with
# forwarding partners that have nothing queued (called at once when mail comes, polled hourly),
# then attaches
# `strace -f -c` to every thread for a while and prints the total. Expected: 0; any other count
# prints strace's table and exits 1 (CI runs it).
#
# --ip also makes qtc an IP router ([ip], docs/radio.md): its TUN interface qtc0 and an ip = true
# AXUDP port whose peer is silent. It needs root (CAP_NET_ADMIN); qtc then runs in a network
# namespace of its own, so the interface is made and gone with it.
#
# --mail also opens the eight [mail] listeners (plain and implicit TLS, with a certificate made
# by `qtc cert`) and leaves IMAP clients in IDLE on every kind of folder (INBOX, a folder of the
# user's own, a bulletin folder), an IMAPS client in IDLE (openssl s_client) and an NNTP reader
# (logged in, the groups listed) connected while it counts.
#
# usage: scripts/idle-syscalls.sh [--session] [--mail] [--netrom] [--partners] [--ip] [--seconds N] [--binary PATH]
set -euo pipefail

session=0
mail=0
netrom=0
partners=0
ip=0
seconds=10
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --session) session=1 ;;
    --mail) mail=1 ;;
    --netrom) netrom=1 ;;
    --partners) partners=1 ;;
    --ip) ip=1 ;;
    --seconds) seconds="$2"; shift ;;
    --binary) bin="$2"; shift ;;
    *) echo "usage: $0 [--session] [--mail] [--netrom] [--partners] [--ip] [--seconds N] [--binary PATH]" >&2; exit 2 ;;
  esac
  shift
done
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc
  bin="$root/target/release/qtc"
fi

work=$(mktemp -d)
pid=""
ns=""
spids=""
# Keeps the script's exit status: a helper already gone (kill fails) must not turn a pass into 1.
cleanup() {
  local rc=$?
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$spids" ] && kill "$spids" 2>/dev/null
  exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 2>/dev/null || true
  [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

cat > "$work/qtc.toml" <<TOML
[station]
callsign = "N0IDL"
[telnet]
listen = ["127.0.0.1:0"]
[log]
level = "warn"
TOML
if [ "$mail" = 1 ]; then
  command -v openssl >/dev/null || { echo "openssl is needed for --mail" >&2; exit 2; }
  printf '[mail]\n' >>"$work/qtc.toml"
  for l in smtp smtps pop3 pop3s imap imaps nntp nntps; do
    printf '%s_listen = "127.0.0.1:0"\n' "$l" >>"$work/qtc.toml"
  done
  printf '[tls]\ncert = "cert.pem"\nkey = "key.pem"\n' >>"$work/qtc.toml"
  "$bin" -c "$work/qtc.toml" cert >/dev/null
fi
if [ "$netrom" = 1 ]; then
  # A NET/ROM node on an AXUDP port whose peer is silent: its first broadcast (with a poll)
  # comes within a tenth of the interval (6 s), the next not before 90 s; counted between.
  sed -i 's/^level = "warn"/level = "info"/' "$work/qtc.toml"
  cat >> "$work/qtc.toml" <<TOML
[[port]]
name = "udp"
kind = "axudp"
listen = "127.0.0.1:0"
peers = [{ callsign = "N0PEE", address = "127.0.0.1:9" }]
netrom_quality = 192
[netrom]
alias = "IDLE"
broadcast = "100s"
TOML
fi
if [ "$partners" = 1 ]; then
  # Two partners with nothing queued for them: a call comes only with mail, a poll in an hour.
  for call in N0PA N0PB; do
    printf '[[partner]]\ncallsign = "%s"\nconnect = "tcp:127.0.0.1:9"\nroutes = ["%s", "WW"]\ninterval = "15s"\npoll = "1h"\n' \
      "$call" "$call" >>"$work/qtc.toml"
  done
fi
# The daemon's own process, inside the namespace when there is one.
run=("$bin")
if [ "$ip" = 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "--ip needs root (a network namespace and a TUN interface)" >&2; exit 2; }
  # The clients of --session and --mail connect from outside the namespace.
  [ "$session$mail" = 00 ] || { echo "--ip goes without --session and --mail" >&2; exit 2; }
  # An AXUDP port carrying IP, its peer silent; the host's side is the TUN interface qtc0.
  cat >> "$work/qtc.toml" <<TOML
[[port]]
name = "air"
kind = "axudp"
listen = "127.0.0.1:0"
peers = [{ callsign = "N0PEE", address = "127.0.0.1:9" }]
ip = true
[ip]
address = "44.128.0.1/24"
tun = "qtc0"
TOML
  ns="qtc-idle-$$"
  ip netns add "$ns"
  ip netns exec "$ns" ip link set lo up
  run=(ip netns exec "$ns" "$bin")
fi
"$bin" -c "$work/qtc.toml" user add N0USR --password idle >/dev/null
"${run[@]}" -c "$work/qtc.toml" run >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 100); do
  grep -q '^telnet: listening on' "$work/out" 2>/dev/null && break
  sleep 0.1
done
port=$(sed -n 's/^telnet: listening on .*:\([0-9]*\)$/\1/p' "$work/out" | sed -n 1p)
[ -n "$port" ] || { echo "qtc did not start:" >&2; cat "$work/err" >&2; exit 1; }

# Reads lines from file descriptor $1 until $2 (a bash regex) has matched ${3:-1} times: the
# count starts only once every client's last command is answered.
await_line() {
  local fd=$1 pat=$2 n=${3:-1} line
  while [ "$n" -gt 0 ]; do
    IFS= read -r -t 60 -u "$fd" line || { echo "no line matching '$pat' on fd $fd" >&2; exit 1; }
    line=${line%$'\r'}
    if [[ $line =~ $pat ]]; then n=$((n - 1)); fi
  done
}

if [ "$session" = 1 ]; then
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'N0USR\r\n' >&3; sleep 0.3
  printf 'idle\r\n' >&3; sleep 1
  printf 'L\r\n' >&3
  # The prompt after the login, then the one after L.
  await_line 3 '^de N0IDL>' 2
fi
if [ "$mail" = 1 ]; then
  listener() { sed -n "s/^$1: listening on .*:\([0-9]*\)\$/\1/p" "$work/out" | sed -n 1p; }
  exec 4<>"/dev/tcp/127.0.0.1/$(listener imap)"
  printf 'a LOGIN N0USR idle\r\n' >&4; sleep 1
  printf 'b SELECT INBOX\r\nc IDLE\r\n' >&4
  exec 6<>"/dev/tcp/127.0.0.1/$(listener imap)"
  printf 'a LOGIN N0USR idle\r\n' >&6; sleep 1
  printf 'b CREATE Sent\r\nc SELECT Sent\r\nd IDLE\r\n' >&6
  exec 7<>"/dev/tcp/127.0.0.1/$(listener imap)"
  printf 'a LOGIN N0USR idle\r\n' >&7; sleep 1
  printf 'b SELECT Bulletins/WX\r\nc IDLE\r\n' >&7
  for fd in 4 6 7; do await_line "$fd" '^\+ idling'; done
  exec 5<>"/dev/tcp/127.0.0.1/$(listener nntp)"
  # Reading news takes the login (as LinBPQ's NNTP).
  printf 'AUTHINFO USER N0USR\r\nAUTHINFO PASS idle\r\n' >&5; sleep 1
  printf 'LIST\r\n' >&5
  await_line 5 '^\.$'
  # IMAPS: openssl s_client reads its commands from a FIFO kept open.
  mkfifo "$work/imaps.in"
  openssl s_client -quiet -connect "127.0.0.1:$(listener imaps)" -CAfile "$work/cert.pem" \
    <"$work/imaps.in" >"$work/imaps.out" 2>/dev/null &
  spids="$!"
  exec 8>"$work/imaps.in"
  printf 'a LOGIN N0USR idle\r\n' >&8; sleep 1
  printf 'b SELECT INBOX\r\nc IDLE\r\n' >&8
  for _ in $(seq 600); do
    grep -q '^+ idling' "$work/imaps.out" && break
    sleep 0.1
  done
  grep -q '^+ idling' "$work/imaps.out" || { echo "the IMAPS client is not in IDLE:" >&2; cat "$work/imaps.out" >&2; exit 1; }
fi
# Let start-up work (and the session's login) finish before counting.
sleep 1
if [ "$netrom" = 1 ]; then
  for _ in $(seq 150); do
    grep -q 'NET/ROM NODES sent; next broadcast' "$work/err" 2>/dev/null && break
    sleep 0.1
  done
  grep -q 'NET/ROM NODES sent; next broadcast' "$work/err" || { echo "no NODES broadcast:" >&2; cat "$work/err" >&2; exit 1; }
fi

strace -f -c -qq -o "$work/strace" -p "$pid" &
spid=$!
sleep "$seconds"
kill -INT "$spid"; wait "$spid" 2>/dev/null || true

calls=$(awk '$NF=="total" {print $4}' "$work/strace")
calls=${calls:-0}
what="idle"; [ "$session" = 1 ] && what="idle, one logged-in telnet session"
[ "$mail" = 1 ] && what="$what, SMTP/POP3/IMAP/NNTP listening (plain and TLS), IMAP clients in IDLE on INBOX, Sent and Bulletins/WX, an IMAPS client in IDLE and an NNTP reader connected"
[ "$netrom" = 1 ] && what="$what, a NET/ROM node between broadcasts"
[ "$partners" = 1 ] && what="$what, two forwarding partners with nothing queued"
[ "$ip" = 1 ] && what="$what, an IP router on its TUN interface and an AXUDP port"
echo "qtc $what: $calls syscalls in ${seconds} s (strace -f -c)"
[ "$calls" = 0 ] || { cat "$work/strace"; exit 1; }
