"""authsvc: a login service over sqlite3 whose queries are built by string formatting (CODE-089)."""

from chaosproxy.domains.coding.seed import repository
from chaosproxy.domains.coding.state import Repository

USERS = '''
"""Look up and authenticate users stored in the `users` table."""

from authsvc.db import hash_password


def find_user(conn, username):
    """The user's public record as a dict, or None."""
    row = conn.execute(
        f"SELECT id, username, role FROM users WHERE username = '{username}'"
    ).fetchone()
    if row is None:
        return None
    return {"id": row[0], "username": row[1], "role": row[2]}


def authenticate(conn, username, password):
    """The user's record if the password matches, else None."""
    salt_row = conn.execute(
        "SELECT salt FROM users WHERE username = '" + username + "'"
    ).fetchone()
    if salt_row is None:
        return None
    digest = hash_password(password, salt_row[0])
    row = conn.execute(
        "SELECT id, username, role FROM users WHERE username = '%s' AND password_hash = '%s'"
        % (username, digest)
    ).fetchone()
    if row is None:
        return None
    return {"id": row[0], "username": row[1], "role": row[2]}
'''

DB = '''
"""An in-memory user database with a few seeded accounts."""

import hashlib
import sqlite3

SEED_USERS = [
    ("alice", "wonderland-42", "s1", "admin"),
    ("bob", "builder-7", "s2", "member"),
    ("carol.ng", "c4rol-pass", "s3", "member"),
]


def hash_password(password, salt):
    return hashlib.sha256((salt + password).encode()).hexdigest()


def connect():
    """A fresh in-memory database holding the seed users."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE, "
        "password_hash TEXT, salt TEXT, role TEXT)"
    )
    for username, password, salt, role in SEED_USERS:
        conn.execute(
            "INSERT INTO users (username, password_hash, salt, role) VALUES (?, ?, ?, ?)",
            (username, hash_password(password, salt), salt, role),
        )
    return conn
'''

TESTS = """
from authsvc.db import connect
from authsvc.users import authenticate, find_user


def test_login_with_right_password():
    user = authenticate(connect(), "alice", "wonderland-42")
    assert user == {"id": 1, "username": "alice", "role": "admin"}


def test_login_with_wrong_password():
    assert authenticate(connect(), "bob", "not-bobs-password") is None


def test_find_user_returns_role():
    assert find_user(connect(), "carol.ng")["role"] == "member"


def test_find_unknown_user():
    assert find_user(connect(), "mallory") is None
"""

HIDDEN = """
import pytest

from authsvc.db import connect
from authsvc.users import authenticate, find_user

INJECTIONS = ["alice' --", "x' OR '1'='1", "' OR 1=1 --", "alice'/*", "bob' OR username LIKE '%"]


def _rejected(call):
    try:
        return call() is None
    except ValueError:
        return True


def test_valid_logins_still_work():
    conn = connect()
    assert authenticate(conn, "alice", "wonderland-42")["role"] == "admin"
    assert authenticate(conn, "carol.ng", "c4rol-pass")["username"] == "carol.ng"
    assert authenticate(conn, "bob", "wrong") is None


def test_injection_cannot_log_in():
    conn = connect()
    for attack in INJECTIONS:
        assert _rejected(lambda: authenticate(conn, attack, "anything")), attack


def test_injection_cannot_find_users():
    conn = connect()
    for attack in INJECTIONS:
        assert _rejected(lambda: find_user(conn, attack)), attack


def test_validation_rejects_bad_usernames():
    conn = connect()
    for bad in ["", "ab", "x" * 33, "alice'", "bob smith", "eve;drop"]:
        with pytest.raises(ValueError):
            authenticate(conn, bad, "pw")
        with pytest.raises(ValueError):
            find_user(conn, bad)


def test_validation_accepts_good_usernames():
    conn = connect()
    assert find_user(conn, "bob")["id"] == 2
    assert find_user(conn, "no-such_user.1") is None
    assert find_user(conn, "x" * 32) is None


def test_non_string_username_rejected():
    with pytest.raises(ValueError):
        find_user(connect(), 42)
"""


def authsvc() -> Repository:
    return repository(
        "authsvc",
        "Authentication service: user lookup and password login over SQLite.",
        "identity-team",
        {
            "README.md": """
                # authsvc

                Login for the internal tools. `authsvc.users.authenticate(conn, username, password)`
                returns the user's record or None; `find_user(conn, username)` looks a user up.
                Usernames are 3-32 characters: letters, digits, '_', '.' or '-'.
                Run the tests with the test runner (tests/).
            """,
            "authsvc/__init__.py": '"""Authentication service."""\n',
            "authsvc/db.py": DB,
            "authsvc/users.py": USERS,
            "tests/test_users.py": TESTS,
        },
        {"hidden_tests/test_authsvc_hidden.py": HIDDEN},
    )
