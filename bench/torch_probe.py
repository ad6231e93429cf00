#!/usr/bin/env python3
"""torch_probe.py - a PyTorch training step for the GPU-machine procedure.

bench/gpu-remote.sh runs it plainly and under `memflow run`, with the
caching allocator as it comes, with PYTORCH_NO_CUDA_MEMORY_CACHING=1 and
with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the environment says
which), and once inside torch.profiler (Kineto).  bench/gpu_check.py then
matches what memflow recorded against PyTorch's own record.

usage: torch_probe.py OUT.json [--steps N] [--history] [--kineto] [--dump-snapshot FILE]

  --history  torch.cuda.memory._record_memory_history() around the run; the
             allocator's trace (segment_alloc/free, segment_map/unmap,
             alloc/free_completed: address, size, time_us) goes into the JSON
  --kineto   the last two steps inside torch.profiler.profile(CPU, CUDA); the
             number of CUDA kernels Kineto saw goes into the JSON
  --dump-snapshot FILE
             at the end, torch.cuda.memory._dump_snapshot(FILE): the pickle
             `memflow import` reads (the history must be on: memflow's own
             under memflow run, else give --history too)

OUT.json: mode, steps, step_ms (each step, synchronized), median_ms, loss,
versions, the device, clock pairs (CLOCK_REALTIME and CLOCK_MONOTONIC read
together, to put time_us on memflow's clock) and the trace.  Without a CUDA
device it writes {"skipped": "..."} and exits 0.
"""
import json
import os
import statistics
import sys
import time


def clock_pair():
    """CLOCK_REALTIME and CLOCK_MONOTONIC, read as close together as possible."""
    best = None
    for _ in range(16):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[2]:
            best = (r, (a + b) // 2, b - a)
    return {"real_ns": best[0], "mono_ns": best[1], "width_ns": best[2]}


def mode_name():
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1":
        return "no_caching"
    if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        return "expandable_segments"
    return "caching"


def trace_of(snapshot):
    """The allocator's events (without stack frames), device 0 first."""
    keep = ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "alloc",
            "free_requested", "free_completed", "oom")
    events = []
    for device, trace in enumerate(snapshot.get("device_traces", [])):
        for e in trace:
            if e.get("action") in keep:
                events.append({"device": device, "action": e["action"], "addr": e["addr"],
                               "size": e["size"], "time_us": e.get("time_us", 0),
                               "stream": e.get("stream", 0)})
    return events


def run(args):
    import torch
    out = {"mode": mode_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        out["skipped"] = "torch sees no CUDA device"
        return out
    steps = args["steps"]
    dev = torch.device("cuda")
    out["device"] = torch.cuda.get_device_name(0)
    out["clock_start"] = clock_pair()
    if args["history"]:
        torch.cuda.memory._record_memory_history(max_entries=200000)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                              torch.nn.Linear(4096, 4096), torch.nn.GELU(),
                              torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randn(256, 1024, device=dev)
    step_ms, kernels, loss = [], None, None

    def step():
        opt.zero_grad(set_to_none=True)
        loss_ = torch.nn.functional.mse_loss(net(x), y)
        loss_.backward()
        opt.step()
        return loss_

    plain_steps = steps - 2 if args["kineto"] else steps
    for _ in range(plain_steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        step_ms.append((time.perf_counter() - t) * 1e3)
    if args["kineto"]:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(2):
                loss = step()
            torch.cuda.synchronize()
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        out["kineto_cuda_events"] = kernels
        for _ in range(2):  # after the profiler: does memflow still see allocations?
            loss = step()
        torch.cuda.synchronize()
    out["clock_end"] = clock_pair()
    if args["dump"]:
        torch.cuda.memory._dump_snapshot(args["dump"])
        out["snapshot"] = args["dump"]
    if args["history"]:
        out["trace"] = trace_of(torch.cuda.memory._snapshot())
        torch.cuda.memory._record_memory_history(enabled=None)
    out["steps"] = steps
    out["step_ms"] = step_ms
    out["median_ms"] = statistics.median(step_ms[1:] or step_ms) if step_ms else None
    out["loss"] = float(loss.item()) if loss is not None else None
    out["max_allocated"] = torch.cuda.max_memory_allocated()
    out["max_reserved"] = torch.cuda.max_memory_reserved()
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    args = {"steps": 8, "history": "--history" in argv, "kineto": "--kineto" in argv,
            "dump": argv[argv.index("--dump-snapshot") + 1] if "--dump-snapshot" in argv
            else None}
    if "--steps" in argv:
        args["steps"] = int(argv[argv.index("--steps") + 1])
    try:
        out = run(args)
    except ImportError as e:
        out = {"mode": mode_name(), "skipped": "no torch: %s" % e}
    with open(argv[1], "w") as f:
        json.dump(out, f)
    print("torch_probe: %s: %s" % (out["mode"], out.get("skipped") or
                                   "median step %.2f ms" % out["median_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
