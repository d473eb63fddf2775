#!/usr/bin/env bash
# install.sh — install hookbox as a hardened systemd service on Debian/Ubuntu.
#
#   sudo ./install.sh                 install or upgrade (idempotent), then start or restart
#   sudo ./install.sh --upgrade FILE  upgrade to the binary FILE, back to the old one if it fails
#   sudo ./install.sh --uninstall     remove the service and the binary; keep config and data
#   sudo ./install.sh --purge [--yes] also remove /etc/hookbox, /var/lib/hookbox and the user
#   ./install.sh --root DIR [...]     install into DIR as a prefix, without systemctl/useradd/chown
#
# Run ./install.sh --help for details. Every message starts with "install.sh:".
set -eu

PROG=install.sh
SERVICE=hookbox
SVC_USER=hookbox

usage() {
	cat <<'EOF'
Usage: sudo ./install.sh [--upgrade FILE | --uninstall | --purge [--yes]] [--root DIR]

Installs hookbox as a systemd service (Debian/Ubuntu, run as root). Running it again upgrades:
the binary and the units are replaced, the config and the data are kept, and the service is
restarted, but only after `hookbox check` accepts the config with the new binary. Before the
restart it takes a backup of the data file; if the new hookbox is not ready (/healthz) within
30 s, the old binary and that backup are put back and the old hookbox started again.
hookbox.socket holds the ports: while hookbox restarts, new connections wait in its queue, so
no sender is refused. To stop hookbox: systemctl stop hookbox.socket hookbox (stopping only
hookbox leaves the ports listening, and the next webhook starts it again).

  (no option)    install or upgrade: /usr/local/bin/hookbox, the hookbox system user,
                 /etc/hookbox/config.toml (only if absent), /etc/hookbox/hookbox.env (0600:
                 every variable the config names, empty until you fill it in; values already
                 there are kept), /var/lib/hookbox (the data, 0700),
                 /etc/systemd/system/hookbox.socket (the ports of listen, and with domain
                 :443 and :80) and hookbox.service; then enable and (re)start them.
                 When the only thing the check misses is a variable still empty in hookbox.env,
                 a first install is made and enabled but not started: the summary says what to
                 fill in, then systemctl restart hookbox. With the service running, only the
                 new (empty) lines are added to hookbox.env: fill them in and run it again.
                 Uses the hookbox binary next to this script, else builds it with `go build`.
  --upgrade FILE use the hookbox binary FILE (a release downloaded elsewhere), as above.
  --uninstall    stop and disable the service, remove the unit and the binary;
                 keep /etc/hookbox (config, secrets) and /var/lib/hookbox (data).
  --purge        like --uninstall, and also remove /etc/hookbox, /var/lib/hookbox (every stored
                 event) and the hookbox user. Asks for confirmation on the terminal.
  --yes, -y      with --purge: do not ask.
  --root DIR     stage into DIR as a prefix (DIR/usr/local/bin, DIR/etc/hookbox,
                 DIR/etc/systemd/system, DIR/var/lib/hookbox) for tests and packaging:
                 no systemctl, no useradd, no ownership changes, nothing started; the config's
                 data_dir points to DIR/var/lib/hookbox so the staged binary can run against it;
                 the unit is written exactly as for a real install and names the real paths.
                 The summary says what to copy where. Does not need root.
  --help, -h     show this help.
EOF
}

info() { printf '%s: %s\n' "$PROG" "$*"; }
warn() { printf '%s: warning: %s\n' "$PROG" "$*" >&2; }
die() {
	printf '%s: %s\n' "$PROG" "$*" >&2
	exit 1
}

# ---- arguments ----
ACTION=install
YES=false
ROOT_ARG=
ROOT_SET=false
UPGRADE_BIN=
while [ $# -gt 0 ]; do
	case $1 in
	--uninstall) ACTION=uninstall ;;
	--purge) ACTION=purge ;;
	--yes | -y) YES=true ;;
	--upgrade)
		[ $# -ge 2 ] || die "--upgrade needs the new hookbox binary (try --help)"
		UPGRADE_BIN=$2
		shift
		;;
	--root)
		[ $# -ge 2 ] || die "--root needs a directory (try --help)"
		ROOT_ARG=$2
		ROOT_SET=true
		shift
		;;
	--root=*)
		ROOT_ARG=${1#--root=}
		ROOT_SET=true
		;;
	--help | -h)
		usage
		exit 0
		;;
	*)
		printf '%s: unknown option %s (try --help)\n' "$PROG" "$1" >&2
		exit 2
		;;
	esac
	shift
done

# ---- where things go ----
ROOT=
if $ROOT_SET; then
	[ -n "$ROOT_ARG" ] || die "--root needs a directory"
	mkdir -p -- "$ROOT_ARG" || die "--root $ROOT_ARG: cannot create the directory"
	ROOT=$(cd -- "$ROOT_ARG" && pwd -P)
	[ "$ROOT" != / ] || die "--root /: for a real install run without --root (as root)"
	case $ROOT in
	*[\"\\]* | *$'\n'*) die "--root $ROOT: the path must not contain quotes, backslashes or newlines" ;;
	esac
elif [ "$(id -u)" -ne 0 ]; then
	die "run as root: sudo ./install.sh (or use --root DIR to install into a directory)"
fi
REAL=true
$ROOT_SET && REAL=false
# SERVICES: systemctl is run, as on a real install. The tests of the restart and of the rollback
# stage under --root with HOOKBOX_INSTALL_FAKE_SYSTEMD=1 and a fake systemctl (and curl) first in
# PATH; they may shorten the wait for readiness (HOOKBOX_INSTALL_READY_WITHIN, seconds).
SERVICES=$REAL
READY_WITHIN=30
if $ROOT_SET && [ "${HOOKBOX_INSTALL_FAKE_SYSTEMD:-}" = 1 ]; then
	SERVICES=true
	READY_WITHIN=${HOOKBOX_INSTALL_READY_WITHIN:-30}
fi

BIN_DIR=$ROOT/usr/local/bin
BIN=$BIN_DIR/hookbox
ETC=$ROOT/etc/hookbox
CONFIG=$ETC/config.toml
ENV_FILE=$ETC/hookbox.env
DATA=$ROOT/var/lib/hookbox
UNIT_DIR=$ROOT/etc/systemd/system
UNIT=$UNIT_DIR/$SERVICE.service
SOCKET_UNIT=$UNIT_DIR/$SERVICE.socket
DROPIN_DIR=$UNIT_DIR/$SERVICE.service.d
# The paths the unit names are those of a real install, also under --root.
REAL_BIN=/usr/local/bin/hookbox
REAL_CONFIG=/etc/hookbox/config.toml
REAL_ENV_FILE=/etc/hookbox/hookbox.env
REAL_DATA=/var/lib/hookbox

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)

