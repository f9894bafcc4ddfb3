"""Escape battery for the coding sandbox: each technique is judged by its effect on the host.

Every snippet first switches off the in-interpreter guard (the audit hook's `_refusal`, the
`open` builtin, the import allowlist), as the issue's attacker did, so what is tested is the
kernel's confinement. A technique fails the test only by what it did: a file created, deleted
or renamed outside the repository's copy, a secret's content in anything the tool returned, a
connection accepted by a listener of this test, a signal that killed a process of this test, a
forged result or grade, a process left behind.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from chaosproxy.domains.coding import sandbox
from chaosproxy.domains.coding.grading import run_suite, suite_passes
from chaosproxy.domains.coding.sandbox import SandboxLimits, SandboxRun, run_snippet, run_tests
from chaosproxy.domains.coding.seed.world import make_default_state
from chaosproxy.domains.coding.state import CodingState, RepoFile
from domain_driver import fresh_episode

pytestmark = pytest.mark.timeout(120)

# Undo every Python-level guard first: the kernel must hold without them.
UNGUARD = """\
import sys, io, builtins
sys.modules['__main__']._refusal = lambda event, args: None
__builtins__['open'] = builtins.open = io.open
"""
PROJECT_SOURCE = Path(sandbox.__file__)
PROJECT_MARKER = "REQUIRED_LANDLOCK_ABI"


@dataclass
class Host:
    """What the battery watches on the host while a technique runs."""

    secret: Path
    token: str
    victim: Path
    victim_token: str
    target: Path
    open_dir: Path
    port: int
    listener: socket.socket
    sleeper: subprocess.Popen[bytes]
    marker: str

    def fill(self, code: str) -> str:
        return (
            code.replace("SECRET", str(self.secret))
            .replace("VICTIM", str(self.victim))
            .replace("TARGET", str(self.target))
            .replace("OPENDIR", str(self.open_dir))
            .replace("PORT", str(self.port))
            .replace("SLEEPER", str(self.sleeper.pid))
            .replace("PROJECT", str(PROJECT_SOURCE))
            .replace("MARKER", self.marker)
        )

    def effects(self, run: SandboxRun) -> list[str]:
        """Everything the technique changed on the host; empty when the kernel held."""
        seen = run.model_dump_json()
        found = []
        if self.token in seen:
            found.append("read the secret file")
        if "root:x:0:0" in seen:
            found.append("read /etc/passwd")
        if f"{PROJECT_MARKER} = " in seen:
            found.append("read the project's source")
        if self.target.exists():
            found.append(f"created {self.target}")
        if list(self.open_dir.iterdir()) != [self.victim]:
            found.append(
                f"changed {self.open_dir}: {sorted(p.name for p in self.open_dir.iterdir())}"
            )
        if not self.victim.exists() or self.victim.read_text() != self.victim_token:
            found.append("deleted or changed the victim file")
        self.listener.setblocking(False)
        try:
            connection, _ = self.listener.accept()
            connection.close()
            found.append("connected to the host's listener")
        except BlockingIOError:
            pass
        if self.sleeper.poll() is not None:
            found.append("signalled a host process")
        if _processes_with(self.marker):
            found.append("left a process behind")
        return found


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    token = f"secret-{uuid.uuid4().hex}"
    secret = tmp_path / "secret.txt"
    secret.write_text(token)
    secret.chmod(0o644)  # world-readable: only the kernel's confinement can refuse it
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # anyone may create and delete here, as far as file modes go
    victim = open_dir / "victim.txt"
    victim_token = f"victim-{uuid.uuid4().hex}"
    victim.write_text(victim_token)
    victim.chmod(0o666)
    tmp_path.chmod(0o755)
    marker = f"chaosmarker{uuid.uuid4().hex[:10]}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        yield Host(
            secret=secret,
            token=token,
            victim=victim,
            victim_token=victim_token,
            target=open_dir / "created.txt",
            open_dir=open_dir,
            port=listener.getsockname()[1],
            listener=listener,
            sleeper=sleeper,
            marker=marker,
        )
    finally:
        listener.close()
        sleeper.kill()
        sleeper.wait()


TECHNIQUES = [
    (
        "replace __main__._refusal, read a secret",
        "open('SECRET').read()",
    ),
    (
        "read /etc/passwd",
        "open('/etc/passwd').read()",
    ),
    (
        "read the project's source",
        "open('PROJECT').read()",
    ),
    (
        "_io.open bypassing builtins",
        "import _io",
        "_io.open('SECRET').read()",
    ),
    (
        "posix.open and read",
        "import posix",
        "fd = posix.open('SECRET', posix.O_RDONLY)",
        "posix.read(fd, 200)",
    ),
    (
        "list a host directory",
        "import os",
        "os.listdir('OPENDIR')",
    ),
    (
        "create a file outside the copy",
        "open('TARGET', 'w').write('x')",
    ),
    (
        "os.open O_CREAT outside the copy",
        "import os",
        "os.open('TARGET', os.O_CREAT | os.O_WRONLY, 0o666)",
    ),
    (
        "delete a host file",
        "import os",
        "os.unlink('VICTIM')",
    ),
    (
        "rename a host file",
        "import os",
        "os.rename('VICTIM', 'TARGET')",
    ),
    (
        "truncate a host file",
        "import os",
        "os.truncate('VICTIM', 0)",
    ),
    (
        "symlink out of the copy",
        "import os",
        "os.symlink('SECRET', 'leak')",
        "open('leak').read()",
    ),
    (
        "hard link out of the copy",
        "import os",
        "os.link('VICTIM', 'TARGET')",
    ),
    (
        "socket to the host's listener",
        "import _socket",
        "s = _socket.socket()",
        "s.connect(('127.0.0.1', PORT))",
    ),
    (
        "socket through ctypes",
        "import ctypes, struct",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "fd = libc.socket(2, 1, 0)",
        "addr = struct.pack('!HH4s8x', 2, PORT, bytes([127, 0, 0, 1]))",
        "addr = addr[:2][::-1] + addr[2:]",
        "(fd, libc.connect(fd, addr, 16), ctypes.get_errno())",
    ),
    (
        "UDP datagram",
        "import _socket",
        "s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)",
        "s.sendto(b'x', ('127.0.0.1', PORT))",
    ),
    (
        "_posixsubprocess.fork_exec",
        "import _posixsubprocess, os",
        "r, w = os.pipe()",
        "_posixsubprocess.fork_exec([b'/usr/bin/touch', b'TARGET'], [b'/usr/bin/touch'], "
        "True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, "
        "None, None, -1, None, False)",
    ),
    (
        "os.fork then write",
        "import os",
        "if os.fork() == 0:",
        "    open('TARGET', 'w').write('x')",
        "    os._exit(0)",
    ),
    (
        "posix_spawn",
        "import os",
        "os.posix_spawn('/usr/bin/touch', ['touch', 'TARGET'], {})",
    ),
    (
        "execv a shell",
        "import os",
        "os.execv('/bin/sh', ['sh', '-c', 'touch TARGET'])",
    ),
    (
        "ctypes system()",
        "import ctypes",
        "ctypes.CDLL(None).system(b'touch TARGET; sleep 30 # MARKER')",
    ),
    (
        "raw execve syscall",
        "import ctypes",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "argv = (ctypes.c_char_p * 3)(b'/bin/true', b'MARKER', None)",
        "libc.syscall(59, b'/bin/true', argv, None), ctypes.get_errno()",
    ),
    (
        "raw fork syscall, child sleeps",
        "import ctypes, time",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "if libc.syscall(57) == 0:",
        "    time.sleep(30)",
        "ctypes.get_errno()",
    ),
    (
        "__subclasses__ gadget chain",
        "w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]",
        "w.__init__.__globals__['system']('touch TARGET')",
    ),
    (
        "builtins and module tampering",
        "import builtins, os",
        "builtins.__import__ = __import__",
        "os.open = lambda *a: 0",
        "import posix",
        "fd = posix.open('SECRET', 0)",
        "posix.read(fd, 100)",
    ),
    (
        "/proc/self/root to the host",
        "open('/proc/self/root' + 'SECRET').read()",
    ),
    (
        "/proc/self/mem and environ",
        "open('/proc/self/environ', 'rb').read()",
    ),
    (
        "another process's /proc",
        "open('/proc/1/cmdline', 'rb').read() + open('/proc/SLEEPER/environ', 'rb').read()",
    ),
    (
        "signal a host process",
        "import os, signal",
        "os.kill(SLEEPER, signal.SIGKILL)",
    ),
    (
        "signal every process",
        "import os, signal",
        "os.kill(-1, signal.SIGKILL)",
    ),
    (
        "ptrace the supervisor",
        "import ctypes",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "[libc.ptrace(16, pid, 0, 0) for pid in (1, SLEEPER)], ctypes.get_errno()",
    ),
    (
        "new namespaces and mounts",
        "import ctypes",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "(libc.unshare(0x10000000), libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), "
        "ctypes.get_errno())",
    ),
    (
        "become root again",
        "import os",
        "os.setuid(0)",
        "open('SECRET').read()",
    ),
    (
        "raise the rlimits",
        "import resource",
        "resource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
    ),
    (
        "thread that outlives the snippet",
        "import threading, time",
        "def later():",
        "    time.sleep(0.5)",
        "    open('TARGET', 'w').write('x')",
        "threading.Thread(target=later).start()",
        "'returned'",
    ),
    (
        "frame walk to the worker's request",
        "import sys",
        "f = sys._getframe()",
        "while f is not None:",
        "    r = f.f_locals.get('request')",
        "    if isinstance(r, dict):",
        "        r['_copy'] = '/'",
        "        r['limits']['cpu_seconds'] = 99",
        "    f = f.f_back",
        "open('SECRET').read()",
    ),
]


@pytest.mark.parametrize(
    ("label", "code"),
    [(label, "\n".join(lines)) for label, *lines in TECHNIQUES],
    ids=[label for label, *_ in TECHNIQUES],
)
def test_technique_has_no_effect_on_the_host(host: Host, label: str, code: str) -> None:
    run = run_snippet({"pkg/__init__.py": "", "README.md": "the copy\n"}, UNGUARD + host.fill(code))
    time.sleep(0.7 if "thread" in label else 0)
    assert host.effects(run) == [], run
    # The in-interpreter guard is off: whatever stopped the technique was the kernel.
    assert run.error is None or run.error.type != "SandboxViolation", run


def test_battery_is_large_enough() -> None:
    assert len(TECHNIQUES) >= 25


def test_unguarded_snippet_still_runs_and_sees_only_its_copy(host: Host) -> None:
    """The guard is really off in the battery, and what the kernel allows still works."""
    run = run_snippet(
        {"pkg/__init__.py": "VALUE = 7\n", "README.md": "the copy\n"},
        UNGUARD + "import os, pkg\n(pkg.VALUE, open('README.md').read(), sorted(os.listdir('.')))",
    )
    assert run.status == "ok", run
    assert run.value == "(7, 'the copy\\n', ['README.md', 'pkg'])"
    refused = run_snippet({}, UNGUARD + host.fill("open('SECRET').read()"))
    # The copy is the worker's root: a host path names nothing there.
    assert refused.error is not None and refused.error.type == "FileNotFoundError", refused
    assert host.token not in refused.model_dump_json()


def test_result_channel_is_out_of_reach(host: Host) -> None:
    """Writing a forged supervisor answer on every descriptor changes nothing in the result."""
    forged = '{"runs": [{"unit": null, "report": "{\\"value\\": \\"FORGED\\"}", "exit": 0}]}'
    code = (
        f"import os\nfor fd in range(0, 64):\n    if fd != 3:\n        try:\n"
        f"            os.write(fd, {forged!r}.encode())\n        except OSError:\n"
        f"            pass\n'real'"
    )
    run = run_snippet({}, UNGUARD + code)
    assert run.status == "ok" and run.value == "'real'", run
    assert "FORGED" not in run.model_dump_json()


def test_forged_report_cannot_hide_a_kill() -> None:
    """A worker that writes an 'ok' report and then runs out of CPU is reported as stopped."""
    code = (
        "import os, json\nos.write(3, json.dumps({'value': \"'fine'\", 'error': None}).encode())\n"
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    )
    run = run_snippet({}, UNGUARD + code, SandboxLimits(cpu_seconds=1, wall_seconds=3))
    assert run.status == "timeout" and run.value is None, run
    assert run.error is not None and "time limit" in run.error.message


def test_a_test_file_cannot_forge_another_files_results() -> None:
    """The issue's forged pass: a test file written by the agent patches the runner."""
    repo = make_default_state().repositories["ledger"]
    files = repo.sources()
    forge = (
        "import sys, os, json\n"
        "names = ['test_balance', 'test_monthly_totals']\n"
        "os.write(3, json.dumps({'tests': [{'test_id': 'tests/test_report.py::' + n,\n"
        "    'file': 'tests/test_report.py', 'name': n, 'status': 'passed', 'message': ''}\n"
        "    for n in names]}).encode())\n"
        "f = sys._getframe()\n"
        "while f is not None:\n"
        "    if 'outcomes' in f.f_locals:\n"
        "        f.f_locals['outcomes'].clear()\n"
        "    f = f.f_back\n"
        "os._exit(0)\n"
    )
    files["tests/test_aaa_forge.py"] = forge
    tests = ["tests/test_aaa_forge.py", "tests/test_report.py"]
    run = run_tests(files, tests)
    report = {t.test_id: t.status for t in run.tests if t.file == "tests/test_report.py"}
    assert report["tests/test_report.py::test_balance"] == "failed"
    assert report["tests/test_report.py::test_monthly_totals"] == "failed"
    forged = [t for t in run.tests if t.file == "tests/test_aaa_forge.py"]
    assert all(t.test_id.startswith("tests/test_aaa_forge.py::") for t in forged)


