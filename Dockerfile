# One image for every container of docker-compose.yml: each domain service, the proxy and
# the example agent. A slim Python base, the package installed from this repository, and a
# non-root user. Forward mode (mitmproxy) is not in the image: `up --forward-port` would
# create mitmproxy's venv on first use (README, "Forward / HTTPS mode").
# BASE: any image with Python 3.11 and pip (scripts/compose_env.sh builds one from Debian's
# packages where no registry is reachable).
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 chaos \
    && mkdir /runs \
    && chown chaos /runs

COPY --chown=chaos pyproject.toml setup.py README.md /src/
COPY --chown=chaos chaosproxy /src/chaosproxy
COPY --chown=chaos domains /src/domains
COPY --chown=chaos agents /src/agents
COPY --chown=chaos profiles /src/profiles
RUN pip install /src && rm -rf /src

USER chaos
WORKDIR /home/chaos
VOLUME ["/runs"]
EXPOSE 8700 8701 8801 8802 8803 8804 8805 8806 8807 8808 8809
CMD ["chaosproxy", "--help"]
