"""serve_client.py - drive tests/serve_feed (a program recording into its
live log on command) and `memflow serve` on that log, for tests/serve.sh and
bench/run.sh."""
import subprocess


class Session:
    def __init__(self, memflow, feed_prog, scratch):
        """memflow: the command (a list); feed_prog: tests/serve_feed;
        scratch: the folder of the log."""
        self.feed = subprocess.Popen([feed_prog, scratch], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.log = self.feed.stdout.readline().decode().strip()
        self.serve = subprocess.Popen(memflow + ["serve", self.log], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE)

    def record(self, command):
        """alloc N, free N: serve_feed records and answers when done."""
        self.feed.stdin.write((command + "\n").encode())
        self.feed.stdin.flush()
        assert self.feed.stdout.readline() == b"done\n"

    def ask(self, *fields):
        """One request (fields joined by TAB); (status, body) of the answer."""
        self.serve.stdin.write(("\t".join(fields) + "\n").encode())
        self.serve.stdin.flush()
        head = self.serve.stdout.readline().decode()
        status, n = head.rstrip("\n").split("\t")
        body = self.serve.stdout.read(int(n))
        assert len(body) == int(n), (head, body)
        return status, body.decode()

    def counts(self):
        """The server's status: records_scanned, events_decoded, events_fed,
        staged (1: it reads the log as one a stage copies into)."""
        status, body = self.ask("status")
        assert status == "ok", body
        return {k: int(v) for k, v in (line.split() for line in body.splitlines())}

    def close(self):
        """EOF ends the server; quit ends the program; both exit 0."""
        self.serve.stdin.close()
        assert self.serve.wait(timeout=60) == 0
        self.feed.stdin.write(b"quit\n")
        self.feed.stdin.close()
        assert self.feed.wait(timeout=60) == 0