def test_a_written_test_file_cannot_forge_the_grade() -> None:
    """Hidden tests run in their own fresh workers: agent test files never share them."""
    state = make_default_state()
    repo = state.repositories["ledger"]
    assert not suite_passes(repo)
    hidden = sorted(repo.hidden_tests)
    name = "test_parentheses_are_negative"
    forge = (
        "import os, json, sys\n"
        "sys.modules['pytest'] = None\n"
        f"for path in {hidden!r}:\n"
        f"    os.write(3, json.dumps({{'tests': [{{'test_id': path + '::{name}',\n"
        f"        'file': path, 'name': '{name}', 'status': 'passed',\n"
        "        'message': ''}]}).encode())\n"
        "os._exit(0)\n"
    )
    repo.files["tests/test_aaa_forge.py"] = RepoFile(
        path="tests/test_aaa_forge.py", content=forge, updated_at=state.now
    )
    run = run_suite(repo)
    graded = {t.test_id: t.status for t in run.tests if t.file in hidden}
    assert graded[f"{hidden[0]}::test_parentheses_are_negative"] == "failed", run
    assert not suite_passes(repo)


BOMBS = [
    ("fork bomb", "import os\nwhile True:\n    os.fork()", {"error"}, "Operation not permitted"),
    (
        "thread bomb",
        "import threading, time\nwhile True:\n"
        "    threading.Thread(target=time.sleep, args=(5,)).start()",
        {"error"},
        "can't start new thread",
    ),
    (
        "memory bomb",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50_000_000))",
        {"memory_exceeded"},
        "memory limit of 256 MB",
    ),
    ("busy loop", "while True:\n    pass", {"timeout"}, "time limit"),
    (
        "busy loop ignoring SIGXCPU",
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
        {"timeout"},
        "time limit",
    ),
    (
        "disk fill in the copy",
        "open('big', 'wb').write(b'x' * 10_000_000)",
        {"error"},
        "Permission denied",
    ),
    (
        "report flood",
        "import os\nwhile True:\n    os.write(3, b'x' * 65536)",
        {"crashed"},
        "more output than the sandbox accepts",
    ),
]


