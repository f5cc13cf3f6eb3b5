#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests, from Debian's postgresql
# package: no TCP port, its socket and data in DIR, local connections
# trusted. initdb refuses root, so as root the cluster belongs to the
# postgres user the package creates.
#   .ci/postgres.sh start DIR   initdb + start; prints the connection string
#   .ci/postgres.sh stop DIR    stop it and remove DIR
# .ci/run exports the printed string as FAULTLINE_TEST_POSTGRES; without
# it the tests start their own cluster (internal/testtool/pgtest).
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [[ -z "$bin" ]]; then
	echo "postgres.sh: Debian's postgresql is not installed (.ci/install-deps.sh --toolchain)" >&2
	exit 1
fi
as=()
if [[ $(id -u) -eq 0 ]]; then
	as=(runuser -u postgres --)
fi
case "$cmd" in
start)
	mkdir -p "$dir"
	if [[ ${#as[@]} -gt 0 ]]; then chown postgres: "$dir"; fi
	"${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-k $dir -p 5432 -c listen_addresses= -c max_connections=200" start >&2 ||
		{ cat "$dir/server.log" >&2; exit 1; }
	echo "postgres://postgres@/postgres?host=$dir&port=5432&sslmode=disable"
	;;
stop)
	if [[ -f "$dir/data/postmaster.pid" ]]; then
		"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
	fi
	rm -rf "$dir"
	;;
*)
	echo "postgres.sh: unknown command $cmd" >&2
	exit 2
	;;
esac
