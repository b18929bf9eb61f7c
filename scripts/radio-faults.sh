#!/usr/bin/env bash
# Radio fault cases and load figures for qtc's KISS pty ports, counted with strace.
#
#   (a) stalled: the pty peer connects 8 stations, asks each for help text, then stops reading
#       while qtc has data to send. qtc must wait for writability, not spin.
#   (b) hangup:  qtc has a pty peer's side open (device = PATH) and the peer hangs up. qtc must log
#       it, close, and retry with backoff, not spin.
#   load1200:    a steady 1200-baud stream of KISS frames (other stations' UI traffic) arrives;
#                prints syscalls per received frame.
#   load9600:    a 9600-baud stream arrives; prints qtc's CPU use.
#
# Each fault prints "radio-faults: CASE: N syscalls in 5 s (strace -f -c), T CPU ticks of 100/s";
# the limit is 50 syscalls. bench/run.sh (row 7) runs it and reads these lines.
# usage: scripts/radio-faults.sh [--binary PATH] [--seconds N] [CASE...]   (default: all cases)
set -euo pipefail

seconds=5
bin=""
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) bin="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    stalled|hangup|load1200|load9600) cases+=("$1") ;;
    *) echo "usage: $0 [--binary PATH] [--seconds N] [stalled|hangup|load1200|load9600...]" >&2; exit 2 ;;
  esac
  shift
done
[ ${#cases[@]} -gt 0 ] || cases=(stalled hangup load1200 load9600)
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p qtc
  bin="$root/target/release/qtc"
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] && cp -r "$work" /tmp/radio-faults-keep; rm -rf "$work"
}
trap cleanup EXIT

# A KISS/AX.25 peer: just enough AX.25 to connect, ask for text, and stream UI frames.
cat > "$work/peer.py" <<'PY'
import os, sys, time, tty, signal

def addr(call, ssid, cbit, last):
    call = call.ljust(6)[:6]
    b = bytes(ord(c) << 1 for c in call)
    return b + bytes([(0x80 if cbit else 0) | 0x60 | (ssid << 1) | (1 if last else 0)])

def frame(dest, src, ctl, info=None):
    d, ds = dest
    s, ss = src
    f = addr(d, ds, True, False) + addr(s, ss, False, True) + bytes([ctl])
    if info is not None:
        f += b"\xf0" + info
    return f

def kiss(f):
    body = bytes([0]) + f
    body = body.replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc")
    return b"\xc0" + body + b"\xc0"

def opentty(path):
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    return fd

mode = sys.argv[1]
if mode == "flood":
    # Connect N stations to MYCALL, send each 4 I frames "H", then never read again.
    path, mycall, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    fd = opentty(path)
    for i in range(1, n + 1):
        os.write(fd, kiss(frame((mycall, 0), ("N0FLD", i), 0x3F)))
    time.sleep(0.5)
    for i in range(1, n + 1):
        for ns in range(4):
            os.write(fd, kiss(frame((mycall, 0), ("N0FLD", i), ns << 1, b"H\r")))
    # Blind acknowledgements (RR responses, N(R) 4, 0, 4...) keep qtc's windows moving, so it
    # has plenty to send, while nothing here reads what it sends.
    for r in range(12):
        for i in range(1, n + 1):
            f = addr(mycall, 0, False, False) + addr("N0FLD", i, True, True)
            os.write(fd, kiss(f + bytes([(((r % 2) * 4 + 4) % 8) << 5 | 0x01])))
        time.sleep(0.25)
    time.sleep(0.5)
    import fcntl, termios, struct
    pending = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    print("flooded; bytes waiting unread in the pty:", pending, flush=True)
    signal.pause()
elif mode == "pty":
    # Make a pty, publish its other side's name at LINK, hold it until SIGTERM (then hang up).
    link = sys.argv[2]
    m, s = os.openpty()
    tty.setraw(s)
    name = os.ttyname(s)
    os.close(s)
    try:
        os.unlink(link)
    except FileNotFoundError:
        pass
    os.symlink(name, link)
    print("pty", name, flush=True)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while True:
        try:
            if not os.read(m, 4096):
                time.sleep(0.1)
        except OSError:
            time.sleep(0.1)
elif mode == "stream":
    # UI frames from other stations at the line rate of BAUD, for SECONDS.
    path, baud, secs, size = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    fd = opentty(path)
    info = (b"qtc load test " * 200)[:size]
    n = 0
    start = time.monotonic()
    while time.monotonic() - start < secs:
        f = kiss(frame(("CQ", 0), ("N0ST", n % 16), 0x03, info))
        os.write(fd, f)
        n += 1
        time.sleep(len(f) * 10 / baud)  # 8N1: 10 bits per byte
    print(n, flush=True)
PY

start_qtc() { # $1: the [[port]] table
  cat > "$work/qtc.toml" <<TOML
[station]
callsign = "N0BBS"
[store]
dir = "$work/data"
durability = "normal"
[telnet]
listen = ["127.0.0.1:0"]
[log]
level = "info"
$1
TOML
  rm -rf "$work/data"
  "$bin" -c "$work/qtc.toml" run >"$work/out" 2>"$work/err" &
  qpid=$!
  pids+=("$qpid")
  for _ in $(seq 300); do
    grep -q '^data: ' "$work/out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "^data: " "$work/out" || { echo "qtc did not start:" >&2; cat "$work/out" "$work/err" >&2; exit 1; }
}

