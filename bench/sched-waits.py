#!/usr/bin/env python3
"""Where threads wait for a core, from a scheduler trace (docs/performance.md, row 8e).

Record a run, then read it back for a time window in perf's clock, as `perf script` prints it
(CLOCK_MONOTONIC here: a daemon log's UTC times minus CLOCK_REALTIME - CLOCK_MONOTONIC, which
`python3 -c 'import time; print(time.time() - time.monotonic())'` prints):

    perf record -a -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new \\
        -o sched.data -- COMMAND
    perf script -i sched.data | bench/sched-waits.py START END [TID,TID,...]

Prints, per thread, the time it ran in the window, its wake-ups and the time from each
wake-up to its next switch-in (waiting for a core). With TIDs, also what had the core when
each of those threads' waits ended, by thread name (nice-19 threads as one line).
"""
import collections
import re
import sys

EVENT = re.compile(r'\[(\d+)\]\s+(\d+\.\d+):\s+sched:(\w+):\s(.*)$')
WAKE = re.compile(r'comm=(.*) pid=(\d+) prio=')
SWITCH = re.compile(r'prev_comm=(.*) prev_pid=(\d+) prev_prio=(\d+) prev_state=\S+ '
                    r'==> next_comm=(.*) next_pid=(\d+) next_prio=')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    start, end = float(sys.argv[1]), float(sys.argv[2])
    watch = {int(t) for t in sys.argv[3].split(',')} if len(sys.argv) > 3 else set()
    woken, since, names = {}, {}, {}
    ran = collections.defaultdict(float)
    waits = collections.defaultdict(list)
    blame = collections.defaultdict(float)
    blamed = collections.Counter()
    for line in sys.stdin:
        m = EVENT.search(line)
        if not m:
            continue
        t, event, rest = float(m.group(2)), m.group(3), m.group(4)
        if t > end:
            break
        if event in ('sched_wakeup', 'sched_wakeup_new'):
            w = WAKE.search(rest)
            tid = int(w.group(2))
            names[tid] = w.group(1)
            woken.setdefault(tid, t)
        elif event == 'sched_switch':
            s = SWITCH.search(rest)
            prev, nxt = int(s.group(2)), int(s.group(5))
            names[prev], names[nxt] = s.group(1), s.group(4)
            if prev in since and t >= start:
                ran[prev] += t - max(since[prev], start)
            since.pop(prev, None)
            since[nxt] = t
            if nxt in woken:
                w = woken.pop(nxt)
                if w >= start:
                    waits[nxt].append(t - w)
                    if nxt in watch:
                        who = 'nice 19' if s.group(3) == '139' else s.group(1)
                        blame[who] += t - w
                        blamed[who] += 1
    print(f'window {1e3 * (end - start):.0f} ms')
    print(f'{"tid":>7} {"thread":16} {"ran ms":>8} {"wakeups":>8} {"waited ms":>10} {"max ms":>7}')
    for tid in sorted(set(ran) | set(waits), key=lambda t: -ran.get(t, 0))[:30]:
        w = waits.get(tid, [])
        print(f'{tid:>7} {names.get(tid, "?"):16} {1e3 * ran.get(tid, 0):8.1f} {len(w):8d} '
              f'{1e3 * sum(w):10.1f} {1e3 * max(w, default=0):7.2f}')
    if watch:
        total = sum(blame.values()) or 1
        print('\nwhat had the core when the watched threads\' waits ended:')
        for who, v in sorted(blame.items(), key=lambda x: -x[1]):
            print(f'  {who:16} {1e3 * v:8.1f} ms ({100 * v / total:.0f} %) over {blamed[who]} waits')


main()
