"""Background JIT builds (dptx/cpu/jit.py, optimize_in_background) share the machine: one
build per object across all processes, a bounded number at once, and none left waiting
once the process that asked for it is gone.

The test holds the build slots itself (the slot lock files in the cache directory) to keep
the children waiting; DPTX_JIT_BUILD_LOG counts the builds they make."""
import ctypes
import os
import subprocess
import sys
import threading
import time

import pytest

from dptx.cpu import jit

fcntl = pytest.importorskip("fcntl")

IR = """define i32 @dptx_run(ptr %c, i64 %a, i64 %b) {
  %s = add i64 %a, %b
  %r = trunc i64 %s to i32
  %t = add i32 %r, {k}
  ret i32 %t
}
"""


def ir(k: int) -> str:
    return IR.replace("{k}", str(k))


def run(obj: bytes, a: int, b: int) -> int:
    _, address = jit.load_object(obj)
    return ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_int64)(address)(None, a, b)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DPTX_JIT_BUILD_LOG", str(tmp_path / "builds.log"))
    monkeypatch.setenv("DPTX_JIT_BUILD_SLOTS", "1")
    procs = []
    yield tmp_path, procs
    for p in procs:                 # a failed test leaves no child behind
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


def builds(tmp_path) -> list:
    log = tmp_path / "builds.log"
    return log.read_text().split("\n")[:-1] if log.exists() else []


def hold(path):
    """Lock the lock file ``path`` as a child would; closing the fd releases it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def is_held(path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def wait_for(condition, seconds=15.0):
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def slot(tmp_path, i):
    return tmp_path / "cpu" / "slots" / f"slot-{i}.lock"


def key_lock(text, key):
    return jit._object_path(text, key).with_suffix(".lock")


def waiting(text, key) -> bool:
    """Wait until a child holds the object's build lock (it is past its cache check and
    waits for a slot); whether it is not built yet."""
    wait_for(lambda: is_held(key_lock(text, key)) or jit.is_cached(text, key))
    return not jit.is_cached(text, key)


ASK_AND_WAIT = ("import sys; from dptx.cpu import jit; "
                "p = jit.optimize_in_background(sys.argv[1], sys.argv[2]); print(p.pid, flush=True); "
                "sys.stdin.read() if sys.argv[3] == 'hang' else p.wait()")


def ask_from_another_process(text, key, hang=False):
    return subprocess.Popen([sys.executable, "-c", ASK_AND_WAIT, text, key,
                             "hang" if hang else "wait"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_the_same_object_asked_for_by_two_processes_is_built_once(cache):
    tmp_path, procs = cache
    text = ir(7)
    slot0 = hold(slot(tmp_path, 0))          # keep the first child waiting for a slot
    procs += [jit.optimize_in_background(text, "a"), jit.optimize_in_background(text, "a")]
    other = ask_from_another_process(text, "a")
    procs.append(other)
    assert waiting(text, "a")                # one child has the object, waits for the slot
    os.close(slot0)
    for p in procs:
        assert p.wait(timeout=30) == 0
    assert len(builds(tmp_path)) == 1
    assert run(jit.cached_object(text, "a"), 30, 5) == 42


def test_a_synchronous_build_takes_the_result_of_one_in_another_process(cache, monkeypatch):
    tmp_path, _ = cache
    text = ir(1)
    building = hold(key_lock(text, "s"))     # as a background build in another process
    made, real = [], jit.build_object
    monkeypatch.setattr(jit, "build_object", lambda *a, **k: made.append(a) or real(*a, **k))
    result = []
    t = threading.Thread(target=lambda: result.append(jit.compile_ir(text, "s")))
    t.start()
    time.sleep(0.5)
    assert t.is_alive()                      # it waits for the other build ...
    jit.store(jit._object_path(text, "s"), real(text))
    os.close(building)
    t.join(30)
    assert not made                          # ... and loads its result: no second build
    _, address = result[0]
    assert ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_int64)(address)(None, 2, 3) == 6


def cpu_seconds(pid) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_at_most_the_slot_count_of_builds_run_and_the_others_wait_idle(cache, monkeypatch):
    tmp_path, procs = cache
    monkeypatch.setenv("DPTX_JIT_BUILD_SLOTS", "2")
    held = [hold(slot(tmp_path, 0)), hold(slot(tmp_path, 1))]
    texts = [ir(k) for k in (10, 20, 30)]
    procs += [jit.optimize_in_background(t, "b") for t in texts]
    assert all(waiting(t, "b") for t in texts)
    if os.path.exists(f"/proc/{procs[0].pid}/stat"):
        before = sum(cpu_seconds(p.pid) for p in procs)
        time.sleep(1.0)
        assert sum(cpu_seconds(p.pid) for p in procs) - before < 0.2   # sleeping, not spinning
    assert all(p.poll() is None for p in procs)
    assert not any(jit.is_cached(t, "b") for t in texts) and builds(tmp_path) == []
    os.close(held[1])                        # one slot free: all three build, one at a time
    for p in procs:
        assert p.wait(timeout=30) == 0
    log = builds(tmp_path)
    assert len(log) == 3 and all(" slot-1 " in line for line in log)
    for k, t in zip((10, 20, 30), texts):
        assert run(jit.cached_object(t, "b"), 1, 1) == k + 2
    os.close(held[0])


def gone(pid) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")   # exited, unreaped
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True


def test_a_child_whose_parent_died_while_it_waited_builds_nothing(cache):
    tmp_path, procs = cache
    text = ir(3)
    slot0 = hold(slot(tmp_path, 0))
    parent = ask_from_another_process(text, "c", hang=True)
    procs.append(parent)
    child = int(parent.stdout.readline())
    assert waiting(text, "c")
    parent.kill()
    parent.wait()
    wait_for(lambda: gone(child), seconds=10)         # it notices and goes
    os.close(slot0)
    time.sleep(0.3)
    assert not jit.is_cached(text, "c") and builds(tmp_path) == []
    assert not is_held(key_lock(text, "c"))
