# Multi-stage build: compile in the Rust image, run from a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin zwindow

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home zwindow \
 && apt-get update && apt-get install -y --no-install-recommends redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /data && chown zwindow /data
# dump.rdb lives in the working directory, as in the official redis image:
# without a writable one, save points would fail and turn on MISCONF.
WORKDIR /data
VOLUME /data
COPY --from=build /src/target/release/zwindow /usr/local/bin/zwindow
USER zwindow
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD redis-cli -p 6379 ping | grep -q PONG
# Like the official redis image, protected mode is off: a container is
# reachable only through the ports it publishes.
ENTRYPOINT ["zwindow", "--bind", "0.0.0.0", "--protected-mode", "no"]
