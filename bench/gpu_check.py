#!/usr/bin/env python3
"""gpu_check.py - what the GPU-machine capture shows, probe by probe.

usage: gpu_check.py CAPTURE_DIR

CAPTURE_DIR is the unpacked archive of `bench/gpu-remote.sh capture`, after
`bench/gpu-remote.sh render` added NAME.blocks.json (bench/gpu_blocks) for
every probe folder NAME/.  Prints a plain-text report: for each probe what
was made against what memflow recorded, and the costs as ratios of medians.
Only the standard library; a probe whose program did not run says so.
"""
import glob
import json
import os
import pickle
import re
import statistics
import sys

KIND = {"heap": 0, "device": 1, "pinned": 2, "managed": 3, "pool": 4, "other": 5, "vmm": 6}
FLAG_REGISTERED = 0x10
FLAG_SUBBLOCK = 0x20
NOTE_NAMES = {1: "GPU_DROPPED", 2: "GPU_OFF", 3: "SCOPE_OVERFLOW", 4: "GPU_NO_DRIVER",
              5: "GPU_NOT_INJECTED", 6: "GPU_CUPTI_BUSY", 7: "GPU_CUPTI_VERSION",
              8: "GPU_BAD_TIME"}


class Probe:
    """One probe folder: its program's output and the GPU side of its logs."""

    def __init__(self, top, name):
        self.name = name
        self.out = read(os.path.join(top, name + ".out"))
        blocks = os.path.join(top, name + ".blocks.json")
        self.logs = json.load(open(blocks))["logs"] if os.path.exists(blocks) else []
        self.allocs = [a for log in self.logs for a in log["allocs"]]
        # blocks dated by PyTorch's history (time_us: on its log's microsecond
        # grid), by identity: each against its own log's clock anchor
        self.history_timed = {id(a) for log in self.logs for a in log["allocs"]
                              if on_us_grid(a[5], log)}
        self.frees = [f for log in self.logs for f in log["frees"]]
        self.notes = [n for log in self.logs for n in log["notes"]]
        self.samples = [s for log in self.logs for s in log["samples"]]

    def ran(self):
        return bool(self.logs)

    def note_text(self):
        counts = {}
        for code, value in self.notes:
            name = NOTE_NAMES.get(code, str(code))
            counts[name] = counts.get(name, 0) + (value if code in (1, 8) else 1)
        return ", ".join("%s %d" % kv for kv in sorted(counts.items())) or "none"

    def memflow_lines(self):
        return [line for line in self.out.splitlines() if line.startswith("memflow")]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def head(probe, report):
    report.append("== %s" % probe.name)
    if not probe.ran():
        first = probe.out.strip().splitlines()[:3]
        report.append("   no log: the program did not run here (%s)" % " / ".join(first))
        return False
    report.append("   GPU blocks %d, frees %d, snapshots %d, notes: %s" %
                  (len(probe.allocs), len(probe.frees), len(probe.samples), probe.note_text()))
    for line in probe.memflow_lines():
        report.append("   said: " + line)
    return True


def check_kinds(probe, report):
    if not head(probe, report):
        return
    for m in re.finditer(r"^made (\w+) (\d+) (\d+)$", probe.out, re.M):
        kind, count, size = m.group(1), int(m.group(2)), int(m.group(3))
        want_kind = KIND.get({"array": "device", "registered": "pinned"}.get(kind, kind))
        got = [a for a in probe.allocs if a[6] == "kinds_%s:" % kind]
        right = [a for a in got if a[1] == want_kind and
                 (kind != "registered" or a[2] & FLAG_REGISTERED)]
        report.append("   %-10s made %d (%d bytes), recorded %d in its scope, %d of kind %s%s" %
                      (kind, count, size, len(got), len(right), want_kind,
                       "" if len(right) == count else "   <-- MISMATCH"))
    for m in re.finditer(r"^static (\w+) (\d+)$", probe.out, re.M):
        named = [a for a in probe.allocs if a[7] == m.group(1)]
        report.append("   static %-14s %s bytes: %d block(s) named so, sizes %s" %
                      (m.group(1), m.group(2), len(named), sorted({a[4] for a in named})))
    sources = sorted({a[7] for a in probe.allocs if a[6] == "<unk>:" and a[7] != "unknown"})
    report.append("   untagged blocks name: %s" % (", ".join(sources) or "nothing"))


