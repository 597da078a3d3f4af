# Multi-stage build: compile in the Rust image, run from a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin zwindow

FROM debian:bookworm-slim
# uid/gid 999 as the official redis image's `redis` user, so a /data volume
# it created stays writable. redis-tools provides redis-cli, as there.
RUN groupadd --system --gid 999 redis \
 && useradd --system --uid 999 --gid redis --home-dir /data --no-create-home redis \
 && apt-get update && apt-get install -y --no-install-recommends redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /data && chown redis:redis /data
COPY --from=build /src/target/release/zwindow /usr/local/bin/zwindow
# `redis-server` is zwindow (/usr/local/bin is ahead of redis-tools' /usr/bin).
RUN ln -s zwindow /usr/local/bin/redis-server
COPY docker/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
COPY docker/defaults.conf /etc/zwindow/defaults.conf
ENV ZWINDOW_DEFAULTS=/etc/zwindow/defaults.conf
VOLUME /data
WORKDIR /data
USER redis
EXPOSE 6379
# Finds the server's port and bind address from its own command line and
# config file, and counts -NOAUTH as alive: right on any port, with
# requirepass, without a password stored anywhere.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 CMD ["zwindow", "--healthcheck"]
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
