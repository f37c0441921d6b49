"""A cluster of N emulated nodes on one Linux machine, for benchmarks/scale_out.py and its test.

Each worker node is a network namespace of its own, joined to a bridge in the root namespace
by a veth pair whose two ends are shaped by ``tc`` (a token bucket at the link's rate; a
delay too where the kernel has ``netem``). The scheduler runs with the real CLI
(``dask scheduler --preload scheduler_plugins``) in the root namespace, beside the client;
each node runs one ``dask worker --preload dptx.worker --nthreads 1``. Addresses are private
(10.x) and exist only inside what this module made; everything it made (processes,
namespaces, links, bridge) is removed on exit, on an error and on Ctrl-C, and
``remove_leftovers()`` removes what a killed run left.

Without root, ``ip netns`` or ``tc`` it runs the same processes on loopback, without
shaping, and says so (``EmulatedCluster.emulated``, ``.why``).

    with EmulatedCluster(4, rate="10gbit", delay_us=50) as cluster:
        client = Client(cluster.address)
"""
from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PREFIX = "dptxe"                # names of everything made here start with it
# What an idle Dask worker costs is its own node's business on real machines (2-3% of a
# core here: 20-30 ms/s, most of it the statistical profiler sampling every 10 ms, the event
# loop's 20 ms tick and the system monitor); 32 emulated nodes share 2 cores, so that upkeep
# would be taken from the others' work. Emulated nodes run with the profiler off, a 1 s tick
# and a 2 s system monitor (6-9 ms/s per idle worker).
IDLE_UPKEEP = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
               "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
               "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s"}
START_TIMEOUT = 300             # seconds for the scheduler and all workers to come up


def _run(*cmd, check=True, ns=None) -> subprocess.CompletedProcess:
    if ns is not None:
        cmd = ("ip", "netns", "exec", ns) + cmd
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def can_emulate() -> str | None:
    """None where namespaces and tc can be used here, else why not."""
    if sys.platform != "linux":
        return "not Linux"
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"no {tool} command"
    probe = f"{PREFIX}-probe-{os.getpid()}"
    try:
        _run("ip", "netns", "add", probe)
    except (RuntimeError, OSError) as exc:
        return f"ip netns add failed: {exc}"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


def has_netem() -> bool:
    """Whether this kernel has the netem qdisc (tc's delays); tried on a dummy link."""
    dev = f"{PREFIX}nt{os.getpid() % 100000}"
    if _run("ip", "link", "add", dev, "type", "dummy", check=False).returncode != 0:
        return False
    try:
        return _run("tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", "50us",
                    check=False).returncode == 0
    finally:
        _run("ip", "link", "del", dev, check=False)


def free_subnet() -> ipaddress.IPv4Network:
    """A /16 of 10.0.0.0/8 that no address or route of this machine overlaps."""
    used = []
    for line in _run("ip", "-4", "route", "show", "table", "all", check=False).stdout.split("\n"):
        m = re.match(r"(?:\w+ )?(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", line.strip())
        if m:
            with contextlib.suppress(ValueError):
                used.append(ipaddress.ip_network(m.group(1), strict=False))
    for second in range(231, 256):
        net = ipaddress.ip_network(f"10.{second}.0.0/16")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise RuntimeError("no free 10.x.0.0/16 for the emulated nodes")


