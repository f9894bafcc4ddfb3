"""The allowlist, the flags of `up`, mitmproxy's venv location and the addon's imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from chaosproxy.forward.allowlist import AllowEntry, AllowError, Allowlist, parse_allow
from chaosproxy.forward.mitmenv import venv_dir
from chaosproxy.forward.plan import ForwardPlan, PlanError

CLI = "from chaosproxy.cli import main; main()"


@pytest.mark.parametrize(
    ("spec", "entry"),
    [
        ("api.example.com", AllowEntry("https", "api.example.com", 443)),
        ("API.Example.com:8443", AllowEntry("https", "api.example.com", 8443)),
        ("http://svc.local", AllowEntry("http", "svc.local", 80)),
        ("https://h.test/", AllowEntry("https", "h.test", 443)),
        ("h.test=127.0.0.1:9443", AllowEntry("https", "h.test", 443, ("127.0.0.1", 9443))),
        ("10.0.0.5:8080", AllowEntry("https", "10.0.0.5", 8080)),
    ],
)
def test_allow_entries_parse(spec: str, entry: AllowEntry) -> None:
    assert parse_allow(spec) == entry


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "expected [https://]HOST"),
        ("*.example.com", "expected [https://]HOST"),
        ("a_b.com", "expected [https://]HOST"),
        ("h.test:0", "is not a port"),
        ("h.test:http", "is not a port"),
        ("h.test=127.0.0.1", "ADDR:PORT"),
        ("localhost", "cannot be allowed"),
        ("e", "cannot be allowed"),
    ],
)
def test_bad_allow_entries_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(AllowError, match="--allow") as caught:
        parse_allow(spec)
    assert message in str(caught.value)


def test_the_allowlist_maps_hosts_to_upstreams_and_pins() -> None:
    allow = Allowlist(["api.example.test=127.0.0.1:8443", "http://plain.test:8080"])
    assert allow.upstreams() == {
        "api.example.test": "https://api.example.test",
        "plain.test": "http://plain.test:8080",
    }
    assert allow.resolve_map() == {"api.example.test:443": "127.0.0.1:8443"}
    with pytest.raises(AllowError, match="allow each host once"):
        Allowlist(["h.test", "h.test:8443"])


def test_plan_checks_flags_together(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="--allow needs --forward-port"):
        ForwardPlan.from_flags(None, ["h.test"])
    with pytest.raises(PlanError, match="never open"):
        ForwardPlan.from_flags(0, [])
    with pytest.raises(PlanError, match="no such file"):
        ForwardPlan.from_flags(0, ["h.test"], upstream_ca=tmp_path / "missing.pem")
    plan = ForwardPlan.from_flags(0, [], profile_allow=["h.test"])
    assert plan.upstreams() == {"h.test": "https://h.test"}
    with pytest.raises(PlanError, match="clash with --upstream"):
        plan.upstreams(taken=["h.test"])
    assert ForwardPlan.from_flags(None, [], profile_allow=["h.test"]).upstreams() == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--domains", "none", "--allow", "h.test"], "--allow needs --forward-port"),
        (["--domains", "none", "--forward-port", "0"], "at least one --allow"),
        (["--domains", "none", "--forward-port", "0", "--allow", "a_b"], "--allow 'a_b'"),
        (["--domains", "none"], "nothing to serve"),
    ],
)
def test_up_refuses_bad_forward_flags(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLI, "up", "--run-dir", str(tmp_path / "r"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_mitm_venv_lives_in_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert venv_dir() == tmp_path / "chaosproxy" / "mitm-venv"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert venv_dir() == tmp_path / "home" / ".cache" / "chaosproxy" / "mitm-venv"


def test_the_addon_imports_only_the_standard_library_and_mitmproxy() -> None:
    source = Path(__file__).resolve().parents[2] / "chaosproxy" / "forward" / "addon.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"__future__", "mitmproxy"} <= set(sys.stdlib_module_names)
    assert "mitmproxy" in imported
