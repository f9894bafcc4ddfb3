"""Never an open proxy: hosts not allowed get 403 naming the allowlist, CONNECT before TLS."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest
from forward_helpers import HOST, Up, curl, log_records


def raw_connect(up: Up, target: str) -> tuple[str, dict[str, object]]:
    """Send a bare CONNECT; return the status line and the JSON body of the reply."""
    address = urlsplit(up.forward)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), json.loads(body)


@pytest.mark.parametrize(
    "target",
    [
        "other.example.test:443",
        f"{HOST}:8443",  # the allowed host, on a port that is not allowed
        "127.0.0.1:443",
    ],
)
def test_connect_to_a_host_not_allowed_is_refused_before_tls(forward_up: Up, target: str) -> None:
    status, body = raw_connect(forward_up, target)
    assert status.startswith("HTTP/1.1 403")
    assert body["error"] == "host_not_allowed"
    assert body["allowed"] == [f"https://{HOST}"]
    assert target.rsplit(":", 1)[0] in str(body["message"])


def test_connect_to_the_reverse_proxy_itself_is_refused(forward_up: Up) -> None:
    reverse = urlsplit(forward_up.proxy).netloc
    status, body = raw_connect(forward_up, reverse)
    assert status.startswith("HTTP/1.1 403"), "the forward proxy must not reach its engine"
    assert body["allowed"] == [f"https://{HOST}"]


def test_plain_http_to_a_host_not_allowed_gets_403_with_the_allowlist(forward_up: Up) -> None:
    done = curl(forward_up, "-i", "http://other.example.test/tools/anything")
    head, _, body = done.stdout.partition("\n\n")
    assert head.startswith("HTTP/1.1 403")
    assert json.loads(body)["allowed"] == [f"https://{HOST}"]


def test_plain_http_to_the_allowed_host_is_not_its_https_origin(forward_up: Up) -> None:
    done = curl(forward_up, "-i", f"http://{HOST}/tools/search_flights")
    assert done.stdout.startswith("HTTP/1.1 403")
    assert f"http://{HOST}:80" in json.loads(done.stdout.partition("\n\n")[2])["message"]


def test_curl_sees_the_refused_connect_and_nothing_is_logged(forward_up: Up) -> None:
    log = forward_up.run_dir / "calls.jsonl"
    before = log.read_text() if log.exists() else ""
    done = curl(forward_up, "-w", "%{http_connect}", "https://other.example.test/")
    assert done.returncode != 0
    assert done.stdout.strip() == "403"
    assert (log.read_text() if log.exists() else "") == before


def test_a_spoofed_host_header_still_goes_to_the_connected_host(forward_up: Up) -> None:
    done = curl(
        forward_up,
        "--cacert",
        str(forward_up.ca_cert),
        "-H",
        "Host: other.example.test",
        "-H",
        "X-Chaos-Episode: spoof-1",
        f"https://{HOST}/openapi.json",
    )
    (record,) = log_records(forward_up, "spoof-1")
    assert record["domain"] == HOST
    assert record["upstream_status"] == 200
    assert done.returncode == 0
