# Sourced by the tests of images on NBD servers, after ../lib.sh: nbdkit
# on a Unix socket in $T_DIR, started and killed.
command -v nbdkit >/dev/null || skip "nbdkit is not installed"

nbdkit_pid=
# serve NAME PLUGIN ARGS...: nbdkit on $T_DIR/NAME.sock; $uri names it.
# Without -f nbdkit returns once it listens (its socket file alone may
# not be listening yet); its daemon writes its pid.
serve() {
	local sock=$T_DIR/$1.sock
	shift
	rm -f "$sock" "$T_DIR/nbdkit.pid"
	nbdkit -U "$sock" -P "$T_DIR/nbdkit.pid" "$@" 2>>"$T_DIR/nbdkit.err" ||
		{ cat "$T_DIR/nbdkit.err" >&2; fail "nbdkit $*"; }
	# The daemon writes it, maybe after its parent has returned.
	for _ in $(seq 500); do
		nbdkit_pid=$(cat "$T_DIR/nbdkit.pid" 2>/dev/null) && [ -n "$nbdkit_pid" ] && break
		sleep 0.01
	done
	[ -n "$nbdkit_pid" ] || fail "nbdkit wrote no pid"
	uri="nbd+unix:///?socket=$sock"
}
unserve() {
	[ -n "$nbdkit_pid" ] || return 0
	kill -9 "$nbdkit_pid" 2>/dev/null
	for _ in $(seq 500); do
		kill -0 "$nbdkit_pid" 2>/dev/null || break
		sleep 0.01
	done
	nbdkit_pid=
}
