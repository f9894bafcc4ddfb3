"""A real HTTPS service with its own CA on 127.0.0.1, and `chaosproxy up` with forward mode."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from chaosproxy.domains.kit.testing import bind_socket
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from chaosproxy.forward.mitmenv import venv_dir

CLI = "from chaosproxy.cli import main; main()"
HOST = "api.example.test"
"""The name the agent uses; nothing resolves it: `--allow HOST=127.0.0.1:PORT` pins it."""


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(folder: Path, names: list[str]) -> Certs:
    """A throwaway CA and a leaf certificate for `names`, signed by it."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "chaosproxy test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    certs = Certs(folder / "test-ca.pem", folder / "service.pem", folder / "service-key.pem")
    certs.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    certs.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certs


def public_name(app: Any, name: str) -> Any:
    """Let `app` answer to `Host: name` as a hosted service answers to its own name.

    The domain apps' MCP endpoint (FastMCP) refuses foreign Host headers when bound to
    loopback (DNS-rebinding protection); a real `api.example.com` accepts its own name.
    """

    async def app_with_name(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [
                (key, b"127.0.0.1")
                if key == b"host" and value.split(b":")[0] == name.encode()
                else (key, value)
                for key, value in scope["headers"]
            ]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return app_with_name


@contextmanager
def serve_https(app: Any, certs: Certs) -> Iterator[int]:
    """Serve `app` over TLS on a free 127.0.0.1 port (in a thread); yields the port."""
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
        ssl_certfile=str(certs.cert),
        ssl_keyfile=str(certs.key),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the HTTPS test service did not start")
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@dataclass
class Up:
    process: subprocess.Popen[str]
    proxy: str
    forward: str | None
    run_dir: Path
    lines: list[str]
    home: Path

    @property
    def ca_cert(self) -> Path:
        return self.run_dir / "ca-cert.pem"

    @property
    def ca_bundle(self) -> Path:
        return self.run_dir / "ca-bundle.pem"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_up(args: list[str], run_dir: Path, timeout: float = 120.0) -> Up:
    """`chaosproxy up --port 0 ARGS`, read until it says it is ready.

    HOME is an empty folder of its own (mitmproxy must not touch `~/.mitmproxy`); the
    cache, where mitmproxy's venv lives, stays the real one.
    """
    home = run_dir.parent / (run_dir.name + "-home")
    home.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(venv_dir().parent.parent),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", CLI, "up", "--port", "0", "--run-dir", str(run_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("Ctrl-C"):
            text = "\n".join(lines)
            proxy = re.search(r"^chaosproxy (http://127\.0\.0\.1:\d+)", text, re.M)
            forward = re.search(r"^forward:\s+(http://127\.0\.0\.1:\d+)", text, re.M)
            assert proxy is not None, text
            forward_url = forward.group(1) if forward else None
            return Up(process, proxy.group(1), forward_url, run_dir, lines, home)
    process.kill()
    stderr = process.stderr.read() if process.stderr else ""
    raise AssertionError(f"up did not start; stdout: {lines}; stderr: {stderr}")


def forward_args(certs: Certs, port: int, profile: str = "lambda0.0", seed: int = 0) -> list[str]:
    return [
        "--domains",
        "none",
        "--forward-port",
        "0",
        "--allow",
        f"{HOST}=127.0.0.1:{port}",
        "--upstream-ca",
        str(certs.ca),
        "--profile",
        profile,
        "--seed",
        str(seed),
    ]


def log_records(up: Up, episode: str) -> list[dict[str, Any]]:
    path = up.run_dir / "calls.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [record for record in map(json.loads, lines) if record["episode"] == episode]


def curl(up: Up, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["curl", "-sS", "--max-time", "20", "--proxy", up.forward or "", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