# Temporary files and directories, removed on exit.
CLEANUP=()
cleanup() {
	local p
	for p in "${CLEANUP[@]+"${CLEANUP[@]}"}"; do
		rm -rf -- "$p"
	done
}
trap cleanup EXIT

if $REAL; then
	command -v systemctl >/dev/null 2>&1 || die "systemctl not found: hookbox's installer needs a systemd-based Debian or Ubuntu"
	[ -d /run/systemd/system ] || die "systemd is not running on this machine (no /run/systemd/system): hookbox's installer needs a systemd-based Debian or Ubuntu"
	if [ -r /etc/os-release ] && ! grep -Eqi '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release; then
		warn "this is not Debian or Ubuntu; continuing, but only those are tested"
	fi
fi

# ---- helpers ----

# toml_key TABLE KEY FILE prints the string value of KEY in [TABLE] of the TOML FILE (nothing
# when absent). Enough for the keys install.sh reads: plain "strings" and bare numbers.
toml_key() {
	awk -v table="[$1]" -v want="$2" '
		/^[[:space:]]*\[/ {
			s = $0; sub(/#.*/, "", s); gsub(/[[:space:]]/, "", s)
			in_table = (s == table); next
		}
		in_table && $0 ~ "^[[:space:]]*" want "[[:space:]]*=" {
			v = $0; sub(/^[^=]*=[[:space:]]*/, "", v)
			if (v ~ /^"/) { sub(/^"/, "", v); sub(/".*$/, "", v) }
			else if (v ~ /^'\''/) { sub(/^'\''/, "", v); sub(/'\''.*$/, "", v) }
			else { sub(/[[:space:]]*(#.*)?$/, "", v) }
			print v; exit
		}' "$3"
}

# server_key KEY FILE prints the string value of KEY in the [server] table of the TOML FILE.
server_key() { toml_key server "$1" "$2"; }

# listen_port ADDR prints the numeric port of host:port (service names are looked up).
listen_port() {
	local port=${1##*:}
	case $port in
	'' | *[!0-9]*)
		port=$(getent services "$port/tcp" 2>/dev/null | awk '{ split($2, a, "/"); print a[1] }') || true
		;;
	esac
	printf '%s\n' "${port:-0}"
}

# env_line LINE splits a line of a systemd EnvironmentFile into ENV_KEY and ENV_VALUE (one pair
# of surrounding quotes removed). Returns 1 for a comment or a blank line, 2 for a line that is
# not NAME=value.
env_line() {
	local line=$1
	line=${line#"${line%%[![:space:]]*}"}
	case $line in '' | '#'* | ';'*) return 1 ;; esac
	ENV_KEY=${line%%=*}
	ENV_KEY=${ENV_KEY%"${ENV_KEY##*[![:space:]]}"}
	if [ "$ENV_KEY" = "$line" ] || ! [[ $ENV_KEY =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
		return 2
	fi
	ENV_VALUE=${line#*=}
	ENV_VALUE=${ENV_VALUE#"${ENV_VALUE%%[![:space:]]*}"}
	ENV_VALUE=${ENV_VALUE%"${ENV_VALUE##*[![:space:]]}"}
	case $ENV_VALUE in
	\"*\" | \'*\') ENV_VALUE=${ENV_VALUE:1:${#ENV_VALUE}-2} ;;
	esac
	return 0
}

# load_env_file FILE exports the KEY=VALUE lines of a systemd EnvironmentFile (comments and
# blank lines skipped), without running it as shell.
load_env_file() {
	local line rc
	[ -f "$1" ] || return 0
	while IFS= read -r line || [ -n "$line" ]; do
		rc=0
		env_line "$line" || rc=$?
		case $rc in
		0) export "$ENV_KEY=$ENV_VALUE" ;;
		2) warn "$1: ignoring a line that is not NAME=value" ;;
		esac
	done <"$1"
}

# env_file_state FILE prints NAME<TAB>set or NAME<TAB>empty for each variable FILE assigns (the
# last assignment counts, as for systemd). It never prints a value.
env_file_state() {
	local line
	[ -f "$1" ] || return 0
	while IFS= read -r line || [ -n "$line" ]; do
		env_line "$line" || continue
		if [ -n "$ENV_VALUE" ]; then
			printf '%s\tset\n' "$ENV_KEY"
		else
			printf '%s\tempty\n' "$ENV_KEY"
		fi
	done <"$1"
}

# The variables systemd sets for the service itself: a command destination's env may pass them
# on, but an empty line in hookbox.env would override them.
SYSTEMD_SETS=" PATH HOME USER LOGNAME SHELL LANG TERM INVOCATION_ID JOURNAL_STREAM "

# run_check BINARY runs `BINARY check -config CONFIG` the way the service would run: with only
# the env file's variables (plus PATH), as the hookbox user on a real install. Prints the check's
# output; its exit status is the check's.
run_check() {
	(
		cd /
		while IFS= read -r v; do unset "$v" 2>/dev/null || true; done < <(compgen -e)
		export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		load_env_file "$ENV_FILE"
		# As systemd and the unit set them for User=hookbox (a command's env may pass them on); a
		# missing variable's error says where to set it.
		export HOME=$REAL_DATA USER=$SVC_USER LOGNAME=$SVC_USER SHELL=/usr/sbin/nologin
		export HOOKBOX_ENV_FILE="$ENV_FILE"
		if $REAL && command -v setpriv >/dev/null 2>&1; then
			exec setpriv --reuid="$(id -u "$SVC_USER")" --regid="$(id -g "$SVC_USER")" --init-groups -- \
				"$1" check -config "$CONFIG"
		elif $REAL && command -v runuser >/dev/null 2>&1; then
			exec runuser -u "$SVC_USER" -- "$1" check -config "$CONFIG"
		fi
		exec "$1" check -config "$CONFIG"
	) 2>&1
}

# write_if_changed MODE DEST reads the new content on stdin and replaces DEST atomically when the
# content differs. Returns 0 when DEST changed, 1 when it was already up to date.
write_if_changed() {
	local mode=$1 dest=$2 tmp
	tmp=$(mktemp "$(dirname -- "$dest")/.$(basename -- "$dest").XXXXXX")
	CLEANUP+=("$tmp")
	cat >"$tmp"
	if [ -f "$dest" ] && cmp -s -- "$tmp" "$dest"; then
		rm -f -- "$tmp"
		chmod "$mode" -- "$dest"
		return 1
	fi
	chmod "$mode" -- "$tmp"
	mv -f -- "$tmp" "$dest"
	return 0
}

service_active() { $SERVICES && systemctl is-active --quiet "$SERVICE" 2>/dev/null; }

# healthz_ok BASE: GET BASE/healthz answers 200 (curl, else bash's /dev/tcp for plain HTTP; without
# either, the service being active is taken as ready: Type=notify says READY=1 only once it serves).
healthz_ok() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsSk --max-time 3 -o /dev/null "$1/healthz" 2>/dev/null
		return
	fi
	case $1 in
	http://*) ;;
	*) return 0 ;;
	esac
	local hostport=${1#http://} line
	hostport=${hostport%%/*}
	case $hostport in \[*) return 0 ;; esac # /dev/tcp takes no [IPv6]: active is taken as ready
	exec 9<>"/dev/tcp/${hostport%:*}/${hostport##*:}" 2>/dev/null || return 1
	printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$hostport" >&9
	IFS= read -r -t 3 line <&9 || line=
	exec 9<&- 9>&-
	case $line in HTTP/1.?\ 200*) return 0 ;; esac
	return 1
}

# wait_ready SECONDS: within SECONDS, a hookbox.service process other than $old_pid (the one a
# restart replaces) is active (Type=notify: it said READY=1) and /healthz answers 200.
old_pid=0
wait_ready() {
	local i pid
	for ((i = 0; i < $1; i++)); do
		sleep 1
		pid=$(systemctl show -p MainPID --value "$SERVICE.service" 2>/dev/null || echo 0)
		if [ "${pid:-0}" = 0 ] || [ "$pid" = "$old_pid" ]; then
			continue
		fi
		# A first start with domain has no certificate yet (ACME gets it): active is ready then.
		if systemctl is-active --quiet "$SERVICE.service" 2>/dev/null &&
			{ { [ "$tls_mode" = acme ] && ! $upgrading; } || healthz_ok "$local_base"; }; then
			return 0
		fi
	done
	return 1
}

# rollback puts back the binary that ran before the upgrade and the data file as it was before it
# (a new binary may have converted it), starts hookbox again, and stops install.sh, saying so. The
# socket stops too while the file is replaced (hookbox restore refuses while it listens): senders
# are refused for those seconds.
rollback() {
	warn "the new hookbox (${version:-new}) did not become ready within $READY_WITHIN s: putting back ${old_version:-the old binary}${pre_upgrade:+ and the data file from $pre_upgrade}"
	systemctl stop "$SERVICE.socket" "$SERVICE.service" || true
	mv -f -- "$prev_bin" "$BIN"
	if [ -n "$pre_upgrade" ]; then
		(load_env_file "$ENV_FILE" && "$BIN" restore -config "$CONFIG" "$pre_upgrade") ||
			warn "hookbox restore $pre_upgrade failed (above): the data file is as the new binary left it"
	fi
	systemctl start "$SERVICE.socket" "$SERVICE.service" || true
	old_pid=0
	if wait_ready "$READY_WITHIN"; then
		die "upgrade rolled back: ${old_version:-the old hookbox} runs again with the data as before the upgrade; the new binary's log: journalctl -u $SERVICE"
	fi
	die "upgrade rolled back, but the old hookbox is not ready either: see journalctl -u $SERVICE and systemctl status $SERVICE"
}

# ---- uninstall / purge ----

remove_service() {
	if $REAL; then
		if [ -f "$SOCKET_UNIT" ] || systemctl cat "$SERVICE.socket" >/dev/null 2>&1; then
			info "stopping and disabling $SERVICE.socket"
			systemctl disable --now "$SERVICE.socket" >/dev/null 2>&1 || warn "systemctl disable --now $SERVICE.socket failed; continuing"
		fi
		if [ -f "$UNIT" ] || systemctl cat "$SERVICE.service" >/dev/null 2>&1; then
			info "stopping and disabling $SERVICE.service"
			systemctl disable --now "$SERVICE.service" >/dev/null 2>&1 || warn "systemctl disable --now $SERVICE failed; continuing"
		fi
	fi
	local u
	for u in "$SOCKET_UNIT" "$UNIT"; do
		if [ -e "$u" ]; then
			rm -f -- "$u"
			info "removed $u"
		fi
	done
	if $REAL; then
		systemctl daemon-reload
		systemctl reset-failed "$SERVICE.socket" "$SERVICE.service" >/dev/null 2>&1 || true
	fi
	if [ -e "$BIN" ]; then
		rm -f -- "$BIN"
		info "removed $BIN"
	fi
}

confirm_purge() {
	$YES && return 0
	local what="$ETC (config, secrets), $DATA (every stored event)" answer
	if $REAL; then what="$what and the $SVC_USER user"; fi
	[ -t 0 ] || die "--purge deletes $what; there is no terminal to confirm on: add --yes"
	printf '%s: delete %s? Type yes to confirm: ' "$PROG" "$what"
	IFS= read -r answer || answer=
	[ "$answer" = yes ] || die "not confirmed; nothing was removed"
}

if [ "$ACTION" = uninstall ]; then
	remove_service
	info "hookbox is uninstalled; kept the config and secrets in $ETC and the data in $DATA (remove them with --purge)"
	exit 0
fi
if [ "$ACTION" = purge ]; then
	confirm_purge
	remove_service
	rm -rf -- "$DROPIN_DIR" "$ETC" "$DATA"
	info "removed $ETC and $DATA"
	if $REAL; then
		if id "$SVC_USER" >/dev/null 2>&1; then
			userdel "$SVC_USER" || warn "userdel $SVC_USER failed"
		fi
		if getent group "$SVC_USER" >/dev/null 2>&1; then
			groupdel "$SVC_USER" || warn "groupdel $SVC_USER failed"
		fi
		info "removed the $SVC_USER user and group"
	fi
	info "hookbox is purged"
	exit 0
fi

# ---- install ----

# 1. The binary to install: next to this script, else built from the source next to it.
SRC_BIN=
if [ -n "$UPGRADE_BIN" ]; then
	if [ ! -f "$UPGRADE_BIN" ] || [ ! -x "$UPGRADE_BIN" ]; then
		die "--upgrade $UPGRADE_BIN: not an executable file"
	fi
	SRC_BIN=$UPGRADE_BIN
	info "using $SRC_BIN (--upgrade)"
elif [ -f "$SCRIPT_DIR/hookbox" ] && [ -x "$SCRIPT_DIR/hookbox" ]; then
	SRC_BIN=$SCRIPT_DIR/hookbox
	info "using $SRC_BIN"
elif [ -f "$SCRIPT_DIR/go.mod" ] && [ -f "$SCRIPT_DIR/main.go" ]; then
	GO=$(command -v go 2>/dev/null || true)
	if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi
	[ -n "$GO" ] || die "no hookbox binary next to install.sh and no Go toolchain to build one: install Go (https://go.dev/dl/) or copy a hookbox binary to $SCRIPT_DIR/hookbox"
	build_dir=$(mktemp -d)
	CLEANUP+=("$build_dir")
	version=$(git -C "$SCRIPT_DIR" -c safe.directory="$SCRIPT_DIR" describe --tags --always --dirty 2>/dev/null || true)
	info "building hookbox from $SCRIPT_DIR with $("$GO" version)"
	(cd -- "$SCRIPT_DIR" && "$GO" build -trimpath -buildvcs=false -ldflags "-X main.version=${version:-dev}" -o "$build_dir/hookbox" .) ||
		die "go build failed (see above); fix it or copy a hookbox binary to $SCRIPT_DIR/hookbox"
	SRC_BIN=$build_dir/hookbox
else
	die "no hookbox binary next to install.sh ($SCRIPT_DIR/hookbox) and no source to build it from: put the hookbox binary next to the script"
fi

# 2. The system user and group.
if $REAL; then
	if ! getent group "$SVC_USER" >/dev/null 2>&1; then
		groupadd --system "$SVC_USER"
		info "created the $SVC_USER group"
	fi
	if ! id "$SVC_USER" >/dev/null 2>&1; then
		useradd --system --no-create-home --home-dir "$REAL_DATA" --shell /usr/sbin/nologin \
			--gid "$SVC_USER" --comment "hookbox webhook receiver" "$SVC_USER"
		info "created the $SVC_USER system user"
	fi
	# The service's group opens its local socket (/run/hookbox/hookbox.sock, 0660): its members run
	# hookbox pause, resume, retry, replay and backup on this box with no password, as themselves.
	if [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ] && id "$SUDO_USER" >/dev/null 2>&1; then
		if id -nG "$SUDO_USER" | tr ' ' '\n' | grep -qx -- "$SVC_USER"; then
			info "$SUDO_USER is in the $SVC_USER group: hookbox pause, replay, … on this box need no password"
		elif usermod -a -G "$SVC_USER" -- "$SUDO_USER"; then
			info "added $SUDO_USER to the $SVC_USER group: from your next login, hookbox pause, replay, … on this box need no password (sudo works now)"
		else
			warn "usermod -a -G $SVC_USER $SUDO_USER failed: add yourself to the $SVC_USER group to run hookbox's commands on this box without a password"
		fi
	fi
fi

# 3. Directories. /etc/hookbox is root:hookbox 0750 so the service can read its config but not
# change it; the data directory belongs to hookbox alone.
mkdir -p -- "$BIN_DIR" "$UNIT_DIR" "$(dirname -- "$DATA")"
if $REAL; then
	install -d -m 0750 -o root -g "$SVC_USER" -- "$ETC"
	install -d -m 0700 -o "$SVC_USER" -g "$SVC_USER" -- "$DATA"
else
	install -d -m 0750 -- "$ETC"
	install -d -m 0700 -- "$DATA"
fi

# 4. The config, only if absent: the repository's config.toml with data_dir set to the data
# directory (listen stays as it is: 127.0.0.1:8080 in the shipped file), without the quick start's
# demo: every [[source]], [[destination]] and [[route]] that is not commented out (with the comment
# right above it) is left out, since the demo's secrets are public and `hookbox check` would warn
# about them. The commented examples stay: they show what to add. An existing config is kept.
if [ -e "$CONFIG" ]; then
	info "keeping the existing $CONFIG"
else
	[ -f "$SCRIPT_DIR/config.toml" ] || die "no config.toml next to install.sh ($SCRIPT_DIR) to start $CONFIG from"
	tmp=$(mktemp "$ETC/.config.toml.XXXXXX")
	CLEANUP+=("$tmp")
	{
		printf '# %s: installed by install.sh from the repository'\''s config.toml, without\n' "$REAL_CONFIG"
		printf '# its demo (a source, a destination and a route whose secrets are public). install.sh never\n'
		printf '# overwrites this file. Every key is listed in README.md, "Reference", "Configuration".\n#\n'
		printf '# To receive webhooks, add a [[source]]: uncomment an example below (one per provider), with\n'
		printf '# secret_env = "NAME" and never the secret itself, and set [server] public_url. Events go\n'
		printf '# nowhere until a [[route]] sends them to a [[destination]] (examples further down). Then run\n'
		printf '# install.sh again: it adds NAME= to %s (root-only) for you to fill in,\n' "$REAL_ENV_FILE"
		printf '# checks the config as the service would, then restarts hookbox.\n\n'
		awk -v dd="$DATA" '
			function emit() { print "data_dir = \"" dd "\"          # set by install.sh"; done = 1 }
			function flush() { if (held != "") printf "%s", held; held = "" }
			# The opening comment is about `go run .`: the header above replaces it.
			!started { if ($0 ~ /^[[:space:]]*$/) started = 1; next }
			# Comment lines are held until the next line says whether they describe a left-out table.
			/^[[:space:]]*#/ { if (!skipping) held = held $0 "\n"; next }
			/^[[:space:]]*\[/ {
				s = $0; sub(/#.*/, "", s); gsub(/[[:space:]]/, "", s)
				if (in_server && !done) emit()
				if (s == "[[source]]" || s == "[[destination]]" || s == "[[route]]") {
					held = ""; skipping = 1; in_server = 0; next
				}
				skipping = 0; flush()
				in_server = (s == "[server]"); if (in_server) seen = 1
				print; next
			}
			skipping { if ($0 ~ /^[[:space:]]*$/) skipping = 0; next }
			{ flush() }
			in_server && /^[[:space:]]*data_dir[[:space:]]*=/ { if (!done) emit(); next }
			{ print }
			END {
				flush()
				if (in_server && !done) emit()
				if (!seen) { print ""; print "[server]"; emit() }
			}' "$SCRIPT_DIR/config.toml"
	} >"$tmp"
	chmod 0640 -- "$tmp"
	if $REAL; then chown root:"$SVC_USER" -- "$tmp"; fi
	mv -f -- "$tmp" "$CONFIG"
	info "created $CONFIG (data_dir = $DATA; no source yet: it shows an example per provider)"
fi

# 5. Stage the new binary next to its final name: it lists what the config names (step 6) and
# checks the config (step 7) before anything else changes.
new_bin=$(mktemp "$BIN_DIR/.hookbox.new.XXXXXX")
CLEANUP+=("$new_bin")
cp -- "$SRC_BIN" "$new_bin"
chmod 0755 -- "$new_bin"
if $REAL; then chown root:root -- "$new_bin"; fi
version=$("$new_bin" version 2>/dev/null || true)

# 6. The secrets file: every environment variable the config names (`hookbox check -env` reads
# them from the config without resolving any), each as an empty NAME= line under a comment that
# says which table and key use it. Created if absent; on a re-run the variables not yet in it
# are added at its end, and nothing already there is changed or shown. It is root:root 0600:
# systemd (PID 1, root) reads an EnvironmentFile before it drops to User=hookbox, so the service
# user never needs to read it, and a hookbox process cannot read or change the file.
env_err=$(mktemp "$ETC/.check-env.XXXXXX")
CLEANUP+=("$env_err")
mentions=
if mentions=$("$new_bin" check -env -config "$CONFIG" 2>"$env_err"); then
	sed "s|^|$PROG: warning: |" "$env_err" >&2
else
	mentions= # the TOML does not parse: the check (step 7) says why
fi
env_state=$(env_file_state "$ENV_FILE")
env_new=
env_added=0
unfilled=()
unfilled_where=()
while IFS=$'\t' read -r name where; do
	[ -n "$name" ] || continue
	case $SYSTEMD_SETS in *" $name "*) continue ;; esac
	state=$(printf '%s\n' "$env_state" | awk -F '\t' -v n="$name" '$1 == n { s = $2 } END { print s }')
	case $state in
	set) ;;
	empty)
		unfilled+=("$name")
		unfilled_where+=("$where")
		;;
	*)
		unfilled+=("$name")
		unfilled_where+=("$where")
		env_new+=$'\n'"# $where"$'\n'"$name="$'\n'
		env_added=$((env_added + 1))
		;;
	esac
done <<<"$mentions"
if [ ! -e "$ENV_FILE" ] || [ -n "$env_new" ]; then
	had_env=false
	[ -e "$ENV_FILE" ] && had_env=true
	if write_if_changed 0600 "$ENV_FILE" < <(
		if $had_env; then
			cat -- "$ENV_FILE"
			[ -z "$(tail -c 1 -- "$ENV_FILE")" ] || echo
		else
			cat <<'HEADER'
# Secrets for hookbox.service: one NAME=value per line (no "export", no quotes needed, no shell).
# systemd reads this file (EnvironmentFile=) as root, before it starts hookbox as the hookbox user.
# install.sh lists here every variable config.toml names (secret_env, secrets_env, password_env,
# url_env, smtp_url_env, a command's env), empty, under the table and key that use it; run again
# after the config changed, it adds the new ones and keeps every value already here.
# Fill in each value, then: sudo systemctl restart hookbox   (or run sudo ./install.sh again)
HEADER
		fi
		printf '%s' "$env_new"
	); then
		if $REAL; then chown root:root -- "$ENV_FILE"; fi
	fi
	if $had_env; then
		info "added $env_added variable(s) the config names to $ENV_FILE: ${unfilled[*]}"
	else
		if [ "$env_added" -gt 0 ]; then
			info "created $ENV_FILE (0600) with the $env_added variable(s) the config names: ${unfilled[*]}"
		else
			info "created $ENV_FILE (0600; the config names no variable yet: secret_env = \"NAME\" adds one)"
		fi
	fi
else
	info "keeping the existing $ENV_FILE"
fi

# 7. Check the config with the new binary, as the service would run. A config the new binary
# refuses changes nothing: not the installed binary, not the unit, not a running service. One
# exception, on a first install (no service running): when what the check misses is only
# variables of hookbox.env still empty, the binary and the unit are installed and the service
# enabled but not started; the summary says what to fill in.
# only_unfilled OUTPUT: every error line of the check (file: key: reason) names an unfilled
# variable.
only_unfilled() {
	local line name hit any=false
	while IFS= read -r line; do
		case $line in "$CONFIG:"*) ;; *) continue ;; esac
		any=true
		hit=false
		for name in "${unfilled[@]}"; do
			if [[ $line =~ (^|[^A-Za-z0-9_])$name([^A-Za-z0-9_]|$) ]]; then hit=true; fi
		done
		$hit || return 1
	done <<<"$1"
	$any
}
waiting=false
if ! check_out=$(run_check "$new_bin"); then
	if [ ${#unfilled[@]} -gt 0 ] && only_unfilled "$check_out" && ! service_active; then
		waiting=true # the summary shows the check's output
	else
		printf '%s\n' "$check_out" | sed "s|^|$PROG: hookbox check: |" >&2
		if [ ${#unfilled[@]} -gt 0 ] && only_unfilled "$check_out"; then
			die "fill in ${unfilled[*]} in $ENV_FILE, then run install.sh again; nothing else was changed and the running service was left alone"
		elif service_active; then
			die "the config does not pass hookbox check (above): fix $CONFIG and run install.sh again; nothing was changed and the running service was left alone"
		fi
		die "the config does not pass hookbox check (above): fix $CONFIG and run install.sh again; the binary and the service were not installed"
	fi
fi

# 8. The ports hookbox.socket binds: listen, and with TLS http_listen (the ACME challenge and
# HTTPS redirect listener). With TLS (domain, or cert_file) listen defaults to :443, and with
# domain (ACME) http_listen defaults to :80. systemd binds them as root, so the service needs no
# capability, whatever the port.
domain=$(server_key domain "$CONFIG")
cert_file=$(server_key cert_file "$CONFIG")
tls_mode=none
if [ -n "$domain" ]; then
	tls_mode=acme
elif [ -n "$cert_file" ]; then
	tls_mode=files
fi
listen=$(server_key listen "$CONFIG")
if [ -z "$listen" ]; then
	listen=127.0.0.1:8080
	[ "$tls_mode" = none ] || listen=:443
fi
http_listen=$(server_key http_listen "$CONFIG")
if [ -z "$http_listen" ] && [ "$tls_mode" = acme ]; then
	http_listen=:80
fi
public_url=$(server_key public_url "$CONFIG")
data_dir=$(server_key data_dir "$CONFIG")
backup_dir=$(toml_key backup dir "$CONFIG")
port=$(listen_port "$listen")
[ "$tls_mode" != none ] || http_listen= # plain HTTP serves no http_listen
# Where this machine reaches hookbox: the readiness check after a start.
lhost=${listen%:*}
lhost=${lhost#[}
lhost=${lhost%]}
case $lhost in
'' | 0.0.0.0) lhost=127.0.0.1 ;;
::) lhost='[::1]' ;;
*:*) lhost="[$lhost]" ;;
esac
lscheme=http
[ "$tls_mode" = none ] || lscheme=https
local_base="$lscheme://$lhost:$port"
# listen_stream ADDR prints ADDR as the socket unit's ListenStream= takes it: a bare port for
# every address (IPv6 and IPv4), an IP address as it is (systemd resolves no names).
listen_stream() {
	local host=${1%:*} p
	p=$(listen_port "$1")
	[ "$p" -gt 0 ] || die "listen address $1 in $CONFIG: no port systemd can bind (hookbox.socket needs a fixed port)"
	case $host in
	'' | '[::]') printf '%s\n' "$p" ;;
	localhost) printf '127.0.0.1:%s\n' "$p" ;;
	*) printf '%s:%s\n' "$host" "$p" ;;
	esac
}
streams="ListenStream=$(listen_stream "$listen")"
if [ -n "$http_listen" ]; then
	streams="$streams
