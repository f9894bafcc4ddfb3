"""The forward proxy's lifecycle: mitmdump with our addon, its CA in the run directory.

mitmproxy's confdir (its CA key and certificate) is `RUN_DIR/forward/mitm`, never
`~/.mitmproxy`; the CA certificate is copied to `RUN_DIR/ca-cert.pem`, and
`RUN_DIR/ca-bundle.pem` holds the system's CAs plus ours, for clients whose CA variable
replaces the system store (Python's `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from pathlib import Path
from types import TracebackType

from chaosproxy.errors import ChaosError
from chaosproxy.forward.allowlist import Allowlist
from chaosproxy.forward.mitmenv import find_mitmdump

ADDON = Path(__file__).with_name("addon.py")
START_TIMEOUT_S = 60.0


class ForwardError(ChaosError, RuntimeError):
    """The forward proxy did not start; the message carries mitmdump's own words."""


def _system_cafile() -> Path | None:
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


class ForwardProxy:
    """mitmdump in regular (forward) mode in front of the reverse proxy at `reverse_url`."""

    def __init__(
        self,
        *,
        allowlist: Allowlist,
        reverse_url: str,
        run_dir: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        echo: bool = True,
    ) -> None:
        self.allowlist = allowlist
        self.reverse_url = reverse_url.replace("://0.0.0.0:", "://127.0.0.1:").replace(
            "://[::]:", "://[::1]:"
        )
        self.dir = run_dir.resolve() / "forward"
        self.run_dir = run_dir.resolve()
        self.host = host
        self.port = port
        self._echo = echo
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        shown = "127.0.0.1" if host == "0.0.0.0" else host
        return f"http://{shown}:{self.port}"

    @property
    def ca_cert(self) -> Path:
        return self.run_dir / "ca-cert.pem"

    @property
    def ca_bundle(self) -> Path:
        return self.run_dir / "ca-bundle.pem"

    def _write_config(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = {
            "reverse": self.reverse_url,
            "allow": [
                {"scheme": e.scheme, "host": e.host, "port": e.port} for e in self.allowlist.entries
            ],
            "origins": self.allowlist.origins(),
            "ready_file": str(self.dir / "ready.json"),
        }
        path = self.dir / "config.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        return path

    async def start(self) -> ForwardProxy:
        from click import echo

        mitmdump = await asyncio.to_thread(
            find_mitmdump,
            echo=(lambda text: echo(text, err=True)) if self._echo else (lambda text: None),
        )
        config = self._write_config()
        ready = self.dir / "ready.json"
        ready.unlink(missing_ok=True)
        log = (self.dir / "mitmdump.log").open("ab")
        self._process = await asyncio.create_subprocess_exec(
            str(mitmdump),
            "--mode",
            "regular",
            "--listen-host",
            self.host,
            "--listen-port",
            str(self.port),
            "-s",
            str(ADDON),
            "--set",
            f"chaos_config={config}",
            "--set",
            f"confdir={self.dir / 'mitm'}",
            "--set",
            "connection_strategy=lazy",
            "--set",
            "upstream_cert=false",
            "--set",
            "onboarding=false",
            "--set",
            "flow_detail=0",
            "--set",
            "termlog_verbosity=warn",
            stdout=log,
            stderr=log,
            stdin=asyncio.subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.is_file():
            if self._process.returncode is not None or time.monotonic() > deadline:
                await self.stop()
                text = (self.dir / "mitmdump.log").read_text(errors="replace")[-3000:]
                raise ForwardError(f"the forward proxy (mitmdump) did not start: {text.strip()}")
            await asyncio.sleep(0.05)
        self.port = json.loads(ready.read_text())["ports"][0]
        self._publish_ca()
        return self

    def _publish_ca(self) -> None:
        cert = (self.dir / "mitm" / "mitmproxy-ca-cert.pem").read_bytes()
        self.ca_cert.write_bytes(cert)
        system = _system_cafile()
        bundle = (system.read_bytes().rstrip(b"\n") + b"\n" if system else b"") + cert
        self.ca_bundle.write_bytes(bundle)

    def client_settings(self) -> list[str]:
        """The lines `up` prints: what an agent sets to use the forward proxy."""
        return [
            f"forward:  {self.url}  allowed: {', '.join(self.allowlist.origins())}",
            f"  export HTTPS_PROXY={self.url} HTTP_PROXY={self.url}",
            f"  export SSL_CERT_FILE={self.ca_bundle} REQUESTS_CA_BUNDLE={self.ca_bundle}",
            f"  export NODE_EXTRA_CA_CERTS={self.ca_cert}",
            f"  curl --proxy {self.url} --cacert {self.ca_cert} https://HOST/...",
            "  episode: header X-Chaos-Episode, or the proxy user name "
            f"(http://EPISODE:x@{self.url.removeprefix('http://')}), else 'default'",
        ]

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10.0)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def __aenter__(self) -> ForwardProxy:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
