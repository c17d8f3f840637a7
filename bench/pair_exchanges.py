#!/usr/bin/env python3
"""Which two-member exchanges of a 2-rank run went one after the other, against the
grant rule's criterion (docs/engine.md, "Two-member exchanges").

Usage: bench/pair_exchanges.py RUN_DIR CALL [MIN_BYTES [LATENCY_S [ALPHA_S BETA_S_PER_B]]]

For each instance of CALL (the k-th call of that name on each rank) with at least
MIN_BYTES sent (default 65536): the later member "had seen" the earlier's request when
its last blocking or completion call before its entry ended after the earlier's entry
plus LATENCY_S (default 10.7e-6, the profile's inter-node alpha); the exchange went "one
after the other" when the slower member's transfer (measured_s - wait_s in calls.csv)
exceeds 1.5 lone exchanges of half its bytes (ALPHA_S + BETA_S_PER_B * bytes_sent / 2,
default 10.7e-6 and 8.4e-8: the battery's 100 Mbit/s profile). Prints the counts of
(seen, one after the other). Python 3 standard library only.
"""
import collections
import csv
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    d, call = sys.argv[1], sys.argv[2]
    minb = int(sys.argv[3]) if len(sys.argv) > 3 else 65536
    latency = float(sys.argv[4]) if len(sys.argv) > 4 else 10.7e-6
    alpha = float(sys.argv[5]) if len(sys.argv) > 5 else 10.7e-6
    beta = float(sys.argv[6]) if len(sys.argv) > 6 else 8.4e-8
    by = collections.defaultdict(list)
    with open(d + "/calls.csv") as f:
        for r in csv.DictReader(f):
            by[r["rank"]].append(r)
    if len(by) != 2:
        sys.exit(f"{d}: {len(by)} ranks; this counts 2-rank runs")
    for k in by:
        by[k].sort(key=lambda r: float(r["start_s"]))
    inst = collections.defaultdict(dict)
    for k, rows in by.items():
        n = 0
        for i, r in enumerate(rows):
            if r["call"] == call:
                inst[n][k] = i
                n += 1
    end = lambda r: float(r["start_s"]) + float(r["measured_s"])
    counts = collections.Counter()
    for members in inst.values():
        if len(members) != 2:
            continue
        (ka, ia), (kb, ib) = sorted(
            members.items(), key=lambda m: float(by[m[0]][m[1]]["start_s"])
        )
        ra, rb = by[ka][ia], by[kb][ib]
        if int(ra["bytes_sent"]) < minb:
            continue
        entry_a = float(ra["start_s"])
        progressed = max(
            (end(r) for r in by[kb][:ib] if r["nonblocking"] != "1"), default=-1.0
        )
        seen = progressed > entry_a + latency

        def ratio(r):
            lone = alpha + beta * int(r["bytes_sent"]) / 2
            return (float(r["measured_s"]) - float(r["wait_s"])) / lone

        serial = max(ratio(ra), ratio(rb)) > 1.5
        counts[(seen, serial)] += 1
    for seen in (True, False):
        s = counts[(seen, True)] + counts[(seen, False)]
        print(
            f"{call} later member {'had seen' if seen else 'had not seen'} the request: "
            f"{s} exchanges, one after the other {counts[(seen, True)]}, together {counts[(seen, False)]}"
        )


if __name__ == "__main__":
    main()