ListenStream=$(listen_stream "$http_listen")"
fi
case ${data_dir:-./data} in
"$DATA" | "$DATA"/*) ;;
*) warn "data_dir in $CONFIG is ${data_dir:-./data (relative)}, outside $DATA: the unit's ProtectSystem=strict makes it read-only; use $REAL_DATA, or add ReadWritePaths= in a drop-in (systemctl edit hookbox)" ;;
esac
# A backup dir elsewhere (another disk is best) must be writable for the service.
backup_rw=
case $backup_dir in
'' | "$DATA" | "$DATA"/* | "$REAL_DATA" | "$REAL_DATA"/*) ;;
/*)
	case $backup_dir in
	*[[:space:]\"\\]*) die "backup.dir in $CONFIG ($backup_dir) must not contain spaces, quotes or backslashes" ;;
	esac
	backup_rw="ReadWritePaths=-$backup_dir"
	if $REAL && [ ! -d "$backup_dir" ]; then
		# mkdir (which fails on a name already there, a link included), then chown -h: the parent may
		# be the service user's, and install -d -o would chown whatever a link put there pointed to.
		mkdir -p -- "$(dirname -- "$backup_dir")"
		mkdir -m 0700 -- "$backup_dir" || die "cannot create $backup_dir (backup.dir in $CONFIG)"
		chown -h -- "$SVC_USER:$SVC_USER" "$backup_dir"
		info "created $backup_dir for the backups (backup.dir)"
	fi
	;;
*) warn "backup.dir in $CONFIG is relative ($backup_dir): the service runs in /, where it cannot write; use an absolute path" ;;
esac
if grep -q 'demo-secret-change-me' "$CONFIG"; then
	warn "$CONFIG still has the demo source and its public secret (demo-secret-change-me): change or remove it before hookbox is reachable from outside"
fi

# 9. The units, rewritten on every run: local changes belong in a drop-in. hookbox.socket holds
# the ports and hands them to hookbox.service at each start; while hookbox restarts, the kernel
# queues new connections on them (Backlog=), so a restart refuses no sender.
was_active=false
if service_active; then was_active=true; fi
socket_was_active=false
if $SERVICES && systemctl is-active --quiet "$SERVICE.socket" 2>/dev/null; then socket_was_active=true; fi
socket_changed=false
had_socket=false
[ -f "$SOCKET_UNIT" ] && had_socket=true
if write_if_changed 0644 "$SOCKET_UNIT" <<EOF; then socket_changed=true; fi
# Written by install.sh from server.listen (and, with TLS, server.http_listen) in $REAL_CONFIG;
# running it again overwrites this file. hookbox serves these sockets, whatever the config says
# (hookbox check warns when the two differ).
# systemctl stop hookbox alone leaves these ports listening, and the next connection starts
# hookbox again: to stop it, systemctl stop hookbox.socket hookbox.
[Unit]
Description=hookbox webhook receiver (its listening ports)

[Socket]
$streams
# Connections that arrive while hookbox restarts wait here, up to 4096 (also capped by the
# kernel's net.core.somaxconn): senders wait the restart out instead of being refused.
Backlog=4096
NoDelay=true

[Install]
WantedBy=sockets.target
EOF
if ! $socket_changed; then
	info "$SOCKET_UNIT is up to date"
elif $had_socket; then
	info "updated $SOCKET_UNIT"
else
	info "created $SOCKET_UNIT"
fi
had_unit=false
[ -f "$UNIT" ] && had_unit=true
unit_changed=false
if write_if_changed 0644 "$UNIT" <<EOF; then unit_changed=true; fi
# Written by install.sh; running it again overwrites this file.
# Put local changes in a drop-in instead: systemctl edit hookbox
[Unit]
Description=hookbox webhook receiver
Wants=network-online.target
After=network-online.target
# The ports are hookbox.socket's: it binds them and hands them over at each start.
Requires=$SERVICE.socket
After=$SERVICE.socket

[Service]
# READY=1 once the data file is open and the ports served; WATCHDOG=1 while its commits come back.
Type=notify
NotifyAccess=main
WatchdogSec=30
# The start checks the data file, which takes minutes for a large one; connections wait meanwhile.
TimeoutStartSec=15min
User=$SVC_USER
Group=$SVC_USER
ExecStart=$REAL_BIN serve -config $REAL_CONFIG
# systemctl reload hookbox: the config is read again and put in force, or refused (the old one keeps running).
ExecReload=/bin/kill -HUP \$MAINPID
EnvironmentFile=-$REAL_ENV_FILE
# Where a missing variable's error tells to set it.
Environment=HOOKBOX_ENV_FILE=$REAL_ENV_FILE
StateDirectory=hookbox
StateDirectoryMode=0700
# /run/hookbox holds the local socket the commands on this box use (hookbox pause, replay, …): only
# root, the service user and the $SVC_USER group reach it.
RuntimeDirectory=hookbox
RuntimeDirectoryMode=0750
Restart=on-failure
RestartSec=2
# On SIGTERM hookbox stops accepting (new connections wait on hookbox.socket), answers the
# requests in flight with Connection: close, lets sends in flight end for up to 8 s (one cut
# then goes out again from the next process) and exits within 10 s.
TimeoutStopSec=20

# Hardening. Go and bbolt need only @system-service (mmap, flock, fdatasync, prlimit64 are in it;
# nothing hookbox calls is in @privileged or @resources).
NoNewPrivileges=true
ProtectSystem=strict
ReadWritePaths=$REAL_DATA${backup_rw:+
$backup_rw}
ProtectHome=true
PrivateTmp=true
PrivateDevices=true
DeviceAllow=
ProtectProc=invisible
ProcSubset=pid
ProtectKernelTunables=true
ProtectKernelModules=true
ProtectKernelLogs=true
ProtectControlGroups=true
ProtectClock=true
ProtectHostname=true
RestrictNamespaces=true
RestrictRealtime=true
RestrictSUIDSGID=true
LockPersonality=true
MemoryDenyWriteExecute=true
RemoveIPC=true
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
UMask=0077
# No capabilities: hookbox.socket binds the ports, 443 and 80 too.
CapabilityBoundingSet=
AmbientCapabilities=

[Install]
WantedBy=multi-user.target
Also=$SERVICE.socket
EOF
if ! $unit_changed; then
	info "$UNIT is up to date"
elif $had_unit; then
	info "updated $UNIT"
else
	info "created $UNIT"
fi

# 10. The binary, atomically: the staged copy is renamed over the old one. An upgrade of a
# running hookbox first keeps the old binary and takes a backup of the data file (through the
# running server, a consistent copy): a new binary may convert the file, and step 11 puts both
# back if the new one does not become ready.
upgrading=false
prev_bin=$BIN_DIR/.hookbox.previous
pre_upgrade=
if $was_active && [ -f "$BIN" ] && ! cmp -s -- "$new_bin" "$BIN"; then
	upgrading=true
	old_version=$("$BIN" version 2>/dev/null || true)
	cp -p -- "$BIN" "$prev_bin"
	if [ "$(toml_key storage backend "$CONFIG")" != postgres ]; then
		pre_upgrade=$DATA/hookbox.db.pre-upgrade
		if ! (load_env_file "$ENV_FILE" && "$BIN" backup -config "$CONFIG" -o "$pre_upgrade") >/dev/null; then
			rm -f -- "$prev_bin"
			die "could not take a backup of the data file before the upgrade (hookbox backup, above); the binary was not changed and the running service was left alone"
		fi
		info "took a backup of the data file: $pre_upgrade"
	fi
fi
if [ -f "$BIN" ] && cmp -s -- "$new_bin" "$BIN"; then
	info "$BIN is up to date (${version:-hookbox})"
else
	mv -f -- "$new_bin" "$BIN"
	info "installed $BIN (${version:-hookbox})"
fi

# 11. Start, or restart on upgrade.
if $SERVICES && $waiting; then
	# Not started: it would stop at once on the variables still empty (the summary says which).
	systemctl daemon-reload
	systemctl enable "$SERVICE.service" || true
elif $SERVICES; then
	systemctl daemon-reload
	if $was_active && ! $socket_was_active; then
		# The first install of hookbox.socket: the running hookbox binds the ports itself. It stops,
		# the socket takes the ports, hookbox starts on them: senders are refused this once.
		info "handing the ports to $SERVICE.socket: stopping $SERVICE.service (this once, senders are refused until it is back)"
		systemctl stop "$SERVICE.service" || true
	elif $socket_changed && $socket_was_active; then
		# Other ports: the socket binds them anew, so both stop.
		info "the ports changed: restarting $SERVICE.socket and $SERVICE.service"
		systemctl stop "$SERVICE.socket" "$SERVICE.service" || true
	fi
	systemctl enable --now "$SERVICE.socket" || die "systemctl enable --now $SERVICE.socket failed (a port in use? see systemctl status $SERVICE.socket)"
	systemctl enable "$SERVICE.service" || true
	if [ "$(systemctl is-active "$SERVICE.service" 2>/dev/null || true)" = active ]; then
		info "restarting $SERVICE.service (new connections wait on $SERVICE.socket meanwhile)"
		old_pid=$(systemctl show -p MainPID --value "$SERVICE.service" 2>/dev/null || echo 0)
		systemctl restart --no-block "$SERVICE.service" || true
	else
		systemctl start --no-block "$SERVICE.service" || true
	fi
	if ! wait_ready "$READY_WITHIN"; then
		{ journalctl -u "$SERVICE" -n 20 --no-pager -o cat 2>/dev/null || true; } | sed 's/^/    /' >&2
		if $upgrading; then
			rollback
		fi
		die "$SERVICE.service did not become ready within $READY_WITHIN s (state: $(systemctl is-active "$SERVICE.service" 2>/dev/null || echo unknown)); see journalctl -u $SERVICE"
	fi
	rm -f -- "$prev_bin"
fi

# 12. Where to find it.
host=${listen%:*}
host=${host#[}
host=${host%]}
case $host in
'' | 0.0.0.0) host=127.0.0.1 ;;
::) host='[::1]' ;;
*:*) host="[$host]" ;;
esac
scheme=http
[ "$tls_mode" = none ] || scheme=https
base="$scheme://$host:$port"
if [ "$tls_mode" = acme ]; then
	# The certificate is for the domain: that is the address to use, also for the status page.
	base="https://$domain"
	[ "$port" = 443 ] || base="$base:$port"
	public_url=${public_url:-$base}
fi
status_user=$(toml_key status user "$CONFIG")
password_env=$(toml_key status password_env "$CONFIG")
if ! $REAL; then
	info "staged hookbox under $ROOT (--root): no user was created, no owner changed, systemctl was not run, nothing was started"
elif $waiting; then
	info "hookbox is installed and enabled, not started: the config names variables still empty in $ENV_FILE (below)"
else
	info "hookbox is running (${version:-hookbox}) as the $SVC_USER user"
fi
printf '  config:   %s   secrets: %s   data: %s\n' "$CONFIG" "$ENV_FILE" "$DATA"
printf '  status:   %s/   health: %s/healthz%s\n' "$base" "$base" "${public_url:+   public: $public_url}"
if $REAL; then
	printf '  logs:     journalctl -u %s -f      state: systemctl status %s\n' "$SERVICE" "$SERVICE"
	printf '  stop:     systemctl stop %s.socket %s   (both: the socket alone starts it again)\n' "$SERVICE" "$SERVICE"
	printf '  upgrade:  sudo ./install.sh again (or --upgrade FILE): a restart refuses no sender\n'
fi
printf '  hookbox check says:\n'
printf '%s\n' "$check_out" | sed 's/^/    /'
case $tls_mode in
acme) printf '  HTTPS: the certificate for %s comes from the ACME CA at the first start; ports 80 and\n  443 must be reachable (journalctl -u %s shows "certificate ready").\n' "$domain" "$SERVICE" ;;
files) printf '  HTTPS: with %s, read again when it changes.\n' "$cert_file" ;;
esac

# The URL to paste per source: public_url (or the ACME domain) + /in/NAME.
sources=$("$BIN" check -sources -config "$CONFIG" 2>/dev/null || true)
url_base=${public_url:-$base}
url_base=${url_base%/}
urls=$(printf '%s\n' "$sources" | awk -F '\t' -v b="$url_base" '$1 != "" { printf "    %-16s %s/in/%s\n", $1, b, $1 }')
if [ -z "$urls" ]; then
	printf '  sources:  none yet: add a [[source]] with secret_env = "NAME" to %s\n' "$CONFIG"
	printf '            (as installed, it has a commented example per provider), then run install.sh again\n'
elif [ -n "$public_url" ]; then
	printf '  Paste into each platform'\''s webhook settings:\n%s\n' "$urls"
else
	printf '  The sources, on the listen address (%s), which senders on the internet do not reach:\n%s\n' "$listen" "$urls"
	printf '  For the URLs to paste into each platform: set public_url = "https://hooks.example.com" (the\n'
	printf '  address your reverse proxy serves, or domain = "..." for hookbox'\''s own HTTPS) under [server]\n'
	printf '  in %s, then run install.sh again.\n' "$CONFIG"
fi

# The status page's password.
printf '  login:    user %s, ' "${status_user:-admin}"
if [ -n "$password_env" ]; then
	printf 'password: the value of %s in %s ([status] password_env)\n' "$password_env" "$ENV_FILE"
elif [ -n "$(toml_key status password "$CONFIG")" ]; then
	printf 'password: [status] password in %s\n' "$CONFIG"
else
	printf 'password generated at the first start and logged once:\n'
	printf '              sudo journalctl -u %s | grep generated\n' "$SERVICE"
	printf '            to choose one: [status] password_env = "HOOKBOX_STATUS_PASSWORD" in %s,\n' "$CONFIG"
	printf '            run install.sh again and fill it in %s (or hookbox passwd: docs/INSTALL.md)\n' "$ENV_FILE"
fi

# The page from a laptop, through SSH (with hookbox's own certificate it is at its domain).
if $REAL && [ "$tls_mode" != acme ]; then
	ssh_user=${SUDO_USER:-$(id -un 2>/dev/null || echo USER)}
	[ "$ssh_user" != root ] || ssh_user=USER
	ssh_host=$(hostname -f 2>/dev/null || hostname 2>/dev/null || true)
	printf '  page from your laptop: ssh -N -L %s:%s:%s %s@%s\n' "$port" "$host" "$port" "$ssh_user" "${ssh_host:-HOST}"
	printf '            then open %s://127.0.0.1:%s/ there\n' "$scheme" "$port"
fi

if ! $waiting && [ ${#unfilled[@]} -gt 0 ]; then
	printf '  still empty in %s (the check passes without them): %s\n' "$ENV_FILE" "${unfilled[*]}"
fi
if $waiting; then
	if $REAL; then
		printf '  Not started yet: fill in these variables in %s (NAME=value, one a line):\n' "$ENV_FILE"
	else
		printf '  Before it can start, fill in these variables in %s (NAME=value, one a line):\n' "$ENV_FILE"
	fi
	for i in "${!unfilled[@]}"; do
		printf '    %-24s %s\n' "${unfilled[$i]}" "${unfilled_where[$i]}"
	done
	if $REAL; then
		printf '  then: sudo systemctl restart %s   (journalctl -u %s -n 20 shows why if it stops)\n' "$SERVICE" "$SERVICE"
	fi
fi

# A staged root is files to copy, not a service: what goes where, and what the copy still needs.
if ! $REAL; then
	cat <<EOF
  This is a staged root for packaging or tests, not a running service. On the target machine the
  files go to the same paths without the $ROOT prefix:
    $BIN  to $REAL_BIN
    $ETC/  to /etc/hookbox/ (root:$SVC_USER, 0750; config.toml 0640; hookbox.env root-only, 0600)
    $UNIT  to /etc/systemd/system/$SERVICE.service
    $SOCKET_UNIT  to /etc/systemd/system/$SERVICE.socket
  The unit names those real paths, never $ROOT. The config's data_dir is $DATA, so that
  the staged binary can run here; in the copy set data_dir = "$REAL_DATA". There: create the $SVC_USER
  system user, then sudo systemctl daemon-reload && sudo systemctl enable --now $SERVICE.socket $SERVICE
  (logs: journalctl -u $SERVICE -f). Or run sudo ./install.sh on that machine: it does all of this.
EOF
fi
