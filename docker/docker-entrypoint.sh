#!/bin/sh
# The official redis image's entrypoint, for zwindow: compose files written
# for `redis:7` work unchanged.
#   command: redis-server /usr/local/etc/redis/redis.conf
#   command: ["redis-server", "--appendonly", "yes"]
#   command: ["--appendonly", "yes"]            (options only)
#   command: /usr/local/etc/redis/redis.conf    (a config file only)
# `redis-server` is zwindow (a link on PATH); anything else runs as given
# (`redis-cli`, `sh`, …).
set -e

# First argument an option (`-x`, `--x`) or a config file (`*.conf`):
# it is for the server.
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi

# As the official image: a private umask unless one was chosen.
if [ "$(umask)" = '0022' ]; then
	umask 0077
fi

exec "$@"
