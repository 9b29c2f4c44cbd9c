"""Times PyTorch's Holistic Trace Analysis on a directory of Kineto traces, for scripts/bench.

Prints one line of JSON: {"seconds", "peak_rss_mib", "ranks"} — the same shape as
`seqskew-bench ingest`. Time is what a user waits for to get HTA's first answer: loading the
traces (TraceAnalysis) and its temporal breakdown per rank, the closest HTA view to a
per-rank straggler picture. HTA parses ranks in a pool of processes (all cores, as users run
it), so peak memory is sampled every 20 ms over this process and its children, summed.
"""

import json
import sys
import threading
import time
import warnings

import psutil


class PeakTreeRss(threading.Thread):
    """Samples the summed resident memory of this process and its descendants."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self.done.wait(0.02):
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass  # a worker that just exited
            self.peak = max(self.peak, total)


def main() -> None:
    trace_dir = sys.argv[1]
    warnings.filterwarnings("ignore")
    sampler = PeakTreeRss()
    sampler.start()
    start = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis  # imported inside the timing: users pay it too

    analyzer = TraceAnalysis(trace_dir=trace_dir)
    breakdown = analyzer.get_temporal_breakdown(visualize=False)
    seconds = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    print(json.dumps({"seconds": seconds, "peak_rss_mib": sampler.peak / 2**20, "ranks": len(breakdown)}))


if __name__ == "__main__":
    main()