@pytest.mark.parametrize(
    ("label", "code", "statuses", "fragment"), BOMBS, ids=[b[0] for b in BOMBS]
)
def test_resource_bomb_ends_with_a_clear_error(
    host: Host, label: str, code: str, statuses: set[str], fragment: str
) -> None:
    started = time.monotonic()
    run = run_snippet({}, UNGUARD + code)
    assert time.monotonic() - started < sandbox.DEFAULT_LIMITS.wall_seconds + 5
    assert run.status in statuses, run
    assert run.error is not None and fragment in run.error.message, run
    assert host.effects(run) == []
    after = run_snippet({}, "21 * 2")
    assert after.status == "ok" and after.value == "42"


def test_refuses_to_run_without_the_kernel_features(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel below the required Landlock ABI: a clear refusal, and the code never ran."""
    monkeypatch.setattr(sandbox, "REQUIRED_LANDLOCK_ABI", 999)
    with pytest.raises(sandbox.SandboxUnavailable, match=re.escape("Landlock ABI")):
        run_snippet({}, "open('TARGET', 'w')".replace("TARGET", str(host.target)))
    assert not host.target.exists()


def test_kernel_offers_what_the_sandbox_needs() -> None:
    """This project's machines (and CI) have Landlock, seccomp and namespaces: code runs."""
    assert sys.platform == "linux"
    run = run_snippet({}, "import os\n(os.getuid(), os.getgid(), os.getgroups(), os.getpid())")
    assert run.status == "ok" and run.value is not None, run
    uid, gid, groups, pid = eval(run.value)
    assert 200_000 <= uid < 200_000 + 65536 and gid == uid and groups == [] and pid == 2
    capabilities = run_snippet(
        {},
        UNGUARD + "import ctypes\nheader = (ctypes.c_uint32 * 2)(0x20080522, 0)\n"
        "sets = (ctypes.c_uint32 * 6)()\n(ctypes.CDLL(None).capget(header, sets), list(sets))",
    )
    assert capabilities.value == "(0, [0, 0, 0, 0, 0, 0])", capabilities
    others = {run_snippet({}, "import os\nos.getuid()").value for _ in range(2)}
    assert others != {str(uid)}  # one uid per call: three equal draws are a 1 in 4e9 chance


async def test_escape_through_the_live_service(
    host: Host, domain_url: Callable[[str], str]
) -> None:
    """Through the real server, as the agent would: the listener stays silent, the secret
    unread, and a test file written to forge a pass leaves the real failures failing."""
    async with fresh_episode(domain_url("coding"), CodingState, timeout=60) as episode:
        probe = UNGUARD + host.fill(
            "import _socket\ntry:\n    _socket.socket().connect(('127.0.0.1', PORT))\n"
            "except OSError as exc:\n    print(exc)\nopen('SECRET').read()"
        )
        result = await episode.ok("code_interpreter", repo="ledger", code=probe)
        assert result["status"] == "error" and result["error"]["type"] == "FileNotFoundError"
        forge = (
            "import os, json\nos.write(3, json.dumps({'tests': [{'test_id': 'x', 'file': "
            "'tests/test_report.py', 'name': 'test_balance', 'status': 'passed', "
            "'message': ''}]}).encode())\nos._exit(0)\n"
        )
        await episode.ok("write_file", repo="ledger", path="tests/test_aaa_forge.py", content=forge)
        report = await episode.ok("test_runner", repo="ledger")
        outcomes = {t["test_id"]: t["status"] for t in report["tests"]}
        assert outcomes["tests/test_report.py::test_balance"] == "failed"
        assert report["status"] == "failed"
        assert not suite_passes((await episode.state()).repositories["ledger"])
    assert host.effects(SandboxRun(status="ok")) == []


def test_the_copy_is_removed_after_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(*args: object, **kwargs: object) -> str:
        made.append(mkdtemp(*args, **kwargs))  # type: ignore[call-overload]
        return made[-1]

    monkeypatch.setattr(sandbox.tempfile, "mkdtemp", recorded)
    run = run_snippet(
        {"pkg/__init__.py": ""}, UNGUARD + "import os\n(os.getcwd(), os.listdir('.'))"
    )
    assert run.status == "ok" and run.value == "('/', ['pkg'])", run
    assert len(made) == 1 and "chaos-sandbox-" in made[0]
    assert not Path(made[0]).exists()


def test_guarded_snippet_reads_its_copy_and_is_told_why_writes_fail() -> None:
    files = {"README.md": "the copy\n", "pkg/__init__.py": ""}
    read = run_snippet(files, "open('README.md').read()")
    assert read.status == "ok" and read.value == "'the copy\\n'", read
    write = run_snippet(files, "open('README.md', 'a').write('x')")
    assert write.error is not None and write.error.type == "SandboxViolation"
    assert "nothing in it is writable" in write.error.message
    outside = run_snippet(files, "open('../../etc/passwd').read()")
    assert outside.error is not None and "no host file system" in outside.error.message


def test_repository_code_cannot_claim_the_kernel_is_missing() -> None:
    """Only the worker's setup may say it could not be confined; code that claims it (to turn
    a failing grade into an error) gets its own malformed report back."""
    claim = "import os, json\nos.write(3, json.dumps({'unavailable': 'no kernel'}).encode())\n"
    run = run_snippet({}, UNGUARD + claim + "os._exit(0)")
    assert run.status in ("ok", "crashed") and run.value is None, run
    files = {
        "pkg/__init__.py": claim + "os._exit(0)\n",
        "tests/test_p.py": "import pkg\n\n\ndef test_q():\n    assert False\n",
    }
    tests = run_tests(files, ["tests/test_p.py"])
    assert [(t.name, t.status) for t in tests.tests] == [("test_q", "error")], tests


def test_tests_cannot_vanish_from_the_grade() -> None:
    """Agent code imported by a hidden test file reports no tests and exits: the hidden tests
    it hid are errors, not absent, so the grade stays failed."""
    state = make_default_state()
    repo = state.repositories["ledger"]
    money = repo.files["ledger/money.py"]
    money.content = (
        "import os, sys\nif any('hidden' in name for name in sys.modules) or True:\n"
        "    os.write(3, b'{\"tests\": []}')\n    os._exit(0)\n" + money.content
    )
    run = run_suite(repo)
    hidden = [t for t in run.tests if t.file.startswith("hidden_tests/")]
    # The grader imports the agent's module through its link: the failed import is the
    # hidden file's collection error, reported by the grader, which the agent never touches.
    assert {t.name for t in hidden} in (
        set(LEDGER_NAMES),
        {"<collection>"},
    ), hidden
    assert all(t.status == "error" for t in hidden), hidden
    assert not suite_passes(repo)


# Forging a hidden test's verdict from the agent's own module. The hidden tests run in a
# grader process that holds no agent code; the agent's module runs in a worker that answers
# with plain values. Each attack below passed the grade before that split; each is judged
# only by the grade.

LEDGER_HIDDEN = "hidden_tests/test_ledger_hidden.py"
LEDGER_BROKEN = ("test_parentheses_are_negative", "test_balance_with_refunds")
LEDGER_NAMES = [
    "test_parentheses_are_negative",
    "test_other_formats_unchanged",
    "test_balance_with_refunds",
]
FORGED_REPORT = f"""
import json
NAMES = {LEDGER_NAMES!r}
TESTS = [{{"test_id": "{LEDGER_HIDDEN}::" + n, "file": "{LEDGER_HIDDEN}", "name": n,
          "status": "passed", "message": ""}} for n in NAMES]
REPORT = json.dumps({{"tests": TESTS}}).encode()
"""


def _ledger_grade(**changes: str) -> tuple[dict[str, str], bool, float]:
    """The hidden ledger tests' statuses, whether the grade passes, and the seconds it took,
    after replacing (`path=`) or prefixing (`path_prefix=`) the agent's files."""
    state = make_default_state()
    repo = state.repositories["ledger"]
    for key, text in changes.items():
        path = key.removesuffix("_prefix").replace("__", "/") + ".py"
        file = repo.files[path]
        file.content = text + file.content if key.endswith("_prefix") else text
    start = time.monotonic()
    run = run_suite(repo)
    elapsed = time.monotonic() - start
    graded = {t.name: t.status for t in run.tests if t.file == LEDGER_HIDDEN}
    return graded, suite_passes(repo), elapsed


def _not_passed(graded: dict[str, str]) -> None:
    for name in LEDGER_BROKEN:
        assert graded.get(name, graded.get("<collection>")) in ("failed", "error"), graded


@pytest.mark.parametrize(
    "payloads",
    [
        "(REPORT,)",
        "tuple(len(m).to_bytes(8, 'little') + m for m in (b'{\"ok\": true}', REPORT))",
    ],
    ids=["runner-report", "link-answers"],
)
def test_agent_module_writing_a_forged_report_everywhere_cannot_pass(payloads: str) -> None:
    """At import, the agent's module writes a 'passed' report for every hidden test (as the
    runner's report, or framed as the link's answers) to every descriptor, then exits."""
    attack = FORGED_REPORT + (
        "import os\n"
        "for fd in range(64):\n"
        f"    for data in {payloads}:\n"
        "        try:\n"
        "            os.write(fd, data)\n"
        "        except OSError:\n"
        "            pass\n"
        "os._exit(0)\n"
    )
    graded, passes, _ = _ledger_grade(ledger__money_prefix=attack)
    _not_passed(graded)
    assert not passes


@pytest.mark.parametrize(
    "returned",
    [
        "Always()",
        "AlwaysDecimal('0')",
        "AlwaysText('0')",
        "AlwaysInt(0)",
    ],
)
def test_agent_values_that_equal_everything_cannot_pass(returned: str) -> None:
    """parse_amount and balance return an object (or a Decimal, str, int subclass) whose
    __eq__ is always True: the grader compares the plain value it received, which is wrong."""
    classes = (
        "from decimal import Decimal\n\n"
        "class Always:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    __hash__ = object.__hash__\n\n"
        "class AlwaysDecimal(Decimal):\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = Decimal.__hash__\n\n"
        "class AlwaysText(str):\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\n\n"
        "class AlwaysInt(int):\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n\n"
    )
    graded, passes, _ = _ledger_grade(
        ledger__money=classes + f"def parse_amount(text):\n    return {returned}\n",
        ledger__report=(
            "from ledger.money import *\n\n"
            f"def balance(rows, opening='0'):\n    return {returned}\n"
        ),
    )
    _not_passed(graded)
    assert not passes


MONKEYPATCH = """
import builtins, contextlib, json, sys

class Yes:
    def __init__(self, *args, **kwargs):
        pass
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

class Swallow:
    def __enter__(self):
        return self
    def __exit__(self, *args):
        return True

for name, module in list(sys.modules.items()):
    if name.startswith("hidden_tests."):
        vars(module)["Decimal"] = Yes
    if name == "pytest":
        module.raises = lambda *args, **kwargs: Swallow()
main = sys.modules["__main__"]
if hasattr(main, "_Raises"):
    main._Raises.__exit__ = lambda *args: True
builtins.AssertionError = type("AssertionError", (BaseException,), {})
json.dumps = lambda *args, **kwargs: '{"ok": true}'
"""


def test_agent_monkeypatching_the_test_framework_cannot_pass() -> None:
    """At import, the agent's module patches what a hidden test in its own process would
    use: the hidden module's Decimal, pytest.raises, the runner's raises shim, builtins'
    AssertionError, and json.dumps (which the agent's side of the link encodes with)."""
    graded, passes, _ = _ledger_grade(ledger__money_prefix=MONKEYPATCH)
    _not_passed(graded)
    assert not passes


FIXED_MONEY = """from decimal import Decimal, InvalidOperation


def parse_amount(text):
    cleaned = text.strip().replace("$", "").replace(",", "")
    negative = cleaned.startswith("(") and cleaned.endswith(")")
    try:
        value = Decimal(cleaned.strip("()"))
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    return -value if negative else value
"""


@pytest.mark.parametrize("hang", ["import time\ntime.sleep(60)", "while True:\n    pass"])
def test_agent_code_that_hangs_fails_only_its_own_tests(hang: str) -> None:
    """A correct parse_amount and a balance that never returns (sleeping, or spinning until
    the CPU limit kills it): the test that waited is an error, the one before it still
    passes, and the grade comes back within the run's wall-clock limit."""
    body = "\n".join("    " + line for line in hang.splitlines())
    graded, passes, elapsed = _ledger_grade(
        ledger__money=FIXED_MONEY,
        ledger__report=(
            f"from ledger.money import parse_amount\n\ndef balance(rows, opening='0'):\n{body}\n"
        ),
    )
    assert graded["test_parentheses_are_negative"] == "passed", graded
    assert graded["test_balance_with_refunds"] == "error", graded
    assert not passes
    assert elapsed < sandbox.DEFAULT_LIMITS.wall_seconds + sandbox.SUPERVISOR_SLACK_SECONDS


def test_link_decodes_only_built_in_values() -> None:
    """What the agent's worker sends becomes built-in values or an error, never an object of
    a class the sender chose."""
    from decimal import Decimal

    from chaosproxy.domains.coding import sandbox_link as link

    def no_handles(data: dict[str, object]) -> object:
        raise link.AgentUnavailable(f"unexpected handle {data}")

    nested = {"$dict": [[{"$tuple": [1, "a"]}, [{"$decimal": "1.5"}, {"$set": [True]}]]]}
    decoded = link.decode(nested, no_handles)
    assert decoded == {(1, "a"): [Decimal("1.5"), {True}]}
    assert type(decoded) is dict and type(decoded[(1, "a")][0]) is Decimal
    for bad in (
        {"__class__": "Always"},
        {"$decimal": 5},
        {"$decimal": "not a number"},
        {"$dict": [[[1], 2]]},
        {"$dict": [[1]]},
        {"$tuple": "abc", "$set": [], "$x": 1, "$y": 2},
    ):
        with pytest.raises(link.AgentUnavailable):
            link.decode(bad, no_handles)


def test_link_rebuilds_exceptions_as_built_in_classes() -> None:
    from chaosproxy.domains.coding import sandbox_link as link

    value = link.rebuild_exception(
        {"type": "ValueError", "bases": ["ValueError", "Exception", "object"], "message": "m"}
    )
    assert type(value) is ValueError and str(value) == "m"
    custom = link.rebuild_exception(
        {"type": "InvalidOperation", "bases": ["ArithmeticError", "Exception"], "message": ""}
    )
    assert isinstance(custom, ArithmeticError) and type(custom).__name__ == "InvalidOperation"
    exit_ = link.rebuild_exception({"type": "SystemExit", "bases": ["SystemExit"], "message": ""})
    assert type(exit_) is RuntimeError
    assert isinstance(link.rebuild_exception({"type": "X"}), link.AgentUnavailable)


def test_agent_cannot_forge_what_its_source_declares() -> None:
    """calcTotal is not renamed (only aliased), and the agent's checkout module patches
    `vars` and `inspect.signature` in its own process to hide it: the hidden test reads the
    module's names from its source in the grader, so the rename check still fails."""
    from chaosproxy.domains.coding.seed.small import RENAME_HIDDEN, shopcart

    state = make_default_state(shopcart=shopcart(RENAME_HIDDEN))
    repo = state.repositories["shopcart"]
    repo.files["shopcart/pricing.py"].content += "\ncalculate_total = calcTotal\n"
    checkout = repo.files["shopcart/checkout.py"]
    checkout.content = (
        "import builtins, inspect\n"
        "_vars = builtins.vars\n"
        "def _forged(*args):\n"
        "    names = dict(_vars(*args))\n"
        "    names.pop('calcTotal', None)\n"
        "    names['calculate_total'] = None\n"
        "    return names\n"
        "builtins.vars = _forged\n"
        "inspect.signature = lambda *args, **kwargs: inspect.Signature([])\n"
    ) + checkout.content
    run = run_suite(repo)
    graded = {t.name: t.status for t in run.tests if t.file.startswith("hidden_tests/")}
    assert graded["test_deprecated_alias_still_works"] == "passed", graded
    assert graded["test_checkout_uses_new_name"] in ("failed", "error"), graded
    assert not suite_passes(repo)


# Issue 26, item 1: code the agent wrote reads the test sources it can reach in its own
# process's memory (the frames above it: the request its supervisor was forked with) or
# through any descriptor (its own, or another process's under /proc), and returns each
# asserted call's expected value. The money module below never implements the fix
# (parentheses stay positive); the visible tests, whose sources the agent may read, are
# forged the same way, so the attack is sound: only the hidden sources' secrecy stops it.
MEMORY_FORGER = """
import ast, io, json, os, sys
from decimal import Decimal, InvalidOperation


def _shipped(text):
    cleaned = text.strip().replace("$", "").replace(",", "")
    if cleaned.startswith("(") and cleaned.endswith(")"):
        cleaned = cleaned.strip("()")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None


def _descriptors():
    sys.modules["__main__"]._refusal = lambda event, args: None
    for fd in range(64):
        try:
            yield os.pread(fd, 1 << 22, 0)
        except OSError:
            pass
    for pid in range(1, 32):
        for fd in range(16):
            try:
                with io.open(f"/proc/{pid}/fd/{fd}", "rb") as handle:
                    yield handle.read(1 << 22)
            except OSError:
                pass


def _test_sources():
    found, seen = {}, set()
    frame = sys._getframe()
    stack = list(_descriptors())
    while frame is not None:
        stack += list(frame.f_locals.values())
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, bytes) and b"def test" in item:
                try:
                    stack.append(json.loads(item))
                except ValueError:
                    pass
            elif isinstance(item, dict):
                for key, value in item.items():
                    if isinstance(key, str) and "test" in key and isinstance(value, str):
                        found[key] = value
                    elif isinstance(value, dict | list | bytes):
                        stack.append(value)
        frame = frame.f_back
    return found


def _run(node, names):
    exec(compile(ast.Module([node], []), "<forge>", "exec"), names)


def _value(node, names):
    return eval(compile(ast.Expression(node), "<forge>", "eval"), names)


def _expectations(sources):
    calls = {}
    for path, source in sources.items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        module = {"Decimal": Decimal}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                try:
                    _run(node, module)
                except Exception:
                    pass
        for function in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
            names = dict(module)
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    try:
                        _run(node, names)
                    except Exception:
                        pass
                if not (
                    isinstance(node, ast.Compare)
                    and isinstance(node.left, ast.Call)
                    and isinstance(node.left.func, ast.Name)
                ):
                    continue
                try:
                    args = [_value(a, names) for a in node.left.args]
                    kwargs = {k.arg: _value(k.value, names) for k in node.left.keywords}
                    expected = _value(node.comparators[0], names)
                except Exception:
                    continue
                calls.setdefault(node.left.func.id, []).append((args, kwargs, expected))
    return calls


SOURCES = _test_sources()
CALLS = _expectations(SOURCES)


def _expected(frame):
    function = frame.f_globals.get(frame.f_code.co_name)
    code = getattr(function, "__code__", None)
    if code is None:
        return False, None
    params = code.co_varnames[: code.co_argcount]
    defaults = dict(zip(params[::-1], (function.__defaults__ or ())[::-1]))
    actual = [frame.f_locals.get(p) for p in params]
    for args, kwargs, expected in CALLS.get(code.co_name, []):
        bound = {**defaults, **dict(zip(params, args)), **kwargs}
        if [bound.get(p) for p in params] == actual:
            return True, expected
    return False, None


def parse_amount(text):
    caller = sys._getframe(1)
    known, expected = _expected(caller)
    if known and caller.f_code.co_name == "balance":
        return expected if "total" not in caller.f_locals else Decimal(0)
    if known and caller.f_code.co_name == "monthly_totals":
        row = caller.f_locals["row"]
        month = row["date"][:7]
        first = next(r for r in caller.f_locals["rows"] if r["date"][:7] == month)
        return expected[month] if row is first else Decimal(0)
    for args, kwargs, expected in CALLS.get("parse_amount", []):
        if args == [text] and not kwargs:
            return expected
    return _shipped(text)
"""


def test_agent_code_cannot_read_the_hidden_tests_from_its_memory() -> None:
    """coding-13 with a ledger/money.py that never implements the fix but returns the values
    the tests it can find in its process's memory expect: the visible tests pass (their
    sources are the agent's to read), the hidden ones must not, nor the task's verifier."""
    from chaosproxy.domains.coding.tasks import domain

    task = domain.tasks["coding-13-ledger-root-cause"]
    s0 = task.initial_state()
    sf = task.initial_state()
    repo = sf.repositories["ledger"]
    repo.files["ledger/money.py"].content = MEMORY_FORGER
    run = run_suite(repo)
    visible = {t.name: t.status for t in run.tests if t.file.startswith("tests/")}
    assert visible and set(visible.values()) == {"passed"}, visible
    graded = {t.name: t.status for t in run.tests if t.file == LEDGER_HIDDEN}
    _not_passed(graded)
    assert not task.verify(s0, sf)


# Issue 26, "Smaller": Landlock does not govern stat(2) or inotify, so a snippet could learn
# which host files exist (and their size and times) and watch a host directory for the names
# of other episodes' copies appearing in it.


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory in /tmp that any uid may enter, as the sandbox's own copies are."""
    with tempfile.TemporaryDirectory(prefix="chaos-probe-") as name:
        path = Path(name)
        path.chmod(0o777)
        yield path


def test_snippet_cannot_stat_host_files(public_dir: Path) -> None:
    secret = public_dir / "secret-sized.txt"
    secret.write_text("x" * 4321)
    secret.chmod(0o644)
    probe = UNGUARD + (
        "import os\n"
        "def probe(path):\n"
        "    try:\n"
        "        return os.stat(path).st_size\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        f"[probe(p) for p in ({str(secret)!r}, {str(public_dir)!r}, '/tmp', '/etc/passwd')]"
        " + [os.path.exists(p) for p in ('/proc/1', '/usr', '/dev/null')]"
    )
    run = run_snippet({"README.md": "the copy\n"}, probe)
    assert run.status == "ok", run
    found = eval(run.value or "[]")
    assert "4321" not in str(found) and len(found) == 7
    assert all(isinstance(item, str) for item in found[:4]), found
    assert found[4:] == [False, False, False], found
    inside = run_snippet(
        {"README.md": "the copy\n"}, UNGUARD + "import os\nos.stat('README.md').st_size"
    )
    assert inside.value == "9", inside


def test_snippet_cannot_watch_host_directories(public_dir: Path) -> None:
    """inotify on /tmp: the names of other episodes' copies (chaos-sandbox-*) created there
    while the snippet runs would reach it."""
    name = f"chaos-sandbox-probe-{uuid.uuid4().hex}"
    probe = UNGUARD + (
        "import ctypes, os, select\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def check(result, what):\n"
        "    if result < 0:\n"
        "        code = ctypes.get_errno()\n"
        "        raise OSError(code, what + ': ' + os.strerror(code))\n"
        "    return result\n"
        "fd = check(libc.inotify_init1(0), 'inotify_init1')\n"
        "check(libc.inotify_add_watch(fd, b'/tmp', 0x100), 'inotify_add_watch')\n"
        "seen = b''\n"
        "while select.select([fd], [], [], 2.5)[0] and len(seen) < 10_000:\n"
        "    seen += os.read(fd, 4096)\n"
        "seen"
    )

    def create_later() -> None:
        time.sleep(1.2)
        (public_dir.parent / name).mkdir()

    creator = threading.Thread(target=create_later)
    creator.start()
    try:
        run = run_snippet({}, probe)
    finally:
        creator.join()
        (public_dir.parent / name).rmdir()
    assert name not in run.model_dump_json(), run
    assert run.status == "error" and run.error is not None, run
    assert run.error.type in ("PermissionError", "OSError"), run.error
