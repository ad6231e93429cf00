#!/bin/sh
# python_trace_chrome.sh - MXNet's profiler objects from Python, in the Chrome
# trace: tasks and frames as async spans (b/e, cat = domain, one id per
# object), events as B/E on their thread, counters as C series, markers as
# instants with their scope.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
cd "$SCRATCH"
"$PYTHON" - > program.out 2> program.err <<'PY' || fail "program: $(cat program.err)"
import threading
from memflow import profiler
profiler.set_config(path="out", formats="profile.json", filename="trace.json")
d = profiler.Domain("MyDomain")
task, frame, event = d.new_task("load"), d.new_frame("iteration"), profiler.Event("sum")
counter = d.new_counter("queue")
profiler.set_state("run")
frame.start()
task.start()
event.start()
counter.set_value(100)
counter += 5
counter -= 150
event.stop()
threading.Thread(target=task.stop).start()  # a task may end on another thread
frame.stop()
d.new_marker("epoch").mark()
d.new_marker("step").mark("thread")
profiler.Marker(d, "all").mark("global")
profiler.set_state("stop")
profiler.dump()
PY
test -s out/trace.json || fail "no out/trace.json"
"$PYTHON" - out/trace.json <<'PY' || fail "the trace objects in out/trace.json are not as expected"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
def named(name, phases):
    return [e for e in events if e.get("name") == name and e.get("ph") in phases]
def fail(what):
    sys.exit("python_trace_chrome: %s" % what)
spans = {}
for name in ("load", "iteration"):
    got = named(name, "be")
    if [e["ph"] for e in got] != ["b", "e"]:
        fail("%s: phases %s, expected b then e" % (name, [e["ph"] for e in got]))
    if {e.get("cat") for e in got} != {"MyDomain"}:
        fail("%s: cat %s, expected MyDomain" % (name, [e.get("cat") for e in got]))
    if got[0].get("id") is None or str(got[0]["id"]) != str(got[1].get("id")):
        fail("%s: ids %s" % (name, [e.get("id") for e in got]))
    if got[0]["ts"] > got[1]["ts"]:
        fail("%s: ends before it begins" % name)
    spans[name] = str(got[0]["id"])
if spans["load"] == spans["iteration"]:
    fail("the task and the frame share an id")
got = named("sum", "BE")
if [e["ph"] for e in got] != ["B", "E"] or got[0].get("tid") != got[1].get("tid"):
    fail("event sum: %s" % got)
values = [list(e["args"].values()) for e in named("queue", "C")]
if values != [[100], [105], [-45]]:
    fail("counter queue: %s, expected [[100], [105], [-45]]" % values)
for name, scope in (("epoch", "p"), ("step", "t"), ("all", "g")):
    got = named(name, "iI")
    if len(got) != 1 or got[0].get("s") != scope:
        fail("marker %s: %s, expected one instant with s=%s" % (name, got, scope))
print("python_trace_chrome: spans, counter and markers as expected")
PY
echo "python_trace_chrome: ok"
