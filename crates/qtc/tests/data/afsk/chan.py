#!/usr/bin/env python3
"""Real-time half-duplex 'radio channel' between two Direwolf soundcard modems on loopback.
Each Direwolf transmits into a FIFO (ALSA file plugin, raw S16LE mono, null slave). This relay reads
each FIFO at exactly RATE samples/s (10 ms ticks) with the pipe shrunk to two pages (85 ms at 48 kHz), so Direwolf's
audio writes block and its transmissions take their real air time; it sends the audio to the other
Direwolf's UDP audio input, and silence when nobody transmits, so carrier detect (DCD) works.
A station that is transmitting does not hear the other (half-duplex radio): overlapping
transmissions are lost at both ends (counted as 'collide').
usage: chan.py RATE FIFO_A FIFO_B UDP_TO_A UDP_TO_B STATSFILE [LOSS [SEED]]

qtc's copy (the shared tools/afsk-channel/chan.py, plus LOSS): with LOSS > 0, each 10 ms tick of a
transmission is blanked on its way to the other station with probability LOSS (seeded with SEED),
a burst of noise that spoils the frame it falls in, so long frames are lost more often than short
ones (LOSS 0.0005: about 9 % of 256-byte frames at 1200 baud, 0.7 % of RRs; counted as 'noise').
Without LOSS it behaves exactly as the shared original."""
import socket, sys, time, signal, json, os, fcntl, random
rate = int(sys.argv[1]); fa, fb = sys.argv[2:4]; outa, outb = int(sys.argv[4]), int(sys.argv[5]); statsf = sys.argv[6]
loss = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
rng = random.Random(int(sys.argv[8]) if len(sys.argv) > 8 else 1)
TICK = 0.01; n = int(rate * TICK) * 2
def openfifo(p):
    if not os.path.exists(p): os.mkfifo(p)
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(fd, 1031, 8192)  # F_SETPIPE_SZ: two pages (one page would starve reads), so the writer is paced by our reads
    return fd
da, db = openfifo(fa), openfifo(fb)
out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
st = dict(ticks=0, busy_a=0, busy_b=0, collide=0, late_ticks=0, underrun_a=0, underrun_b=0, bursts_a=0, bursts_b=0, noise=0)
def dump(*_):
    json.dump({k: (round(v * TICK, 2) if k in ("ticks", "busy_a", "busy_b", "collide") else v) for k, v in st.items()}, open(statsf, "w"))
    if _: sys.exit(0)
signal.signal(signal.SIGTERM, dump)
zero = bytes(n); t0 = time.monotonic(); k = 0; lastdump = t0; pa = pb = False
def take(fd):
    b = b""
    while len(b) < n:
        try: d = os.read(fd, n - len(b))
        except BlockingIOError: break
        if not d: break
        b += d
    return b
while True:
    k += 1; due = t0 + k * TICK
    dt = due - time.monotonic()
    if dt > 0: time.sleep(dt)
    elif dt < -TICK: st["late_ticks"] += 1
    ca, cb = take(da), take(db)
    ta, tb = len(ca) > 0, len(cb) > 0
    if ta and len(ca) < n and pa: st["underrun_a"] += 1
    if tb and len(cb) < n and pb: st["underrun_b"] += 1
    st["bursts_a"] += ta and not pa; st["bursts_b"] += tb and not pb; pa, pb = ta, tb
    ca += zero[len(ca):]; cb += zero[len(cb):]
    st["ticks"] += 1; st["busy_a"] += ta; st["busy_b"] += tb; st["collide"] += ta and tb
    if loss and ta and rng.random() < loss: ca = zero; st["noise"] += 1
    if loss and tb and rng.random() < loss: cb = zero; st["noise"] += 1
    out.sendto(zero if tb else ca, ("127.0.0.1", outb))   # A's audio reaches B unless B is transmitting
    out.sendto(zero if ta else cb, ("127.0.0.1", outa))
    if due - lastdump > 5: dump(); lastdump = due
