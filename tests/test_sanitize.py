"""``dptx sanitize``: racecheck on a corpus of racy and clean kernels (each hazard named with
both source lines, no report on a clean kernel), memcheck's reports, and the command line on
a program whose launches run on the embedded cluster's workers."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.device import sanitizer

SOURCE = r'''
extern "C" __global__ void sum_missing_barrier(const float* x, float* out) {
    __shared__ float tile[128];
    int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 128 + t];                       // line 5
    for (int s = 64; s > 0; s >>= 1) {                       // (no barrier before the loop)
        if (t < s) tile[t] += tile[t + s];                   // line 7
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = tile[0];
}
extern "C" __global__ void sum(const float* x, float* out) {
    __shared__ float tile[128];
    int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 128 + t];
    __syncthreads();
    for (int s = 64; s > 0; s >>= 1) {
        if (t < s) tile[t] += tile[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = tile[0];
}
extern "C" __global__ void same_word(int* out) {
    __shared__ int w;
    w = threadIdx.x;                                         // line 25: every thread writes
    __syncthreads();
    out[threadIdx.x] = w;
}
extern "C" __global__ void accumulator_rewritten(const float* x, float* out) {
    __shared__ float acc;
    int t = threadIdx.x;
    for (int it = 0; it < 4; it++) {
        if (t == 0) acc = 0.0f;                              // line 33
        __syncthreads();
        atomicAdd(&acc, x[it * 64 + t]);
        __syncthreads();
        out[it * 64 + t] = acc;                              // line 37: read, then the next
    }                                                        // iteration's write, no barrier
}
extern "C" __global__ void accumulator(const float* x, float* out) {
    __shared__ float acc;
    int t = threadIdx.x;
    for (int it = 0; it < 4; it++) {
        if (t == 0) acc = 0.0f;
        __syncthreads();
        atomicAdd(&acc, x[it * 64 + t]);
        __syncthreads();
        out[it * 64 + t] = acc;
        __syncthreads();
    }
}
extern "C" __global__ void plain_and_atomic(int* out) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;                         // line 54
    atomicAdd(&count, 1);                                    // line 55: no barrier between
    __syncthreads();
    if (threadIdx.x == 0) out[0] = count;
}
extern "C" __global__ void lockstep(const int* x, int* out) {
    __shared__ volatile int v[32];
    int t = threadIdx.x;
    v[t] = x[t];                                             // line 62
    out[t] = v[31 - t];                                      // line 63: no __syncwarp
}
extern "C" __global__ void syncwarp_exchange(const int* x, int* out) {
    __shared__ int v[32];
    int t = threadIdx.x;
    v[t] = x[t];
    __syncwarp();
    out[t] = v[31 - t];
}
extern "C" __global__ void shuffle_sum(const int* x, int* out) {
    int v = x[threadIdx.x];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (threadIdx.x == 0) out[0] = v;
}
extern "C" __global__ void double_buffered(const float* x, float* out, int steps) {
    __shared__ float buf[2][64];
    int t = threadIdx.x;
    buf[0][t] = x[t];
    __syncthreads();
    for (int s = 0; s < steps; s++) {
        int cur = s & 1, nxt = cur ^ 1;
        buf[nxt][t] = buf[cur][t] + buf[cur][(t + 1) % 64];  // reads cur, writes nxt
        __syncthreads();
    }
    out[t] = buf[steps & 1][t];
}
extern "C" __global__ void shared_histogram(const int* keys, int* bins) {
    __shared__ int local[16];
    int t = threadIdx.x;
    if (t < 16) local[t] = 0;
    __syncthreads();
    atomicAdd(&local[keys[blockIdx.x * 128 + t] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], local[t]);
}
extern "C" __global__ void total_unsynced(const float* x, float* out) {
    if (threadIdx.x != 0) return;
    float s = 0;
    for (int i = 0; i < 128; i++) s += x[blockIdx.x * 128 + i];
    out[0] += s;                                             // line 102: every block, no atomic
}
'''
RACY = {    # kernel -> the hazard as (kind, the first access's line, the second's): the order the
    #          threads ran in decides which comes first, so either of a pair
    "sum_missing_barrier": {("WAR", 7, 5), ("RAW", 5, 7)},
    "same_word": {("WAW", 25, 25)},
    "accumulator_rewritten": {("WAR", 37, 33), ("RAW", 33, 37)},
    "plain_and_atomic": {("ATOMIC", 54, 55), ("ATOMIC", 55, 54)},
    "lockstep": {("WAR", 63, 62), ("RAW", 62, 63)},
}


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(SOURCE, options=("-lineinfo",), name="races.cu")


@pytest.fixture(autouse=True)
def fresh_reports():
    sanitizer.reset()
    yield
    sanitizer.reset()


@pytest.fixture(params=["0", "1", "all"])
def form(request, monkeypatch):
    """(A race-checked build is per thread whatever DPTX_CPU_VECTOR says.)"""
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


def _args(name):
    rng = np.random.default_rng(1)
    f32 = rng.integers(0, 10, 1024).astype(np.float32)
    i32 = np.arange(1024, dtype=np.int32)
    return {
        "sum_missing_barrier": ((4,), (128,), (f32, np.zeros(4, np.float32))),
        "sum": ((4,), (128,), (f32, np.zeros(4, np.float32))),
        "same_word": ((1,), (64,), (np.zeros(64, np.int32),)),
        "accumulator_rewritten": ((1,), (64,), (f32, np.zeros(256, np.float32))),
        "accumulator": ((1,), (64,), (f32, np.zeros(256, np.float32))),
        "plain_and_atomic": ((1,), (64,), (np.zeros(1, np.int32),)),
        "lockstep": ((1,), (32,), (i32, np.zeros(32, np.int32))),
        "syncwarp_exchange": ((1,), (32,), (i32, np.zeros(32, np.int32))),
        "shuffle_sum": ((1,), (32,), (i32, np.zeros(1, np.int32))),
        "double_buffered": ((1,), (64,), (f32, np.zeros(64, np.float32), np.int32(5))),
        "shared_histogram": ((2,), (128,), (i32, np.zeros(16, np.int32))),
    }[name]


def _hazards(kernel) -> list:
    """This process's racecheck hazards for ``kernel``: (kind, first .cu line, second)."""
    keys = [json.loads(k) for k in sanitizer.seen()]
    return [(k[2], _cu_line(k[3]), _cu_line(k[4])) for k in keys
            if k[0] == "racecheck" and k[1] == kernel]


