"""Test setup: makes `pserver_client` importable, records the run's counts for `bash .ci/run`
(tmp/test-results/, the format of tools/jest/results-reporter.js), and starts real clusters
through the local-cluster CLI, or single pservers, for the integration tests."""

import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

CLIENT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(CLIENT_ROOT))
sys.path.insert(0, CLIENT_ROOT)

RESULTS_DIR = os.path.join(REPO_ROOT, "tmp", "test-results")
CLI = os.path.join(REPO_ROOT, "dist", "libs", "local-cluster", "cli.js")
PSERVER_MAIN = os.path.join(REPO_ROOT, "dist", "apps", "pserver", "main.js")
GENERATE_CERTS = os.path.join(REPO_ROOT, "tools", "certs", "generate.sh")


# --- the results file -----------------------------------------------------------------------

class _Counts:
    def __init__(self):
        self.passed = set()
        self.failed = set()
        self.skipped = set()
        self.broken = 0


_counts = _Counts()


def pytest_collectreport(report):
    # A module that cannot be collected (an import error, a syntax error) is a broken suite.
    if report.failed:
        _counts.broken += 1


def pytest_runtest_logreport(report):
    if report.failed:
        _counts.failed.add(report.nodeid)
    elif report.skipped:
        _counts.skipped.add(report.nodeid)
    elif report.when == "call" and report.passed:
        _counts.passed.add(report.nodeid)


def pytest_sessionfinish(session):
    failed = _counts.failed
    summary = {
        "project": "clients/python",
        "passed": len(_counts.passed - failed),
        "failed": len(failed),
        "brokenSuites": _counts.broken,
        "skipped": len(_counts.skipped - failed),
    }
    os.makedirs(RESULTS_DIR, exist_ok=True)
    name = f"clients_python-{os.getpid()}-{int(time.time() * 1000)}.json"
    with open(os.path.join(RESULTS_DIR, name), "w", encoding="utf-8") as f:
        f.write(json.dumps(summary) + "\n")


# --- a real cluster ---------------------------------------------------------------------------

class LocalCluster:
    """A cluster run by the local-cluster CLI: one JSON line per command on stdin/stdout. The CLI
    stops everything and exits when its stdin closes, so the cluster dies with the runner."""

    def __init__(self, settings, log_dir):
        if not os.path.exists(CLI):
            raise RuntimeError(f"{CLI} is missing: run `npx nx run local-cluster:build-cli`")
        self._stderr = open(os.path.join(log_dir, "cli.stderr.log"), "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                "node",
                CLI,
                "--pservers", str(settings["pservers"]),
                "--spares", str(settings["spares"]),
                "--masters", str(settings["masters"]),
                "--block-size", str(settings["blockSize"]),
                "--log-dir", log_dir,
            ],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._lock = threading.Lock()
        self.ready = self._next(timeout=120)
        if self.ready.get("event") != "ready":
            raise RuntimeError(f"local-cluster did not start: {self.ready}")
        self.masters = self.ready["masters"]

    def _read(self):
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"local-cluster: no answer within {timeout} s") from None
        if line is None:
            raise RuntimeError(f"local-cluster exited (code {self.process.poll()}); see {self._stderr.name}")
        return json.loads(line)

    def command(self, line, timeout=60):
        """Sends one command (`serving`, `kill-serving <index>`) and returns its answer."""
        with self._lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            answer = self._next(timeout)
        if answer.get("event") == "error":
            raise RuntimeError(f"local-cluster: {answer['message']}")
        return answer

    def stop(self):
        try:
            if self.process.poll() is None:
                self.process.stdin.close()  # the CLI stops every process and exits
                self.process.wait(timeout=60)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            self.process.kill()
            self.process.wait()
        finally:
            self._stderr.close()


