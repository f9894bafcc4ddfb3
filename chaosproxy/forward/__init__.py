"""Forward/HTTPS mode: agents with fixed URLs reach allowed hosts through HTTPS_PROXY.

mitmproxy (in its own venv) terminates TLS with a per-run CA and hands each allowed request
to the reverse proxy as `/{host}/...`; see docs/forward.md.
"""