def remove_leftovers() -> list:
    """Remove namespaces and links a killed run left (its process gone); returns their names."""
    gone = []
    for line in _run("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{PREFIX}-(\d+)-\d+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            for pid in _run("ip", "netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _run("ip", "netns", "del", name, check=False)
            gone.append(name)
    for line in _run("ip", "-o", "link", "show", check=False).stdout.splitlines():
        m = re.match(rf"\d+: ({PREFIX}(\d+)[a-z]+\d*)[@:]", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            _run("ip", "link", "del", m.group(1), check=False)
            gone.append(m.group(1))
    return gone


def _tbf(dev: str, rate: str, delay_us: float, netem: bool, ns=None) -> None:
    """Shape ``dev``'s egress: netem's delay (where there is netem) and a token bucket."""
    bits = _rate_bits(rate)
    burst = max(64 * 1024, int(bits / 8 / 1000))           # a millisecond of the rate
    if netem and delay_us > 0:
        _run("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
             f"{delay_us:g}us", ns=ns)
        parent = ("parent", "1:1")
    else:
        parent = ("root",)
    _run("tc", "qdisc", "add", "dev", dev, *parent, "tbf", "rate", rate, "burst", str(burst),
         "latency", "50ms", ns=ns)


def _rate_bits(rate: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", rate.strip().lower())
    if not m:
        raise ValueError(f"rate {rate!r}: say e.g. 10gbit, 500mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


class EmulatedCluster:
    """N single-thread dask workers, each on an emulated node (see the module's doc).

    ``node_env``: extra environment per node (a list of dicts, or one dict for all), e.g.
    ``{"DASK_DPTX__NANOSLEEP_SCALE": "0.25"}`` for a node 4 times faster."""

    def __init__(self, n: int, rate: str = "10gbit", delay_us: float = 50.0,
                 node_env=None, loopback: bool = False, log=print):
        if n < 1:
            raise ValueError("n must be >= 1")
        _rate_bits(rate)
        self.n, self.rate, self.delay_us, self.log = n, rate, delay_us, log
        envs = node_env if isinstance(node_env, list) else [node_env or {}] * n
        if len(envs) != n:
            raise ValueError(f"node_env: {len(envs)} entries for {n} nodes")
        self.node_env = envs
        self.why = "asked for loopback" if loopback else can_emulate()
        self.emulated = self.why is None
        self.netem = self.emulated and has_netem()
        self.tag = f"{PREFIX}-{os.getpid()}"
        self.short = f"{PREFIX}{os.getpid()}"      # interface names: at most 15 characters
        self.namespaces, self.links, self.bridge = [], [], None
        self.processes = []
        self.tmp = tempfile.mkdtemp(prefix="dptx-emulated-")
        self.address = None

    # -- what is emulated, in words ----------------------------------------------------------
    def describe(self) -> str:
        if not self.emulated:
            return f"{self.n} workers on loopback, links not shaped ({self.why})"
        delay = (f"{self.delay_us:g} us one way" if self.netem else
                 "no added delay (this kernel has no netem)")
        return (f"{self.n} emulated nodes (a network namespace each), links {self.rate}, "
                f"{delay}; workers' idle upkeep reduced (IDLE_UPKEEP)")

    # -- set-up ------------------------------------------------------------------------------
    def __enter__(self):
        try:
            self._previous = {s: signal.getsignal(s) for s in (signal.SIGTERM,)}
            signal.signal(signal.SIGTERM, self._terminated)
            if self.emulated:
                self._network()
            self._scheduler()
            self._workers()
            return self
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()

    def _terminated(self, signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def _network(self) -> None:
        # two emulations starting at once (two benchmarks, or tests side by side) must not
        # pick the same subnet: the choice holds a machine-wide lock until the bridge's
        # address and route are in place, where the next chooser sees them
        with open(os.path.join(tempfile.gettempdir(), f"{PREFIX}-subnet.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            net = free_subnet()
            hosts = net.hosts()
            self.host_ip = str(next(hosts))
            self.bridge = f"{self.short}br"
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            self.links.append(self.bridge)
            _run("ip", "addr", "add", f"{self.host_ip}/{net.prefixlen}", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
        self.node_ips = []
        for i in range(self.n):
            ns, outer, inner = f"{self.tag}-{i}", f"{self.short}v{i}", f"{self.short}p{i}"
            ip = str(next(hosts))
            _run("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            _run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            self.links.append(outer)
            _run("ip", "link", "set", inner, "netns", ns)
            _run("ip", "link", "set", inner, "name", "eth0", ns=ns)
            _run("ip", "addr", "add", f"{ip}/{net.prefixlen}", "dev", "eth0", ns=ns)
            _run("ip", "link", "set", "eth0", "up", ns=ns)
            _run("ip", "link", "set", "lo", "up", ns=ns)
            _run("ip", "link", "set", outer, "master", self.bridge)
            _run("ip", "link", "set", outer, "up")
            _tbf("eth0", self.rate, self.delay_us, self.netem, ns=ns)        # node -> bridge
            _tbf(outer, self.rate, self.delay_us, self.netem)                # bridge -> node
            self.node_ips.append(ip)

    def _spawn(self, cmd: list, env: dict, ns=None, name="") -> subprocess.Popen:
        if ns is not None:
            cmd = ["ip", "netns", "exec", ns] + cmd
        log = open(os.path.join(self.tmp, f"{name}.log"), "w")
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.processes.append(proc)
        return proc

    def _env(self, extra=None) -> dict:
        env = dict(os.environ, **IDLE_UPKEEP)
        env.update(extra or {})
        return env

    def _scheduler(self) -> None:
        host = self.host_ip if self.emulated else "127.0.0.1"
        file = os.path.join(self.tmp, "scheduler.json")
        self._spawn([sys.executable, "-m", "dask", "scheduler", "--host", host, "--port", "0",
                     "--dashboard-address", ":0", "--preload", "scheduler_plugins",
                     "--scheduler-file", file], self._env(), name="scheduler")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(OSError, ValueError, KeyError):
                with open(file) as f:
                    self.address = json.load(f)["address"]
                    return
            time.sleep(0.1)
        raise RuntimeError(f"the scheduler did not start in {START_TIMEOUT} s: "
                           f"{self._log_tail('scheduler')}")

    def _workers(self) -> None:
        for i in range(self.n):
            host = self.node_ips[i] if self.emulated else "127.0.0.1"
            cmd = [sys.executable, "-m", "dask", "worker", self.address, "--nthreads", "1",
                   "--no-nanny", "--preload", "dptx.worker", "--host", host, "--name",
                   f"node-{i}", "--no-dashboard", "--memory-limit", "0"]
            self._spawn(cmd, self._env(self.node_env[i]),
                        ns=self.namespaces[i] if self.emulated else None, name=f"node-{i}")

    def wait(self, client, timeout: float = START_TIMEOUT) -> None:
        """Wait until every node's worker has registered with the scheduler."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if len(client.scheduler_info(n_workers=-1)["workers"]) >= self.n:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{len(client.scheduler_info(n_workers=-1)['workers'])} of "
                           f"{self.n} workers registered in {timeout} s")

    def _check_alive(self) -> None:
        for proc in self.processes:
            if proc.poll() is not None:
                name = " ".join(proc.args[-12:])
                raise RuntimeError(f"a process of the emulated cluster exited "
                                   f"({proc.returncode}): {name}\n{self._last_logs()}")

    def _log_tail(self, name: str, lines: int = 15) -> str:
        with contextlib.suppress(OSError):
            with open(os.path.join(self.tmp, f"{name}.log")) as f:
                return "".join(f.readlines()[-lines:])
        return ""

    def _last_logs(self) -> str:
        return "\n".join(f"--- {n}:\n{self._log_tail(n)}" for n in
                         ["scheduler"] + [f"node-{i}" for i in range(self.n)][:2])

    # -- tear-down ---------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every process, then remove the namespaces, links and bridge (idempotent)."""
        for proc in self.processes:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.processes = []
        for ns in self.namespaces:
            for pid in _run("ip", "netns", "pids", ns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _run("ip", "netns", "del", ns, check=False)
        self.namespaces = []
        for link in reversed(self.links):       # (the veths go with their namespaces)
            _run("ip", "link", "del", link, check=False)
        self.links = []
        shutil.rmtree(self.tmp, ignore_errors=True)
        if getattr(self, "_previous", None):
            for s, h in self._previous.items():
                signal.signal(s, h)
            self._previous = None

    def leftovers(self) -> list:
        """What of this cluster still exists (namespaces, links, processes): [] after close."""
        left = [ns for ns in _run("ip", "netns", "list", check=False).stdout.split()
                if ns.startswith(self.tag + "-")] if self.emulated else []
        links = _run("ip", "-o", "link", "show", check=False).stdout if self.emulated else ""
        left += re.findall(rf"\d+: ({re.escape(self.short)}[a-z]+\d*)[@:]", links)
        left += [str(p.pid) for p in self.processes if p.poll() is None]
        return left