def _cu_line(location: str) -> int:
    return int(re.fullmatch(r"races\.cu:(\d+)", location).group(1))


@pytest.mark.parametrize("name", sorted(RACY))
def test_racy_kernels_are_named_with_both_lines(module, form, name, capsys):
    kernel = module.get_function(name)
    grid, block, args = _args(name)
    cpu.launch(kernel, grid, block, args, sanitize="racecheck")
    found = _hazards(name)
    assert found, f"no hazard reported for {name}"
    named = set(found)
    assert named & RACY[name], named
    printed = capsys.readouterr().err
    for kind, first, second in named & RACY[name]:
        assert f"{kind} hazard in kernel {name}" in printed and \
            f"races.cu:{first}" in printed and f"races.cu:{second}" in printed, printed


@pytest.mark.parametrize("name", ["sum", "accumulator", "syncwarp_exchange", "shuffle_sum",
                                  "double_buffered", "shared_histogram"])
def test_clean_kernels_have_no_report_and_right_results(module, form, name):
    kernel = module.get_function(name)
    grid, block, args = _args(name)
    plain = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu.launch(kernel, grid, block, args, sanitize="racecheck")
    assert _hazards(name) == []
    cpu.launch(kernel, grid, block, plain)          # the same results as without the tool
    for a, b in zip(args, plain):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_a_launch_without_the_tool_is_the_plain_build(module):
    from dptx.cpu.executor import compile_kernel
    kernel = module.get_function("sum")
    assert not compile_kernel(kernel).racecheck
    assert compile_kernel(kernel, racecheck=True).racecheck
    with pytest.raises(dptx.errors.LaunchError, match="sanitize='thread'"):
        cpu.launch(kernel, (1,), (128,), _args("sum")[2], sanitize="thread")


