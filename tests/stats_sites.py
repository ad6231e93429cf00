"""stats_sites.py - the allocation sites of `memflow stats --format json`,
one line each, for the call-stack tests to compare exactly:

  SITE allocs=N bytes=N peak_live=N live_end=N at_peak=N/BLOCKS
  frames SITE: FUNCTION@FILE:LINE < ...      (with --frames; file base name)
  total allocs=N sites_allocs=N              (the device's and the sites' sum)

Usage: stats_sites.py [--frames] STATS.json   (device cpu/0)
"""
import json
import os
import sys

frames = sys.argv[1] == "--frames"
stats = json.load(open(sys.argv[-1]))
if "sites" not in stats:
    print("no sites")
    sys.exit(0)
at_peak = {h["site"]: h for p in stats["at_peak"] if p["device"] == "cpu/0" for h in p["by_site"]}
total = 0
for s in sorted(stats["sites"], key=lambda s: s["site"]):
    if s["device"] != "cpu/0":
        continue
    total += s["alloc_count"]
    held = at_peak.get(s["site"], {"bytes": 0, "blocks": 0})
    print("%s allocs=%d bytes=%d peak_live=%d live_end=%d at_peak=%d/%d" % (
        s["site"], s["alloc_count"], s["alloc_bytes"], s["peak_live_bytes"],
        s["live_bytes_end"], held["bytes"], held["blocks"]))
    if frames:
        print("frames %s: %s" % (s["site"], " < ".join(
            "%s@%s:%d" % (f["function"], os.path.basename(f["file"] or "?"), f["line"])
            for f in s["frames"])))
device = [d for d in stats["devices"] if d["device"] == "cpu/0"][0]
print("total allocs=%d sites_allocs=%d" % (device["alloc_count"], total))
