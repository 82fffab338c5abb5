"""Time per operator in a Chrome trace written by `pelab_training_benchmark --profile=...`.

    python3 benchmarks/profile_summary.py trace.json [--top 20]

Self time: an operator's time minus that of the operators it called, so the rows add up to the
traced time.
"""

import argparse
import collections
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    events = [e for e in (trace["traceEvents"] if isinstance(trace, dict) else trace)
              if e.get("ph") == "X"]
    by_thread = collections.defaultdict(list)
    for event in events:
        by_thread[event.get("tid")].append(event)
    self_time = collections.Counter()
    calls = collections.Counter()
    total = 0.0
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # (end, name, child time)
        for event in thread_events:
            while stack and event["ts"] >= stack[-1][0]:
                end, name, children, duration = stack.pop()
                self_time[name] += duration - children
                if stack:
                    stack[-1][2] += duration
                else:
                    total += duration
            stack.append([event["ts"] + event["dur"], event["name"], 0.0, event["dur"]])
            calls[event["name"]] += 1
        while stack:
            end, name, children, duration = stack.pop()
            self_time[name] += duration - children
            if stack:
                stack[-1][2] += duration
            else:
                total += duration
    print(f"{'operator':48s} {'self ms':>10s} {'share':>7s} {'calls':>7s}")
    for name, micros in self_time.most_common(args.top):
        print(f"{name[:48]:48s} {micros / 1000:10.1f} {100 * micros / total:6.1f}% "
              f"{calls[name]:7d}")
    print(f"{'total (top-level)':48s} {total / 1000:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
