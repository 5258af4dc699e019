#!/bin/sh
# Prints the Debian mirror `make image-base` hands debootstrap (docker/image-base.sh runs this), so that the
# base image is built from the archive the machine itself already uses: its proxy, its local mirror, or its
# air-gapped file:// copy. No mirror host is written here. In order:
#   GROUPCOORD_DEBIAN_MIRROR  when set, used as is (DEBIAN_MIRROR, its older name, too)
#   the apt configuration     the first `deb` entry of a Debian release suite in $APT_DIR/sources.list (one-line
#                             format), then $APT_DIR/sources.list.d/*.list and *.sources (deb822: `Types`,
#                             `URIs`, `Suites`, `Enabled`) in apt's own order (file name); an entry counts when
#                             one of its suites is a Debian release (a codename or an alias like `stable`; on a
#                             Debian host also its VERSION_CODENAME from $OS_RELEASE), so -security, -updates
#                             and third-party repositories (nodesource, cloud-sdk, ...) are passed over
# Nothing found: a message naming GROUPCOORD_DEBIAN_MIRROR on stderr, exit 1.
#   APT_DIR     apt's configuration directory (default /etc/apt); the tests point it at sample configs
#   OS_RELEASE  (default /etc/os-release)
set -eu

if [ -n "${GROUPCOORD_DEBIAN_MIRROR:-}" ]; then
    echo "$GROUPCOORD_DEBIAN_MIRROR"
    exit 0
fi
if [ -n "${DEBIAN_MIRROR:-}" ]; then
    echo "$DEBIAN_MIRROR"
    exit 0
fi

APT_DIR="${APT_DIR:-/etc/apt}"
OS_RELEASE="${OS_RELEASE:-/etc/os-release}"

# Debian's release suites: codenames and aliases (the archive keeps old ones reachable).
SUITES="buster bullseye bookworm trixie forky duke sid oldoldstable oldstable stable testing unstable"
if [ -r "$OS_RELEASE" ]; then
    # shellcheck disable=SC1090
    host="$(. "$OS_RELEASE" && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}" || true)"
    [ -n "$host" ] && SUITES="$SUITES $host"
fi

# One-line format: deb [options] URI suite [components...]
one_line() {
    awk -v suites=" $SUITES " '
        /^[ \t]*#/ { next }
        $1 == "deb" {
            i = 2
            if (substr($i, 1, 1) == "[") { while (i <= NF && $i !~ /\]$/) i++; i++ }
            uri = $i; suite = $(i + 1)
            if (uri != "" && uri !~ /^cdrom:/ && index(suites, " " suite " ") > 0) { print uri; exit }
        }
    ' "$1"
}

# deb822 format: stanzas of `Field: value` lines (continuations indented) separated by blank lines.
deb822() {
    awk -v suites=" $SUITES " '
        function flush(   n, m, s, u, k, j) {
            if (!done && (" " types " ") ~ / deb / && tolower(enabled) != "no") {
                n = split(suite_list, s, /[ \t]+/)
                for (k = 1; k <= n && !done; k++) {
                    if (s[k] != "" && index(suites, " " s[k] " ") > 0) {
                        m = split(uris, u, /[ \t]+/)
                        for (j = 1; j <= m; j++) if (u[j] != "" && u[j] !~ /^cdrom:/) { print u[j]; done = 1; break }
                    }
                }
            }
            types = ""; uris = ""; suite_list = ""; enabled = "yes"; field = ""
        }
        BEGIN { enabled = "yes" }
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]/ { value = $0 }
        /^[^ \t]/ {
            colon = index($0, ":")
            if (colon == 0) next
            field = tolower(substr($0, 1, colon - 1)); value = substr($0, colon + 1)
        }
        {
            if (field == "types") types = types " " value
            else if (field == "uris") uris = uris " " value
            else if (field == "suites") suite_list = suite_list " " value
            else if (field == "enabled") { enabled = value; gsub(/[ \t]/, "", enabled) }
        }
        END { flush() }
    ' "$1"
}

found=""
if [ -f "$APT_DIR/sources.list" ]; then
    found="$(one_line "$APT_DIR/sources.list")"
fi
if [ -z "$found" ]; then
    for f in "$APT_DIR"/sources.list.d/*; do
        [ -f "$f" ] || continue
        case "$f" in
            *.list) found="$(one_line "$f")" ;;
            *.sources) found="$(deb822 "$f")" ;;
            *) continue ;;
        esac
        [ -z "$found" ] || break
    done
fi
if [ -z "$found" ]; then
    echo "no Debian mirror found: no 'deb' entry of a Debian release suite ($SUITES) in $APT_DIR/sources.list" \
        "or $APT_DIR/sources.list.d/*.list|*.sources; set GROUPCOORD_DEBIAN_MIRROR to one (e.g. a local mirror" \
        "or a file:// copy of the archive)" >&2
    exit 1
fi
echo "$found"