def check_stress(probe, report):
    if not head(probe, report):
        return
    m = re.search(r"allocated (\d+) x (\d+) in (\d+) scopes", probe.out)
    if not m:
        report.append("   the program did not finish its allocations")
        return
    blocks, size, scopes = (int(g) for g in m.groups())
    mine = [a for a in probe.allocs if a[4] == size and re.fullmatch(r"layer\d\d:", a[6])]
    per_scope = {}
    for a in mine:
        per_scope[a[6]] = per_scope.get(a[6], 0) + 1
    even = set(per_scope.values()) == {blocks // scopes} and len(per_scope) == scopes
    addrs = {a[3] for a in mine}
    freed = sum(1 for f in probe.frees if f[2] in addrs)
    cut = probe.out.count("CUPTI activity buffer:")
    report.append("   %d allocations made, %d recorded in their layerNN: scope (%s), "
                  "untagged of that size %d; %d of them freed; walks cut short %d; %s" %
                  (blocks, len(mine), "every scope exact" if even else "UNEVEN",
                   sum(1 for a in probe.allocs if a[4] == size and a[6] == "<unk>:"),
                   freed, cut, re.search(r"dumps \d+[^\n]*", probe.out).group(0)
                   if "dumps" in probe.out else "no dumps"))


def check_clock(probe, report):
    if not head(probe, report):
        return
    first_at = {}
    for a in sorted(probe.allocs, key=lambda a: a[5]):
        first_at.setdefault(a[3], a)
    rows = []
    for m in re.finditer(r"^bracket (\d+) (0x[0-9a-f]+) (\d+) (\d+)$", probe.out, re.M):
        addr, before, after = int(m.group(2), 16), int(m.group(3)), int(m.group(4))
        a = first_at.get(addr)
        if not a:
            report.append("   bracket %s: block 0x%x not in the log" % (m.group(1), addr))
            continue
        t = a[5]
        off = 0 if before <= t <= after else (t - after if t > after else t - before)
        rows.append((before, after, t))
        report.append("   bracket %s: recorded %+d ns outside [before, after] (width %d ns)" %
                      (m.group(1), off, after - before))
    if len(rows) >= 2:
        # CLOCK_MONOTONIC between the first and the last allocation lies in
        # [lo, hi] (the brackets); the recorded interval inside it means no
        # drift measurable at the brackets' widths.
        lo, hi = rows[-1][0] - rows[0][1], rows[-1][1] - rows[0][0]
        rec = rows[-1][2] - rows[0][2]
        out = 0 if lo <= rec <= hi else (rec - hi if rec > hi else rec - lo)
        report.append("   first to last: %d ns recorded, CLOCK_MONOTONIC %d .. %d ns: %+d ns "
                      "outside; drift bound by the brackets +-%.0f ppm" %
                      (rec, lo, hi, out, (hi - lo) / 2 / ((lo + hi) / 2) * 1e6))


class DataOnly(pickle.Unpickler):
    """A snapshot read as data: no class is ever looked up (no code runs)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s: a snapshot is data" % (module, name))


def snapshot_trace(path):
    """The allocator trace of a _dump_snapshot pickle, as torch_probe's
    trace_of writes it (device 0 first), or [] when unreadable."""
    try:
        with open(path, "rb") as f:
            snap = DataOnly(f).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        return []
    return [{"device": d, "action": e.get("action"), "addr": e.get("addr", 0),
             "size": e.get("size", 0), "time_us": e.get("time_us", 0)}
            for d, trace in enumerate(snap.get("device_traces", [])) for e in trace]


def on_us_grid(t, log):
    """Whether t (ns on log's clock) is a whole Unix-epoch microsecond."""
    real_minus_mono = log["start_real_ns"] - log["start_mono_ns"]
    return t == (t + real_minus_mono) // 1000 * 1000 - real_minus_mono


def history_time(probe, a):
    """Whether block a is dated by the history itself (time_us on the log's
    clock), not by CUPTI: an exact time on its own log's microsecond grid
    (1 CUPTI time in 1,000 falls there too; against every log of a probe of
    18 processes, as before, 1 in 56 did: a segment of torch_caching went
    unmatched on the H100)."""
    return id(a) in probe.history_timed


def match_torch(probe, torch_out, report, trace=None,
                actions=("segment_alloc", "segment_map", "alloc")):
    """PyTorch's allocator trace against memflow's blocks: address, size,
    time (alloc only where each tensor is a cudaMalloc: no caching)."""
    trace = trace or torch_out.get("trace") or []
    pair = torch_out.get("clock_start")
    if not trace or not pair:
        report.append("   no allocator trace to match (%d memflow blocks)" % len(probe.allocs))
        return
    real_minus_mono = pair["real_ns"] - pair["mono_ns"]
    end = torch_out.get("clock_end")
    if end:
        report.append("   CLOCK_REALTIME - CLOCK_MONOTONIC moved %d ns during the run" %
                      (end["real_ns"] - end["mono_ns"] - real_minus_mono))
    by_addr = {}
    for a in probe.allocs:
        by_addr.setdefault(a[3], []).append(a)
    for action, kinds in (("segment_alloc", (KIND["device"],)), ("segment_map", (KIND["vmm"],)),
                          ("alloc", (KIND["device"], KIND["pool"]))):
        events = [e for e in trace if e["action"] == action]
        if not events or action not in actions:
            continue
        matched, offsets = 0, []
        for e in events:
            t = e["time_us"] * 1000 - real_minus_mono
            if action == "segment_map":  # pages mapped one by one, covering the range
                pages = [a for addr, blks in by_addr.items() if e["addr"] <= addr <
                         e["addr"] + e["size"] for a in blks if a[1] in kinds]
                covered = sum(a[4] for a in pages if abs(a[5] - t) < 1e9)
                ok = covered >= e["size"]
                near = min(pages, key=lambda a: abs(a[5] - t)) if pages else None
            else:
                near_list = [a for a in by_addr.get(e["addr"], []) if a[4] == e["size"]
                             and a[1] in kinds and not a[2] & FLAG_SUBBLOCK
                             and not history_time(probe, a)]
                near = min(near_list, key=lambda a: abs(a[5] - t)) if near_list else None
                ok = near is not None
            if ok:
                matched += 1
                offsets.append((t, near[5] - t))
        line = "   %s: %d in PyTorch's trace, %d matched by address, size" % (
            action, len(events), matched)
        if offsets:
            offs = [o for _, o in offsets]
            line += "; memflow - PyTorch time: median %.1f us (min %.1f, max %.1f)" % (
                statistics.median(offs) / 1e3, min(offs) / 1e3, max(offs) / 1e3)
            if len(offsets) > 2 and offsets[-1][0] > offsets[0][0]:
                span = offsets[-1][0] - offsets[0][0]
                line += ", drift %.1f ppm over %.1f s" % (
                    (offsets[-1][1] - offsets[0][1]) / span * 1e6, span / 1e9)
        report.append(line)


def check_torch(top, probe, report):
    torch_out = load_json(os.path.join(top, probe.name + ".json")) or {}
    plain = load_json(os.path.join(top, probe.name + "_plain.json")) or {}
    timed = load_json(os.path.join(top, probe.name + "_timed.json")) or {}
    if torch_out.get("skipped"):
        report.append("== %s\n   skipped: %s" % (probe.name, torch_out["skipped"]))
        return
    if not head(probe, report):
        return
    kinds = {}
    for a in probe.allocs:
        kinds[a[1]] = kinds.get(a[1], 0) + 1
    report.append("   blocks by kind: %s; peak allocated %s, reserved %s" % (
        ", ".join("%s %d" % (k, kinds[v]) for k, v in KIND.items() if v in kinds),
        torch_out.get("max_allocated"), torch_out.get("max_reserved")))
    # tensors are cudaMalloc'd only without the cache: elsewhere a tensor at
    # a segment's start of its size would match by chance
    match_torch(probe, torch_out, report, None, ("segment_alloc", "segment_map") +
                (("alloc",) if "no_caching" in probe.name else ()))
    if "kineto_cuda_events" in torch_out:
        report.append("   Kineto saw %d CUDA events inside torch.profiler" %
                      torch_out["kineto_cuda_events"])
    if plain.get("median_ms") and timed.get("median_ms"):
        report.append("   training step: median %.2f ms plain, %.2f ms under memflow run: %.2fx" %
                      (plain["median_ms"], timed["median_ms"],
                       timed["median_ms"] / plain["median_ms"]))


def check_tensors(top, probe, report):
    """The tensor level: PyTorch's allocator history in the log (live, under
    memflow run, or imported from the snapshot the step dumped)."""
    torch_out = {}
    if probe.name != "torch_import":
        torch_out = load_json(os.path.join(top, probe.name + ".json")) or {}
        if torch_out.get("skipped"):
            report.append("== %s\n   skipped: %s" % (probe.name, torch_out["skipped"]))
            return
    stats = load_json(os.path.join(top, probe.name, "render", "stats.json"))
    report.append("== %s" % probe.name)
    for line in probe.memflow_lines():
        report.append("   said: " + line)
    if not stats:
        report.append("   no statistics (not rendered)")
        return
    t = stats.get("pytorch", {})
    report.append("   history: %s, time axis %s, scopes %s%s; inconsistent entries %d" % (
        "yes" if t.get("history") else "NO", t.get("time_axis"), t.get("scopes"),
        ", off: " + t["off"] if t.get("off") else "", t.get("inconsistent", 0)))
    if t.get("segments_matched") or t.get("segments_unmatched"):
        report.append("   segments against CUPTI: %d matched by address, %d not; history - "
                      "CUPTI time: mean %.1f us (%.1f .. %.1f)" % (
                          t["segments_matched"], t["segments_unmatched"],
                          t["offset_mean_ns"] / 1e3, t["offset_min_ns"] / 1e3,
                          t["offset_max_ns"] / 1e3))
    for g in stats.get("gpu_memory", []):
        report.append("   %s: %d tensors (%d from the cache, %d live before), peaks: reserved "
                      "%d bytes, allocated %d bytes" % (
                          g["device"], g["tensors"], g["from_cache"], g["before_recording"],
                          g["reserved_peak_bytes"], g["allocated_peak_bytes"]))
    scopes = sorted({s["scope"] for s in stats.get("gpu_scopes", [])})
    report.append("   tensor scopes: %s" % (", ".join(scopes[:12]) or "none"))
    for o in stats.get("ooms", []):
        report.append("   out of memory at %d ns (%s): %d asked" % (o["time_ns"], o["route"],
                                                                   o["requested"]))
    if not stats.get("gpu_memory"):
        report.append("   NO TENSORS in the log")
    if "kineto_cuda_events" in torch_out:
        report.append("   Kineto saw %d CUDA events inside torch.profiler" %
                      torch_out["kineto_cuda_events"])
    snapshot = os.path.join(top, probe.name + ".pickle")
    if torch_out.get("clock_start") and os.path.exists(snapshot):
        report.append("   the step's own snapshot against CUPTI's blocks:")
        trace = snapshot_trace(snapshot)
        match_torch(probe, torch_out, report, trace, ("segment_alloc", "segment_map"))
        outside_segments(probe, trace, report)


def outside_segments(probe, trace, report):
    """The device memory CUPTI recorded that is none of PyTorch's segments
    (libraries' own cudaMalloc, module statics): what torch's counters miss."""
    segments = {(e["addr"], e["size"]) for e in trace if e["action"] == "segment_alloc"}
    outside = [a for a in probe.allocs if a[1] == KIND["device"] and not a[2] & FLAG_SUBBLOCK
               and not history_time(probe, a) and (a[3], a[4]) not in segments]
    big = [a for a in outside if a[4] >= 65536]
    report.append("   device memory outside PyTorch's segments: %d blocks, %d bytes; of 64 KiB "
                  "and up: %s" % (len(outside), sum(a[4] for a in outside), ", ".join(
                      "%d bytes in %s (%s)" % (a[4], a[6], a[7]) for a in big) or "none"))


def loop_median(path):
    values = [float(m) for m in re.findall(r"([\d.]+) ns per pair", read(path))]
    return statistics.median(values) if values else None


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = argv[1]
    report = ["memflow GPU capture, checked (%s)" % top, read(os.path.join(top, "steps.txt"))]
    names = sorted(os.path.basename(d.rstrip("/")) for d in glob.glob(os.path.join(top, "*/")))
    checks = {"memory_kinds": check_kinds, "alloc_stress": check_stress,
              "clock_probe": check_clock}
    for name in names:
        if name.endswith("_timed"):
            continue  # the timing runs: reported with their probe
        probe = Probe(top, name)
        if not probe.ran() and not probe.out:
            continue  # a folder made for a step that was not run (CAPTURE_ONLY)
        if name in checks:
            checks[name](probe, report)
        elif name in ("torch_tensors", "torch_import", "torch_kineto_cupti_off"):
            check_tensors(top, probe, report)
        elif name.startswith("torch"):
            check_torch(top, probe, report)
        else:
            head(probe, report)
    plain = loop_median(os.path.join(top, "alloc_loop.plain"))
    profiled = loop_median(os.path.join(top, "alloc_loop.profiled"))
    if plain and profiled:
        report.append("== cudaMalloc/cudaFree pair: median %.0f ns plain, %.0f ns under memflow "
                      "run: %.2fx" % (plain, profiled, profiled / plain))
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