@pytest.fixture
def scenarios():
    with open(os.path.join(REPO_ROOT, "proto", "testdata", "conformance", "scenarios.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture
def cluster(scenarios, tmp_path):
    """One cluster per test, always stopped."""
    c = LocalCluster(scenarios["cluster"], str(tmp_path))
    try:
        yield c
    finally:
        c.stop()


# --- a single pserver -------------------------------------------------------------------------

class Pserver:
    """One standalone pserver (`node dist/apps/pserver/main.js`, built by `npx nx build pserver`,
    which the integration target's dependencies run) on a free loopback port. Its log goes to
    `<log_dir>/pserver.log`. It runs with --exit-on-stdin-close: `stop()` closes its stdin and
    waits, killing it by PID if it has not exited; if the test runner dies, it exits too."""

    def __init__(self, args, log_dir, timeout_s=60):
        if not os.path.exists(PSERVER_MAIN):
            raise RuntimeError(f"{PSERVER_MAIN} is missing: run `npx nx build pserver`")
        #: Where it writes its checkpoints (shard-0/ inside).
        self.checkpoint_dir = os.path.join(log_dir, "checkpoints")
        self._log = open(os.path.join(log_dir, "pserver.log"), "w", encoding="utf-8")
        self.process = subprocess.Popen(
            ["node", PSERVER_MAIN, "--port", "0", "--checkpoint-dir", self.checkpoint_dir,
             "--log-format", "json", "--exit-on-stdin-close", *args],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self._listening = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            address = self._listening.get(timeout=timeout_s)
        except queue.Empty:
            address = None
        if address is None:
            self.stop()
            raise RuntimeError(f"the pserver did not start listening; see {self._log.name}")
        #: The port it listens on (it binds 127.0.0.1).
        self.port = int(address.rsplit(":", 1)[1])

    def _read(self):
        for line in self.process.stdout:
            self._log.write(line)
            self._log.flush()
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "listening":
                self._listening.put(entry["address"])
        self._listening.put(None)  # it exited

    def stop(self):
        try:
            if self.process.poll() is None:
                self.process.stdin.close()  # --exit-on-stdin-close: a graceful stop
                self.process.wait(timeout=30)
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            self.process.kill()
            self.process.wait()
        finally:
            self._reader.join(timeout=10)
            self._log.close()


class Certificates:
    """A test CA and certificates made by tools/certs/generate.sh (the script users run): a
    server certificate naming `localhost` and `pserver.test` (not 127.0.0.1, so that dialling
    127.0.0.1 needs server_name), client certificates with OU trainers and admins, one from
    another CA (`outsider`), and a trainer token."""

    SERVER_NAME = "pserver.test"

    def __init__(self, directory):
        self.dir = str(directory)
        other = os.path.join(self.dir, "other-ca")
        self._generate("ca", self.dir)
        self._generate("server", self.dir, "server", f"DNS:localhost,DNS:{self.SERVER_NAME}")
        self._generate("client", self.dir, "trainer", "trainers")
        self._generate("client", self.dir, "admin", "admins")
        self._generate("ca", other)
        self._generate("client", other, "outsider", "trainers")
        self.outsider = (os.path.join(other, "outsider.pem"), os.path.join(other, "outsider.key"))
        self.token_file = self.path("trainer.token")
        with open(self.token_file, "w", encoding="utf-8") as f:
            f.write(os.urandom(32).hex() + "\n")
        self.auth_config = self.path("auth.json")
        with open(self.auth_config, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "clientCertificates": [{"ou": "trainers", "role": "trainer"}, {"ou": "admins", "role": "admin"}],
                    "tokens": [{"name": "ci", "file": "trainer.token", "role": "trainer"}],
                },
                f,
            )

    def path(self, name):
        return os.path.join(self.dir, name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def server_args(self):
        """The pserver flags of mutual TLS with these roles."""
        return [
            "--tls-cert", self.path("server.pem"),
            "--tls-key", self.path("server.key"),
            "--tls-client-ca", self.path("ca.pem"),
            "--auth-config", self.auth_config,
        ]

    @staticmethod
    def _generate(*args):
        subprocess.run(["bash", GENERATE_CERTS, *args], check=True, capture_output=True)
