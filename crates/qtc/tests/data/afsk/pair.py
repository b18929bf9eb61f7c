#!/usr/bin/env python3
"""Two Direwolf 1200-baud AFSK modems joined by the real-time half-duplex channel (chan.py here).

usage: pair.py DIR [--loss RATE] [--seed N] [--baud 1200|300]

Makes DIR (FIFOs, .asoundrc, a.conf, b.conf, logs), starts chan.py at real-time priority when
allowed (SCHED_FIFO, else nice -10, else as it is) and the two Direwolfs, each with the README's
settings (TXDELAY 30, TXTAIL 10, SLOTTIME 10, PERSIST 63, DWAIT 0, FULLDUP off) on free ports,
at 1200 baud (AFSK 1200/2200 Hz) or with --baud 300 at 300 (Direwolf's 300-baud AFSK, 1600/1800
Hz: the channel carries any audio at its true rate).
When both KISS TCP ports accept, prints one JSON line to standard output:
    {"kiss_a": PORT, "kiss_b": PORT, "priority": "fifo" | "nice" | "none"}
then runs until standard input closes or SIGTERM, stops everything, and prints chan.py's final
statistics as a second JSON line (seconds each side transmitted, collisions, late ticks...).
Every port is a free one (tried with bind), so runs beside each other do not collide.
"""
import json, os, random, shutil, signal, socket, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
DIREWOLF_CONF = """ADEVICE UDP:{audio_in} {pcm}
ARATE 48000
ACHANNELS 1
CHANNEL 0
MYCALL {call}
MODEM {baud}
AGWPORT 0
KISSPORT {kiss}
TXDELAY 30
TXTAIL 10
DWAIT 0
SLOTTIME 10
PERSIST 63
"""


def free_port(kind):
    """A port free a moment ago, below 49152: Direwolf 1.6 refuses a KISSPORT above 49151
    ("Invalid port number"), and the kernel's own picks (port 0) are mostly above it."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20000, 49152)
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    sys.exit("pair.py: no free port between 20000 and 49151")


def prioritised(cmd):
    """cmd under SCHED_FIFO, or nice -10, whichever this process may use."""
    for prefix, name in ((["chrt", "-f", "20"], "fifo"), (["nice", "-n", "-10"], "nice")):
        if shutil.which(prefix[0]) and subprocess.run(prefix + ["true"], stderr=subprocess.DEVNULL).returncode == 0:
            return prefix + cmd, name
    return cmd, "none"


def wait_listening(port, proc, what, patience=30):
    end = time.monotonic() + patience
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"pair.py: {what} exited with {proc.returncode} (see its log)")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"pair.py: {what} did not listen on {port}")


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    work, loss, seed, baud = os.path.abspath(args[0]), "0", "1", "1200"
    rest = args[1:]
    while rest:
        flag, value = rest[0], rest[1]
        if flag == "--loss":
            loss = value
        elif flag == "--seed":
            seed = value
        elif flag == "--baud" and value in ("1200", "300"):
            baud = value
        else:
            sys.exit(__doc__)
        rest = rest[2:]
    os.makedirs(work, exist_ok=True)
    audio_a, audio_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    kiss_a, kiss_b = free_port(socket.SOCK_STREAM), free_port(socket.SOCK_STREAM)
    fifo_a, fifo_b = os.path.join(work, "txA.fifo"), os.path.join(work, "txB.fifo")
    stats = os.path.join(work, "chan.json")
    with open(os.path.join(work, ".asoundrc"), "w") as f:
        f.write(f'pcm.dwA {{ type file  slave.pcm "null"  file "{fifo_a}"  format "raw" }}\n')
        f.write(f'pcm.dwB {{ type file  slave.pcm "null"  file "{fifo_b}"  format "raw" }}\n')
    cmd, priority = prioritised([sys.executable, os.path.join(HERE, "chan.py"), "48000",
                                 fifo_a, fifo_b, str(audio_a), str(audio_b), stats, loss, seed])
    procs = []
    chan = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "chan.log"), "w"))
    procs.append(chan)
    # chan.py makes the FIFOs; Direwolf opens them for writing once it starts its audio.
    end = time.monotonic() + 10
    while not (os.path.exists(fifo_a) and os.path.exists(fifo_b)):
        if time.monotonic() > end or chan.poll() is not None:
            sys.exit("pair.py: chan.py did not make its FIFOs (see chan.log)")
        time.sleep(0.05)
    env = dict(os.environ, HOME=work)
    for name, audio, pcm, call, kiss in (("a", audio_a, "dwA", "N0AAA", kiss_a),
                                         ("b", audio_b, "dwB", "N0BBB", kiss_b)):
        conf = os.path.join(work, f"{name}.conf")
        with open(conf, "w") as f:
            f.write(DIREWOLF_CONF.format(audio_in=audio, pcm=pcm, call=call, kiss=kiss, baud=baud))
        dw_cmd, _ = prioritised(["direwolf", "-t", "0", "-c", conf])
        procs.append(subprocess.Popen(dw_cmd, env=env, cwd=work, stdin=subprocess.DEVNULL,
                                      stdout=open(os.path.join(work, f"{name}.log"), "w"),
                                      stderr=subprocess.STDOUT))
    try:
        wait_listening(kiss_a, procs[1], "direwolf a")
        wait_listening(kiss_b, procs[2], "direwolf b")
        print(json.dumps({"kiss_a": kiss_a, "kiss_b": kiss_b, "priority": priority}), flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        sys.stdin.read()
    finally:
        for p in procs[1:]:
            p.terminate()
        chan.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        try:
            with open(stats) as f:
                print(f.read().strip(), flush=True)
        except OSError:
            print("{}", flush=True)


if __name__ == "__main__":
    main()