def test_memcheck_reports_a_memory_error(module):
    overrun = dptx.RawModule(r'''extern "C" __global__ void overrun(float* a, int n) {
        a[threadIdx.x + n] = 1.0f;
    }''', options=("-lineinfo",), name="overrun.cu").get_function("overrun")
    with pytest.raises(dptx.DptxMemoryError):
        cpu.launch(overrun, (1,), (32,), (np.zeros(32, np.float32), np.int32(100)),
                   sanitize="memcheck")
    keys = [json.loads(k) for k in sanitizer.seen()]
    assert any(k[0] == "memcheck" and k[1] == "overrun" for k in keys), keys


PROGRAM = r'''
import numpy as np, dptx
source = open("races.cu").read()
m = dptx.RawModule(source, options=("-lineinfo",), name="races.cu")
x = dptx.asarray(np.arange(8 * 128, dtype=np.float32))
out = dptx.zeros(8, np.float32)
m.get_function("KERNEL")((8,), (128,), (x, out))
print(out.get().sum())
# what the dashboard's dptx page lists: the workers' reports, at the scheduler
import time
client = dptx.runtime.cluster.get_session().client
for _ in range(50):
    state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
    if state["hazards"] or "sum" == "KERNEL":
        break
    time.sleep(0.1)
print("dashboard", len(state["hazards"]), [h["kind"] for h in state["hazards"]])
'''


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kernel, hazards", [("sum_missing_barrier", 1), ("sum", 0),
                                             ("total_unsynced", 1)])
