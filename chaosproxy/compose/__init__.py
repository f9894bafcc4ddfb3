"""The environment as containers: domain services already running elsewhere (docker compose).

`up --services NAME=URL,...` puts the proxy in front of them instead of starting its own;
`run --services ...` drives a grid against an environment that is already up.
"""
