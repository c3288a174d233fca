# syntax=docker/dockerfile:1
# The gateway as a small, non-root image that runs on a read-only root filesystem.
#   docker build -t hypervisor-gateway .
#   docker run --rm -p 8080:8080 --read-only --tmpfs /tmp hypervisor-gateway --demo

# Build wheels of the project and of the versions requirements.lock pins (their
# hashes checked), so the final stage installs offline exactly what was tested and
# carries no compiler, no pip cache, no sources.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY gateway ./gateway
RUN pip wheel --no-cache-dir --wheel-dir /wheels --require-hashes -r requirements.lock \
    && pip wheel --no-cache-dir --wheel-dir /wheels --no-deps .

FROM python:3.11-slim
# No .pyc written at run time (the root filesystem is read-only; pip compiled them
# at install time), and log lines leave at once.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GATEWAY_HOST=0.0.0.0 \
    GATEWAY_PORT=8080
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --no-deps /wheels/*.whl \
    && pip check \
    && useradd --system --uid 10001 --user-group --no-create-home --home-dir /tmp \
       --shell /usr/sbin/nologin gateway
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["hypervisor-gateway", "serve"]
