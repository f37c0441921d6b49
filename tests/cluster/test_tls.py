"""A deployed cluster over TLS (issue 20): a scheduler and two workers started with the dask
CLI, Dask's ``--tls-*`` options and the dptx preloads, on 127.0.0.1; a client with the CA and
a certificate runs a launch, a client without a certificate (or over plain TCP) is refused.
The certificates are made for the test with the openssl command line."""
import os
import shutil
import subprocess
import sys

import pytest

from .test_deploy import ROOT, _free_port, run_python, stop_processes

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="needs the openssl command to make certificates")


def _certificates(folder) -> dict:
    """A CA, and one key and certificate it signed for 127.0.0.1 (nodes and client)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=dptx test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr",
            "-subj", "/CN=127.0.0.1")
    with open(os.path.join(folder, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.pem", "-days", "2", "-extfile", "san.ext")
    return {k: os.path.join(folder, f) for k, f in
            (("ca", "ca.pem"), ("cert", "node.pem"), ("key", "node.key"))}


@pytest.mark.timeout(300)
def test_a_launch_through_a_tls_scheduler_and_workers(tmp_path):
    certs = _certificates(str(tmp_path))
    tls = ["--tls-ca-file", certs["ca"], "--tls-cert", certs["cert"], "--tls-key", certs["key"]]
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    procs = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--protocol", "tls",
         "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0",
         "--preload", "scheduler_plugins", *tls], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)]
    for _ in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
             "--preload", "dptx.worker", "--no-dashboard", "--local-directory", str(tmp_path),
             *tls], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        client_env = {"DASK_DPTX__SCHEDULER_ADDRESS": address,
                      "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": certs["ca"],
                      "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": certs["cert"],
                      "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": certs["key"],
                      "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
        code = (
            "import time, dptx\n"
            "c = dptx.client()\n"
            "deadline = time.time() + 90\n"
            "while len(c.nthreads()) < 2 and time.time() < deadline: time.sleep(0.2)\n"
            "print('workers', sorted(a.split(':')[0] for a in c.nthreads()))\n"
            "import runpy; runpy.run_path('examples/vecadd.py', run_name='x')['main'](100_000) or exit(1)\n")
        proc = run_python(["-c", code], client_env, timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "workers ['tls', 'tls']" in proc.stdout, proc.stdout
        assert "matches numpy bitwise: True" in proc.stdout

        # no certificate: a TLS connection that trusts the CA but shows none is refused by
        # the scheduler (the handshake, or the first message, fails)
        refused = (
            "import asyncio, ssl\n"
            "from distributed.comm import connect\n"
            f"ctx = ssl.create_default_context(cafile={certs['ca']!r})\n"
            "ctx.check_hostname = False\n"
            "async def main():\n"
            f"    comm = await connect({address!r}, timeout=10, ssl_context=ctx)\n"
            "    await comm.write({'op': 'identity'})\n"
            "    print('answered', await comm.read())\n"
            "asyncio.run(main())\n"
            "print('connected')\n")
        proc = run_python(["-c", refused], {}, timeout=120)
        assert proc.returncode != 0 and "connected" not in proc.stdout, proc.stdout
        assert "answered" not in proc.stdout
        print("without a certificate:", proc.stderr.strip().splitlines()[-1])
        # plain TCP to the TLS port: refused too
        plain = ("from distributed import Client\n"
                 f"Client({address.replace('tls://', 'tcp://')!r}, timeout=10)\n"
                 "print('connected')\n")
        proc = run_python(["-c", plain], {}, timeout=120)
        assert proc.returncode != 0 and "connected" not in proc.stdout, proc.stdout
        print("over plain TCP:", proc.stderr.strip().splitlines()[-1])
    finally:
        stop_processes(procs)