stop_qtc() {
  kill "$qpid" 2>/dev/null || true
  wait "$qpid" 2>/dev/null || true
}

count() { # $1: case name; prints the count and CPU ticks, and the table when over the limit
  strace -f -c -qq -o "$work/strace" -p "$qpid" &
  local spid=$!
  local t0 t1
  t0=$(awk '{print $14+$15}' "/proc/$qpid/stat")
  sleep "$seconds"
  t1=$(awk '{print $14+$15}' "/proc/$qpid/stat")
  kill -INT "$spid"; wait "$spid" 2>/dev/null || true
  local calls
  calls=$(awk '$NF=="total" {print $4}' "$work/strace")
  calls=${calls:-0}
  echo "radio-faults: $1: $calls syscalls in $seconds s (strace -f -c), $((t1 - t0)) CPU ticks of $(getconf CLK_TCK)/s"
  if [ "$calls" -ge 50 ]; then cat "$work/strace"; fi
  last_calls=$calls
}

wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

status=0
for c in "${cases[@]}"; do
  case "$c" in
    stalled)
      start_qtc "[[port]]
name = \"pty\"
kind = \"kiss-pty\"
create = \"$work/kiss\""
      wait_file "$work/kiss"
      python3 "$work/peer.py" flood "$work/kiss" N0BBS 16 >"$work/flood.out" &
      fpid=$!; pids+=("$fpid")
      for _ in $(seq 50); do grep -q flooded "$work/flood.out" 2>/dev/null && break; sleep 0.1; done
      sleep 0.5
      echo "radio-faults: (a) $(cat "$work/flood.out")"
      count "(a) pty peer stops reading"
      [ "$last_calls" -lt 50 ] || status=1
      grep -c "incoming link" "$work/err" | sed 's/^/radio-faults: (a) links accepted: /'
      grep -q "device down" "$work/err" && { echo "radio-faults: (a) the device went down:"; grep "device down" "$work/err"; status=1; }
      kill "$fpid" 2>/dev/null || true
      stop_qtc
      ;;
    hangup)
      python3 "$work/peer.py" pty "$work/tnc" >"$work/pty.out" &
      ppid=$!; pids+=("$ppid")
      wait_file "$work/tnc"
      start_qtc "[[port]]
name = \"pty\"
kind = \"kiss-pty\"
device = \"$work/tnc\""
      for _ in $(seq 50); do grep -q "device open" "$work/err" && break; sleep 0.1; done
      kill "$ppid"; wait "$ppid" 2>/dev/null || true
      sleep 1
      count "(b) pty peer hangs up"
      [ "$last_calls" -lt 50 ] || status=1
      echo "radio-faults: (b) qtc logged: $(grep -m1 -o 'device down.*' "$work/err" | head -c 160)"
      echo "radio-faults: (b) reopen attempts: $(grep -c 'device down' "$work/err")"
      stop_qtc
      ;;
    load1200|load9600)
      baud=${c#load}
      size=60; [ "$baud" = 9600 ] && size=256
      start_qtc "[[port]]
name = \"pty\"
kind = \"kiss-pty\"
create = \"$work/kiss\""
      wait_file "$work/kiss"
      secs=$((seconds + 3))
      python3 "$work/peer.py" stream "$work/kiss" "$baud" "$secs" "$size" >"$work/stream.out" &
      spid2=$!; pids+=("$spid2")
      sleep 1
      t0=$(awk '{print $14+$15}' "/proc/$qpid/stat")
      strace -f -c -qq -o "$work/strace" -p "$qpid" &
      stpid=$!
      sleep "$seconds"
      kill -INT "$stpid"; wait "$stpid" 2>/dev/null || true
      t1=$(awk '{print $14+$15}' "/proc/$qpid/stat")
      wait "$spid2" || true
      frames=$(cat "$work/stream.out")
      calls=$(awk '$NF=="total" {print $4}' "$work/strace"); calls=${calls:-0}
      # Frames that arrived while strace counted: the stream's rate times the window.
      counted=$(python3 -c "print(round($frames * $seconds / $secs))")
      tck=$(getconf CLK_TCK)
      cpu=$(python3 -c "print(round(100.0 * ($t1 - $t0) / $tck / $seconds, 2))")
      per=$(python3 -c "print(round($calls / max(1, $counted), 2))")
      echo "radio-faults: $baud baud stream, ${size}-byte frames: ~$counted frames in $seconds s, $calls syscalls (strace -f -c), $per per frame"
      echo "radio-faults: $baud baud stream: qtc CPU $cpu % of one core (utime+stime, measured without strace attached would be lower)"
      heard=$("$bin" -c "$work/qtc.toml" ctl heard | grep -c N0ST || true)
      echo "radio-faults: $baud baud stream: heard list has $heard stations"
      stop_qtc
      ;;
  esac
done
exit $status
