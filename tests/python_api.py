"""Tests of the memflow Python package in one process, without memflow run.

Run by tests/python_api.sh with the build tree's python/ on PYTHONPATH and
SCRATCH naming a fresh folder.  The recorder is one per process: the log is
opened once (in SCRATCH/log) and every test reads what it needs back through
memflow's own statistics (dumps) or tests/tracecheck.
"""
import asyncio
import contextvars
import json
import os
import subprocess
import sys
import threading
import unittest

import memflow
from memflow import profiler, Profiler, profile

SCRATCH = os.environ["SCRATCH"]
MEMFLOW = os.environ["MEMFLOW"]
TRACECHECK = os.path.join(os.environ["top_builddir"], "tests", "tracecheck")


def setUpModule():
    profiler.set_config(path=os.path.join(SCRATCH, "log"))


def scopes_of_records():
    """This process's log as tracecheck -s lines (push/pop/trace)."""
    out = subprocess.run([TRACECHECK, "-s", memflow._memflow.log_path()], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    return out.splitlines()


class Config(unittest.TestCase):
    def test_unknown_key_is_named(self):
        with self.assertRaises(ValueError) as e:
            profiler.set_config(sample_rate=5, profile_everything=True)
        text = str(e.exception)
        self.assertTrue(text.startswith("memflow.profiler.set_config: unknown key "
                                        "'profile_everything'; accepted keys: "), text)
        self.assertIn("sample_rate", text)

    def test_bad_value_is_named(self):
        for key, value, accepted in [("sample_rate", -1, "a whole number"),
                                     ("profile_memory", "maybe", "true/false"),
                                     ("formats", ["memory_flow.svg", "x.html"], "comma-separated"),
                                     ("dump_period", 0, "seconds from 0.001 to 86400")]:
            with self.assertRaises(ValueError) as e:
                profiler.set_config(**{key: value})
            self.assertIn("key '%s'" % key, str(e.exception))
            self.assertIn(accepted, str(e.exception))

    def test_mxnet_keys_accepted(self):
        profiler.set_config(profile_symbolic=True, profile_imperative=False,
                            profile_process="worker", profile_all=False,
                            aggregate_stats=True, continuous_dump=False)
        with self.assertRaises(ValueError) as e:
            profiler.set_config(profile_process="client")
        self.assertEqual(str(e.exception), "memflow.profiler.set_config: bad value 'client' "
                                           "for key 'profile_process'; accepted: 'worker', "
                                           "'server'")

    def test_bad_state_and_process(self):
        with self.assertRaises(ValueError) as e:
            profiler.set_state("go")
        self.assertEqual(str(e.exception),
                         "memflow.profiler.set_state: bad state 'go'; accepted: 'run', 'stop'")
        with self.assertRaises(ValueError) as e:
            profiler.pause(profile_process="master")
        self.assertIn("bad profile_process 'master'", str(e.exception))


class Scopes(unittest.TestCase):
    def setUp(self):
        profiler.set_state("run")

    def test_mxnet_rules(self):
        self.assertEqual(profiler.current_scope(), "<unk>:")
        with profiler.scope("net") as name:
            self.assertEqual(name, "net:")
            self.assertEqual(profiler.current_scope(), "net:")
            with profiler.scope("dense0:"):
                self.assertEqual(profiler.current_scope(), "net:dense0:")
                self.assertEqual(memflow._memflow.thread_scope(), "net:dense0:")
                with profiler.scope("backward", append_mode=False):
                    self.assertEqual(profiler.current_scope(), "backward:")
                self.assertEqual(profiler.current_scope(), "net:dense0:")
            with profiler.scope():
                self.assertEqual(profiler.current_scope(), "net:<unk>:")
        self.assertEqual(profiler.current_scope(), "<unk>:")
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")
        s = profiler.scope(name="x", append_mode=False)
        self.assertEqual((s.name, s.append_mode), ("x:", False))

    def test_exception_leaves_the_scope(self):
        with self.assertRaises(KeyError):
            with profiler.scope("failing"):
                raise KeyError("x")
        self.assertEqual(profiler.current_scope(), "<unk>:")
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")

    def test_one_object_entered_twice(self):
        s = profiler.scope("again")
        with s:
            with s:
                self.assertEqual(profiler.current_scope(), "again:again:")
        self.assertEqual(profiler.current_scope(), "<unk>:")

    def test_bad_names(self):
        with self.assertRaises(TypeError):
            profiler.scope(3)
        with self.assertRaises(ValueError):
            profiler.scope("a\0b")

    def test_per_thread(self):
        seen = []

        def worker():
            seen.append(profiler.current_scope())
            with profiler.scope("worker"):
                seen.append(memflow._memflow.thread_scope())

        with profiler.scope("main"):
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            self.assertEqual(profiler.current_scope(), "main:")
        self.assertEqual(seen, ["<unk>:", "worker:"])

    def test_per_context(self):
        def inside():
            with profiler.scope("copied"):
                return profiler.current_scope()

        with profiler.scope("outer"):
            ctx = contextvars.copy_context()
        self.assertEqual(ctx.run(inside), "outer:copied:")
        self.assertEqual(profiler.current_scope(), "<unk>:")

    def test_asyncio_tasks_keep_their_own_scopes(self):
        seen = {}

        async def task(name, first, second):
            with profiler.scope(name):
                await first.wait()
                seen[name] = profiler.current_scope()
                second.set()
                await asyncio.sleep(0)

        async def main():
            a, b = asyncio.Event(), asyncio.Event()
            # a enters first, b second; a reads its scope while b's is open
            ta = asyncio.ensure_future(task("a", a, b))
            tb = asyncio.ensure_future(task("b", asyncio.Event(), a))
            await asyncio.sleep(0)
            a.set()
            await ta
            tb.cancel()

        asyncio.run(main())
        self.assertEqual(seen["a"], "a:")  # the thread's top was b: then
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")

    def test_scope_records(self):
        with profiler.scope("rec_net"):
            with profiler.scope("rec_dense0"):
                pass
        lines = [l for l in scopes_of_records() if "rec_" in l]
        self.assertEqual(lines, ["push rec_net: 1 t0", "push rec_net:rec_dense0: 2 t0",
                                 "pop rec_net:rec_dense0: 1 t0", "pop rec_net: 0 t0"])


class TraceObjects(unittest.TestCase):
    def setUp(self):
        profiler.set_state("run")

    def test_counter_arithmetic(self):
        d = profiler.Domain("arith")
        c = d.new_counter("c", 10)
        self.assertEqual(c.value, 10)
        c += 5
        c -= 2
        c.increment()
        c.decrement(4)
        c.set_value(c.value * 2)
        self.assertEqual(c.value, 20)
        self.assertEqual((str(c), str(d)), ("c", "arith"))

    def test_records(self):
        d = profiler.Domain("py_domain")
        task, frame = profiler.Task(d, "py_task"), d.new_frame("py_frame")
        event = profiler.Event("py_event")
        counter = profiler.Counter(d, "py_counter", value=3)
        frame.start()
        with task:
            event.start()
            counter += 4
            event.stop()
        frame.stop()
        counter.decrement(10)
        d.new_marker("py_mark").mark()
        profiler.Marker(d, "py_mark_t").mark("thread")
        profiler.Marker(None, "py_mark_g").mark(scope="global")
        lines = [l for l in scopes_of_records() if "py_" in l]
        ids = {l.split()[3]: l.split()[4] for l in lines if "begin" in l}
        self.assertEqual(lines, [
            "trace counter py_domain py_counter 3",
            "trace frame_begin py_domain py_frame " + ids["py_frame"],
            "trace task_begin py_domain py_task " + ids["py_task"],
            "trace event_begin - py_event " + ids["py_event"],
            "trace counter py_domain py_counter 7",
            "trace event_end - py_event " + ids["py_event"],
            "trace task_end py_domain py_task " + ids["py_task"],
            "trace frame_end py_domain py_frame " + ids["py_frame"],
            "trace counter py_domain py_counter -3",
            "trace marker py_domain py_mark 0 process",
            "trace marker py_domain py_mark_t 0 thread",
            "trace marker - py_mark_g 0 global"])
        self.assertEqual(len(set(ids.values())), 3)

    def test_errors(self):
        with self.assertRaises(ValueError) as e:
            profiler.Marker(None, "m").mark("galaxy")
        self.assertIn("bad scope 'galaxy'", str(e.exception))
        with self.assertRaises(TypeError):
            profiler.Task("not a domain", "t")
        with self.assertRaises(OverflowError):
            profiler.Counter(None, "big", 2 ** 64)


class Statistics(unittest.TestCase):
    def test_record_alloc_in_dumps(self):
        profiler.set_state("run")
        with profiler.scope("pool_layer"):
            memflow.record_alloc("gpu/1", 0x10000, 5120, 8192, "weight", reused=True)
            memflow.record_alloc("gpu/1", 0x20000, 3000)
        memflow.record_free("gpu/1", 0x20000)
        stats = json.loads(profiler.dumps(format="json"))
        rows = [(s["scope"], s["device"], s["alloc_count"], s["alloc_bytes"], s["live_bytes_end"])
                for s in stats["scopes"] if s["scope"] == "pool_layer:"]
        self.assertEqual(rows, [("pool_layer:", "gpu/1", 2, 8120, 5120)])
        with self.assertRaises(ValueError) as e:
            memflow.record_alloc("tpu/0", 1, 1)
        self.assertIn("bad device 'tpu/0'", str(e.exception))

    def test_device_storage_is_the_usage_counter(self):
        # MXNet's Device Storage row aggregates the device's usage counter, as
        # the seed's example "Memory: cpu/0  3  96.0600  96.0760": usage went
        # from 96.06 to 96.076 kB and back, three updates
        profiler.set_state("run")
        memflow.record_alloc("gpu/7", 0x700000, 96060)
        memflow.record_alloc("gpu/7", 0x800000, 16)
        memflow.record_free("gpu/7", 0x800000)
        rows = [line.split() for line in profiler.dumps().splitlines()
                if line.startswith("Memory: gpu/7 ")]
        self.assertEqual(rows, [["Memory:", "gpu/7", "3", "96.0600", "96.0760", "96.0653"]])
        d = [x for x in json.loads(profiler.dumps(format="json"))["devices"]
             if x["device"] == "gpu/7"][0]
        self.assertEqual((d["use_count"], d["min_use"], d["max_use"], d["avg_use"]),
                         (3, 96060, 96076, 96065.333))
        self.assertEqual((d["alloc_count"], d["min_size"], d["max_size"], d["avg_size"]),
                         (2, 16, 96060, 48038.0))

    def test_dumps_arguments(self):
        profiler.set_state("run")
        self.assertIn("Device Storage", profiler.dumps())
        with self.assertRaises(ValueError) as e:
            profiler.dumps(format="yaml")
        self.assertEqual(str(e.exception), "memflow.profiler.dumps: bad format 'yaml'; "
                                           "accepted: table, json")
        with self.assertRaises(ValueError) as e:
            profiler.dumps(sort_by="size")
        self.assertIn("bad sort_by 'size'", str(e.exception))


def run_child(code):
    """Run code in a fresh interpreter (its own recorder) in SCRATCH."""
    return subprocess.run([sys.executable, "-c", code], cwd=SCRATCH, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


class OwnProcess(unittest.TestCase):
    def test_mid_run_dumps(self):
        # dumps() while the program runs, under memflow run: memflow's own
        # frees are not the program's (each call added one "free of an
        # address never seen allocated"), and what the program holds is
        # live now, not leaked
        script = os.path.join(SCRATCH, "midrun.py")
        with open(script, "w") as f:
            f.write("import json\n"
                    "from memflow import profiler\n"
                    "profiler.set_state('run')\n"
                    "with profiler.scope('big'):\n"
                    "    big = bytearray(3000000)\n"
                    "d = [json.loads(profiler.dumps(format='json')) for _ in range(3)]\n"
                    "print(json.dumps([x['unknown_frees'] for x in d]))\n"
                    "print(json.dumps(d[-1]['leaks']))\n"
                    "print(json.dumps([(b['scope'], b['requested'])\n"
                    "                  for b in d[-1]['live_now'][:1]]))\n"
                    "print(profiler.dumps().split('Leaks')[1].split('Unknown')[0])\n")
        r = subprocess.run([MEMFLOW, "run", "--no-render", "-o", os.path.join(SCRATCH, "midrun"),
                            "--", sys.executable, script], cwd=SCRATCH,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[:1], ["[0, 0, 0]"], r.stderr)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[1:3], ["[]", '[["big:", 3000001]]'])
        table = lines[3:]
        self.assertEqual(table[:4], [" (largest blocks never freed, up to 20)", "=================",
                                     "none", ""])
        self.assertEqual(table[4], "Live now (largest blocks of processes still running, up to 20)")
        # ... with its site (the program's line 5) where the interpreter has
        # Python stacks (CPython 3.11's frame walker, the default)
        site = ["at", "<module>", "(midrun.py:5)"] if sys.version_info[:2] == (3, 11) else []
        self.assertEqual(table[7].split()[2:3] + table[7].split()[-(1 + len(site)):],
                         ["3000001", "big:unknown"] + site)

    def test_cpu_capture_warning_once(self):
        r = run_child("from memflow import profiler\n"
                      "profiler.set_config(path='warn')\n"
                      "profiler.set_state('run'); profiler.set_state('stop')\n"
                      "profiler.set_state('run')\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("memflow: this process records scopes, trace objects, "
                                        "GPU memory (CUPTI) and record_alloc() blocks, but not "
                                        "its CPU heap: for that, run it as `memflow run -- "), 1,
                         r.stderr)

    def test_gpu_plugin_named_for_the_driver(self):
        if memflow._memflow.gpu_plugin() is None:
            self.skipTest("memflow was built without CUPTI")
        code = ("import os\nfrom memflow import profiler, _memflow\n"
                "profiler.set_config(path='gpu')\n"
                "profiler.set_state('run')\n"
                "print(os.environ.get('CUDA_INJECTION64_PATH') == _memflow.gpu_plugin(),"
                " os.path.basename(_memflow.gpu_plugin()))\n")
        r = run_child(code)
        self.assertEqual(r.stdout, "True libmemflow-cuda.so\n", r.stderr)
        os.environ["CUDA_INJECTION64_PATH"] = "/the/users/own.so"  # kept as it is
        try:
            r = run_child(code)
        finally:
            del os.environ["CUDA_INJECTION64_PATH"]
        self.assertEqual(r.stdout, "False libmemflow-cuda.so\n", r.stderr)

    def test_megengine_profiler_block_and_decorator(self):
        r = run_child(
            "import os\n"
            "from memflow import Profiler, profile, profiler, _memflow\n"
            "print(os.getpid())\n"
            "with Profiler(path='mge_block', formats=['memory_flow.svg', 'stats.json']) as p:\n"
            "    assert _memflow.recording()\n"
            "    with profiler.scope('inblock'):\n"
            "        import memflow; memflow.record_alloc('gpu/0', 4096, 1000)\n"
            "print(_memflow.recording(), p.path, p.formats)\n"
            "@profile(path='mge_deco', format='chrome_timeline.json')\n"
            "def step(n):\n"
            "    return n + 1\n"
            "print(step(1), _memflow.recording())\n"
            "try:\n"
            "    Profiler(path='x', frequency=3)\n"
            "except TypeError as e:\n"
            "    print(e)\n"
            "with Profiler(path='outer'):\n"
            "    try:\n"
            "        Profiler(path='inner').start()\n"
            "    except RuntimeError as e:\n"
            "        print(e)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        pid, *lines = r.stdout.splitlines()
        self.assertEqual(lines, [
            "False mge_block ['memory_flow.svg', 'stats.json']",
            "2 False",
            "memflow.Profiler: unknown option 'frequency'; accepted: path, format, formats, "
            "sample_rate, profile_device, num_tensor_watch, enable_cupti",
            "memflow.Profiler: a profiler block is already open (blocks do not nest)"])
        # the log opened in the first block's path; the GPU CSV comes with GPU blocks
        csv = "gpu_memory_profile-pid_%s.csv" % pid
        self.assertEqual(sorted(os.listdir(os.path.join(SCRATCH, "mge_block"))),
                         [csv, "memflow-%s.mfl" % pid, "memory_flow.svg", "stats.json"])
        self.assertEqual(sorted(os.listdir(os.path.join(SCRATCH, "mge_deco"))),
                         ["chrome_timeline.json", csv])
        with open(os.path.join(SCRATCH, "mge_block", "stats.json")) as f:
            stats = json.load(f)
        self.assertEqual([(s["scope"], s["alloc_bytes"]) for s in stats["scopes"]],
                         [("inblock:", 1000)])
        with open(os.path.join(SCRATCH, "mge_deco", "chrome_timeline.json")) as f:
            self.assertIn("traceEvents", json.load(f))


if __name__ == "__main__":
    unittest.main(verbosity=2)