def test_the_command_on_a_program_whose_launches_run_on_the_cluster(tmp_path, kernel,
                                                                     hazards):
    """Each chunk a worker runs is checked (blocks of one chunk compared with each other too:
    total_unsynced's blocks all add to one word without an atomic)."""
    (tmp_path / "races.cu").write_text(SOURCE)
    (tmp_path / "script.py").write_text(PROGRAM.replace("KERNEL", kernel))
    done = subprocess.run([sys.executable, "-m", "dptx.cli", "sanitize", "--tool", "racecheck",
                           "--error-exitcode", "7", "--save", "hazards.json", "--",
                           sys.executable, "script.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=500)
    summary = f"RACECHECK SUMMARY: {hazards} hazard{'' if hazards == 1 else 's'}"
    assert summary in done.stderr, done.stderr
    saved = json.loads((tmp_path / "hazards.json").read_text())
    assert len(saved["hazards"]) == hazards and saved["status"] == 0
    assert done.stdout.split("\n")[1].startswith(f"dashboard {hazards}"), done.stdout
    if kernel == "total_unsynced":
        assert done.returncode == 7
        assert {h["kind"] for h in saved["hazards"]} == {"RAW"}
        assert all(h["between_blocks"] and h["first"]["at"].endswith("(races.cu:102)")
                   for h in saved["hazards"]), saved
    elif hazards:
        assert done.returncode == 7
        assert "races.cu:7" in done.stderr and "races.cu:5" in done.stderr, done.stderr
        assert saved["hazards"][0]["kind"] == "WAR"
    else:
        assert done.returncode == 0
        assert float(done.stdout.split()[0]) == np.arange(8 * 128).sum()


@pytest.mark.timeout(600)
def test_the_readmes_report_is_what_the_example_gives(tmp_path):
    """The README shows a real report: examples/race_attention.py under the command."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "dptx.cli", "sanitize", "--tool", "racecheck",
                           "--", sys.executable, str(root / "examples" / "race_attention.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr
    readme = (root / "README.md").read_text()
    shown = [line for line in readme.splitlines() if line.startswith("========= ")]
    got = [line for line in done.stderr.splitlines() if line.startswith("========= ")][1:]
    # (the PTX lines are NVRTC's to choose: the .cu lines are the point)
    mask = lambda lines: [re.sub(r"PTX line \d+", "PTX line N", x) for x in lines]
    assert shown and mask(got) == mask(shown), (got, shown)


SYNC_SOURCE = r'''
extern "C" __global__ void divergent(float* out) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = t;
    if (t < 32) {
        __syncthreads();                        // line 7: only the first warp
        out[t] = s[63 - t];
    } else {
        __syncthreads();                        // line 10: the others, at another barrier
        out[t] = s[63 - t] + 1;
    }
}
extern "C" __global__ void bad_mask(int* out) {
    int v = threadIdx.x;
    v = __shfl_xor_sync(0x0000ffffu, v, 1);     // line 16: lanes 16-31 left out
    out[threadIdx.x] = v;
}
extern "C" __global__ void early_exit(const float* x, float* out, int n) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (blockIdx.x * 64 + t >= n) return;       // exited threads count as arrived (sm_70+)
    s[t] = x[blockIdx.x * 64 + t];
    __syncthreads();
    out[blockIdx.x * 64 + t] = s[t] * 2.0f;
}
extern "C" __global__ void half_warp_mask(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_xor_sync(0x0000ffffu, v, 1);   // the lanes that call it
    out[threadIdx.x] = v;
}
extern "C" __global__ void exited_lane(const int* x, int* out, int n) {
    int t = threadIdx.x;
    if (t >= n) return;                         // lanes n-31 exit
    int v = __shfl_down_sync(0xffffffffu, x[t], 1);   // line 35: the full mask names them
    out[t] = v;
}
extern "C" __global__ void count_too_large(int* out) {
    out[threadIdx.x] = 1;
    asm volatile("bar.sync 1, 64;" ::: "memory");   // line 40: 64 threads, in a block of 32
    out[threadIdx.x] = 2;
}
'''


@pytest.fixture(scope="module")
def sync_module():
    return dptx.RawModule(SYNC_SOURCE, options=("-lineinfo",), name="sync.cu")


def _sync_hazards(kernel) -> list:
    keys = [json.loads(k) for k in sanitizer.seen()]
    return [tuple(k[2:]) for k in keys if k[0] == "synccheck" and k[1] == kernel]


def test_synccheck_names_a_divergent_barrier_and_a_bad_mask(sync_module, form):
    cpu.launch(sync_module.get_function("divergent"), (1,), (64,), (np.zeros(64, np.float32),),
               sanitize="synccheck")
    assert _sync_hazards("divergent") in ([("BARRIER", "sync.cu:7", "sync.cu:10")],
                                          [("BARRIER", "sync.cu:10", "sync.cu:7")])
    cpu.launch(sync_module.get_function("bad_mask"), (1,), (32,), (np.zeros(32, np.int32),),
               sanitize="synccheck")
    assert _sync_hazards("bad_mask") == [("MASK", "sync.cu:16")]
    cpu.launch(sync_module.get_function("exited_lane"), (1,), (32,),
               (np.arange(32, dtype=np.int32), np.zeros(32, np.int32), np.int32(20)),
               sanitize="synccheck")
    assert _sync_hazards("exited_lane") == [("EXITED", "sync.cu:35")]
    with pytest.raises(dptx.DptxDeadlockError, match=r"sync\.cu:40"):
        cpu.launch(sync_module.get_function("count_too_large"), (1,), (32,),
                   (np.zeros(32, np.int32),), sanitize="synccheck")
    (found,) = _sync_hazards("count_too_large")
    assert found[0] == "DEADLOCK" and found[1].endswith("(sync.cu:40)"), found


def test_synccheck_is_quiet_on_legal_code(sync_module, module, form):
    n = 100
    x, out = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    cpu.launch(sync_module.get_function("early_exit"), (2,), (64,), (x, out, np.int32(n)),
               sanitize="synccheck")
    np.testing.assert_array_equal(out[:n], 2 * x[:n])
    half = np.zeros(32, np.int32)
    cpu.launch(sync_module.get_function("half_warp_mask"), (1,), (32,), (half,),
               sanitize="synccheck")
    np.testing.assert_array_equal(half[:16], np.arange(16) ^ 1)
    for name in ("sum", "syncwarp_exchange", "shuffle_sum", "double_buffered"):
        grid, block, args = _args(name)
        cpu.launch(module.get_function(name), grid, block, args, sanitize="synccheck")
    assert [k for k in sanitizer.seen() if "synccheck" in k] == []
    # racecheck's hazards are not synccheck's
    cpu.launch(module.get_function("lockstep"), (1,), (32,), _args("lockstep")[2],
               sanitize="synccheck")
    assert sanitizer.seen() == {}


def test_the_command_counts_limits_and_saves(tmp_path, capsys):
    """Reports from several processes (here, lines the program writes itself), counted per
    hazard, the first --print-limit shown, all saved; the program's own status kept when
    nothing was found."""
    from dptx.sanitize_command import main
    writer = ("import json, os, sys\n"
              "path = os.environ['DASK_DPTX__SANITIZE_REPORT']\n"
              "assert os.environ['DASK_DPTX__SANITIZE'] == 'racecheck'\n"
              "with open(path, 'a') as f:\n"
              "    for k in [1, 2, 2, 3, 3, 3]:\n"
              "        f.write(json.dumps({'tool': 'racecheck', 'kind': 'RAW', 'kernel': 'k',\n"
              "                            'message': f'hazard {k}', 'key': [k]}) + '\\n')\n"
              "sys.exit(int(sys.argv[1]))\n")
    (tmp_path / "w.py").write_text(writer)
    saved = tmp_path / "h.json"
    status = main(["--tool", "racecheck", "--print-limit", "2", "--save", str(saved),
                   "--error-exitcode", "9", "--", sys.executable, str(tmp_path / "w.py"), "0"])
    err = capsys.readouterr().err
    assert status == 9
    assert "racecheck: hazard 1\n" in err and "hazard 2 (2 times)" in err
    assert "hazard 3" not in err and "... 1 more (--print-limit)" in err
    assert "RACECHECK SUMMARY: 3 hazards" in err
    assert [h["count"] for h in json.loads(saved.read_text())["hazards"]] == [1, 2, 3]
    # without --error-exitcode: the program's status
    (tmp_path / "quiet.py").write_text("import sys; sys.exit(4)\n")
    assert main(["--", sys.executable, str(tmp_path / "quiet.py")]) == 4
    assert "MEMCHECK SUMMARY: 0 errors" in capsys.readouterr().err


BYTES_SOURCE = r'''
extern "C" __global__ void byte_flags(int* out) {
    __shared__ unsigned char flags[128];
    int t = threadIdx.x;
    flags[t] = (unsigned char)t;                // neighbours write bytes of one word: no race
    __syncthreads();
    out[t] = flags[127 - t] + ((const int*)flags)[t / 4];
}
extern "C" __global__ void bytes_then_word(int* out) {
    __shared__ unsigned char b[128];
    int t = threadIdx.x;
    b[t] = (unsigned char)t;                    // line 12
    out[t] = ((const int*)b)[(t / 4 + 1) % 32]; // line 13: the next word, written by others
}
'''


def test_bytes_of_one_word_are_apart_and_a_word_read_sees_them(form):
    m = dptx.RawModule(BYTES_SOURCE, options=("-lineinfo",), name="bytes.cu")
    out = np.zeros(128, np.int32)
    cpu.launch(m.get_function("byte_flags"), (1,), (128,), (out,), sanitize="racecheck")
    words = np.arange(128, dtype=np.uint8).view(np.int32)
    np.testing.assert_array_equal(out, (127 - np.arange(128)) + words[np.arange(128) // 4])
    assert [k for k in sanitizer.seen()] == []
    cpu.launch(m.get_function("bytes_then_word"), (1,), (128,), (np.zeros(128, np.int32),),
               sanitize="racecheck")
    found = {tuple(json.loads(k)[2:]) for k in sanitizer.seen()}
    assert found & {("RAW", "bytes.cu:12", "bytes.cu:13"), ("WAR", "bytes.cu:13", "bytes.cu:12")}, \
        found


INIT_SOURCE = r'''
extern "C" __global__ void shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i + 1] * 2.0f;          // line 4: x[n] is read
}
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 2.0f;
}
'''


def test_initcheck_in_process_names_the_first_unwritten_read(form):
    m = dptx.RawModule(INIT_SOURCE, options=("-lineinfo",), name="init.cu")
    x, y = np.arange(65, dtype=np.float32), np.zeros(64, np.float32)
    # the caller says what nothing wrote: x[64] (bytes 256-260)
    cpu.launch(m.get_function("scale"), (2,), (32,), (x, y, np.int32(64)), sanitize="initcheck",
               unwritten=({0: [(256, 260)]}, {}))
    assert sanitizer.seen() == {}
    cpu.launch(m.get_function("shift"), (2,), (32,), (x, y, np.int32(64)), sanitize="initcheck",
               unwritten=({0: [(256, 260)]}, {}))
    np.testing.assert_array_equal(y, 2 * x[1:])
    (key,) = sanitizer.seen()
    assert json.loads(key) == ["initcheck", "shift", "init.cu:4"]


INIT_PROGRAM = r'''
import numpy as np, dptx
m = dptx.RawModule(open("init.cu").read(), options=("-lineinfo",), name="init.cu")
n = 1000
x = dptx.empty(n + 1, np.float32)            # x[n]: nothing writes it
x[:n] = dptx.arange(n, dtype=np.float32)
y, z = dptx.empty(n, np.float32), dptx.empty(n, np.float32)
m.get_function("scale")((4,), (256,), (x, y, np.int32(n)))    # reads x[:n]: written
m.get_function("scale")((4,), (256,), (y, z, np.int32(n)))    # y: written by the launch
if "SHIFT":
    m.get_function("shift")((4,), (256,), (x, z, np.int32(n)))
print(z[:2].get())
'''


@pytest.mark.timeout(600)
@pytest.mark.parametrize("shift", [True, False])
def test_initcheck_on_the_cluster_follows_what_wrote_each_byte(tmp_path, shift):
    (tmp_path / "init.cu").write_text(INIT_SOURCE)
    (tmp_path / "script.py").write_text(INIT_PROGRAM.replace('"SHIFT"', str(shift)))
    done = subprocess.run([sys.executable, "-m", "dptx.cli", "sanitize", "--tool", "initcheck",
                           "--", sys.executable, "script.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr
    if shift:
        assert "INITCHECK SUMMARY: 1 hazard" in done.stderr, done.stderr
        assert re.search(r"uninitialized read in kernel shift: thread \d+ .* \(init\.cu:4\) reads 4 "
                         r"bytes at byte 4000 of argument 0 \(x\), which nothing wrote",
                         done.stderr), done.stderr
    else:
        assert "INITCHECK SUMMARY: 0 hazards" in done.stderr, done.stderr


MORE_SOURCE = r'''
extern "C" __global__ void tiled_missing_barrier(const float* a, const float* b, float* c, int n) {
    __shared__ float as[16][16], bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k = 0; k < n; k += 16) {
        as[ty][tx] = a[row * n + k + tx];                  // line 8: the next tile's load...
        bs[ty][tx] = b[(k + ty) * n + col];
        __syncthreads();
        for (int j = 0; j < 16; j++) acc += as[ty][j] * bs[j][tx];   // line 11
    }                                                      // ...with no barrier after the use
    c[row * n + col] = acc;
}
extern "C" __global__ void shared_histogram_plain(const int* keys, int* bins) {
    __shared__ int local[16];
    int t = threadIdx.x;
    if (t < 16) local[t] = 0;
    __syncthreads();
    local[keys[blockIdx.x * 128 + t] & 15] += 1;            // line 20: not atomic
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], local[t]);
}
'''


def test_a_tiled_loop_without_its_second_barrier_and_a_plain_histogram(form):
    m = dptx.RawModule(MORE_SOURCE, options=("-lineinfo",), name="more.cu")
    n = 32
    a, b = (np.ones((n, n), np.float32) for _ in range(2))
    cpu.launch(m.get_function("tiled_missing_barrier"), (2, 2), (16, 16),
               (a, b, np.zeros((n, n), np.float32), np.int32(n)), sanitize="racecheck")
    found = {tuple(json.loads(k)[2:]) for k in sanitizer.seen()}
    assert found & {("WAR", "more.cu:11", "more.cu:8"), ("RAW", "more.cu:8", "more.cu:11")}, found
    sanitizer.reset()
    keys = np.arange(256, dtype=np.int32)
    cpu.launch(m.get_function("shared_histogram_plain"), (2,), (128,),
               (keys, np.zeros(16, np.int32)), sanitize="racecheck")
    found = {tuple(json.loads(k)[2:]) for k in sanitizer.seen()}
    assert any(f[1:] == ("more.cu:20", "more.cu:20") for f in found), found


GLOBAL_SOURCE = r'''
extern "C" __global__ void histogram_plain(const int* keys, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bins[keys[i] & 15] += 1;             // line 4: not atomic
}
extern "C" __global__ void histogram_atomic(const int* keys, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[keys[i] & 15], 1);
}
extern "C" __global__ void saxpy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 2.0f * x[i];
}
'''


def test_racecheck_on_global_memory_within_a_block(form):
    """A block's threads on global memory: a non-atomic histogram races (named with its line
    and the argument, as the source calls it), the atomic one and a saxpy do not."""
    m = dptx.RawModule(GLOBAL_SOURCE, options=("-lineinfo",), name="global.cu")
    keys = np.arange(512, dtype=np.int32)
    cpu.launch(m.get_function("histogram_plain"), (4,), (128,),
               (keys, np.zeros(16, np.int32), np.int32(512)), sanitize="racecheck", )
    found = {tuple(json.loads(k)[2:]) for k in sanitizer.seen()}
    assert ("WAW", "global.cu:4", "global.cu:4") in found, found
    sanitizer.reset()
    bins = np.zeros(16, np.int32)
    cpu.launch(m.get_function("histogram_atomic"), (4,), (128,), (keys, bins, np.int32(512)),
               sanitize="racecheck")
    x, y = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    cpu.launch(m.get_function("saxpy"), (4,), (256,), (x, y, np.int32(1000)),
               sanitize="racecheck")
    assert sanitizer.seen() == {}
    np.testing.assert_array_equal(bins, np.full(16, 32))
    np.testing.assert_array_equal(y, np.full(1000, 2.0, np.float32))


BLOCKS_SOURCE = r'''
extern "C" __global__ void last_writer(int* out) {
    if (threadIdx.x == 0) out[0] = blockIdx.x;               // line 3: every block writes
}
__device__ unsigned int retired;
extern "C" __global__ void reduce(const float* x, float* partial, float* out, int fenced) {
    __shared__ bool last;
    int t = threadIdx.x;
    if (t == 0) {
        float s = 0;
        for (int i = 0; i < 64; i++) s += x[blockIdx.x * 64 + i];
        partial[blockIdx.x] = s;                             // line 12
        if (fenced) __threadfence();
        unsigned int ticket = atomicInc(&retired, gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {                                    // the last block to finish sums
        float s = 0;
        for (int b = 0; b < gridDim.x; b++) s += partial[b]; // line 20
        out[0] = s;
        retired = 0;
    }
}
extern "C" __global__ void count_then_reset(int* count) {
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 2) count[0] = 0;                       // line 27: a plain store
    else atomicAdd(count, 1);                                // line 28
}
extern "C" __global__ void publish(int* data, unsigned int* flag, int* out, int release) {
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 0) {
        data[0] = 42;                                        // line 33
        if (release)
            asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(1) : "memory");
        else
            flag[0] = 1;                                     // line 37
    } else {
        unsigned int f;
        if (release)
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flag) : "memory");
        else
            f = flag[0];                                     // line 43
        out[blockIdx.x] = f ? data[0] : -1;                  // line 44
    }
}
extern "C" __global__ void coefficient(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (i < n) y[i] = 2.0f * y[0] + i;                       // every block reads y[0]
}
'''


@pytest.fixture(scope="module")
def blocks_module():
    return dptx.RawModule(BLOCKS_SOURCE, options=("-lineinfo",), name="blocks.cu")


def _between_blocks(launch) -> set:
    """(kind, first location, second) of each hazard between blocks ``launch()`` reports."""
    sanitizer.reset()
    launch()
    keys = [json.loads(k) for k in sanitizer.seen()]
    assert all(k[-1] == "between blocks" for k in keys), keys
    return {tuple(k[2:5]) for k in keys}


def test_racecheck_between_blocks(blocks_module, form, capsys):
    """Blocks of a launch run in any order: a word two blocks write, a partial sum read by
    the last block without the writer's __threadfence(), a plain store beside other blocks'
    atomics, a flag published by plain accesses are hazards between blocks, named with both
    blocks and lines; with the fence, or a release and an acquire, they are not, and every
    result is the plain build's."""
    m = blocks_module
    found = _between_blocks(lambda: cpu.launch(m.get_function("last_writer"), (4,), (32,),
                                               (np.zeros(1, np.int32),), sanitize="racecheck"))
    assert found == {("WAW", "blocks.cu:3", "blocks.cu:3")}
    assert "of block 0 (0, 0, 0)" in capsys.readouterr().err

    x = np.arange(8 * 64, dtype=np.float32)
    for fenced in (0, 1):
        out = np.zeros(1, np.float32)
        found = _between_blocks(lambda: cpu.launch(
            m.get_function("reduce"), (8,), (32,),
            (x, np.zeros(8, np.float32), out, np.int32(fenced)), sanitize="racecheck"))
        assert found == (set() if fenced else {("RAW", "blocks.cu:12", "blocks.cu:20")})
        assert out[0] == x.sum()

    count = np.zeros(1, np.int32)
    found = _between_blocks(lambda: cpu.launch(m.get_function("count_then_reset"), (4,), (32,),
                                               (count,), sanitize="racecheck"))
    assert found == {("ATOMIC", "blocks.cu:28", "blocks.cu:27"),
                     ("ATOMIC", "blocks.cu:27", "blocks.cu:28")}, found

    for release in (1, 0):
        out = np.zeros(3, np.int32)
        found = _between_blocks(lambda: cpu.launch(
            m.get_function("publish"), (3,), (32,),
            (np.zeros(1, np.int32), np.zeros(1, np.uint32), out, np.int32(release)),
            sanitize="racecheck"))
        assert found == (set() if release else {("RAW", "blocks.cu:37", "blocks.cu:43"),
                                                ("RAW", "blocks.cu:33", "blocks.cu:44")}), found
        np.testing.assert_array_equal(out, [0, 42, 42])   # (blocks run in order here)

    y = np.ones(1000, np.float32)
    assert _between_blocks(lambda: cpu.launch(m.get_function("coefficient"), (4,), (256,),
                                              (y, np.int32(1000)), sanitize="racecheck")) == set()
    np.testing.assert_array_equal(y[1:], 2.0 + np.arange(1, 1000, dtype=np.float32))


HELPERS_SOURCE = r'''
extern "C" __global__ void mbarrier_exchange(const int* x, int* out, int wait) {
    __shared__ int s[64];
    __shared__ unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    int t = threadIdx.x;
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(b), "r"(64));
    __syncthreads();
    s[t] = x[t];                                             // line 9
    unsigned long long state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(b) : "memory");
    unsigned int done = !wait;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(b), "l"(state) : "memory");
    out[t] = s[63 - t];                                      // line 16
}
extern "C" __global__ void async_copy(const int* x, int* out, int wait) {
    __shared__ int s[64];
    int t = threadIdx.x;
    unsigned d = (unsigned)__cvta_generic_to_shared(&s[t]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;"  // line 22: writes s[t]
                 :: "r"(d), "l"(x + t) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (wait) __syncthreads();
    out[t] = s[63 - t];                                      // line 26
}
'''


@pytest.mark.parametrize("name, first, second", [("mbarrier_exchange", 9, 16),
                                                 ("async_copy", 22, 26)])
def test_mbarrier_phases_and_async_copies(form, name, first, second):
    """A completed mbarrier phase orders what its threads did before arriving before what
    the waiting thread does next; cp.async writes its shared operand. Without the wait (or
    the barrier) each kernel races, named with both lines; with it, none."""
    m = dptx.RawModule(HELPERS_SOURCE, options=("-lineinfo", "--gpu-architecture=compute_80"),
                       name="helpers.cu")
    x = np.arange(64, dtype=np.int32)
    for wait in (1, 0):
        sanitizer.reset()
        out = np.zeros(64, np.int32)
        cpu.launch(m.get_function(name), (1,), (64,), (x, out, np.int32(wait)),
                   sanitize="racecheck")
        found = {tuple(json.loads(k)[2:]) for k in sanitizer.seen()}
        if wait:
            assert found == set()
            np.testing.assert_array_equal(out, x[::-1])
        else:
            assert ("RAW", f"helpers.cu:{first}", f"helpers.cu:{second}") in found, found
