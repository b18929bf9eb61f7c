#!/usr/bin/env bash
# Builds the qtc .deb with cargo-deb (installed first if missing), then unpacks it into a
# throwaway root with `dpkg -x` and checks every file is where it should be.
#
#   packaging/build-deb.sh            # -> target/debian/qtc_<version>-1_<arch>.deb
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

if ! command -v cargo-deb >/dev/null; then
  echo "== installing cargo-deb"
  cargo install cargo-deb --locked
fi
command -v dpkg-deb >/dev/null || { echo "dpkg-deb is needed (apt-get install dpkg)"; exit 1; }

echo "== packaged config: the example with the data in /var/lib/qtc and [tls] as qtc init writes it"
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target/qtc-deb"
# The certificate itself is made on the installed system by postinst (`qtc cert`): every
# station gets its own key, none is shipped.
sed -e 's|^dir = "qtc-data"|dir = "/var/lib/qtc"|' \
    -e 's|^cert = ""$|cert = "qtc-cert.pem"|' -e 's|^key = ""$|key = "qtc-key.pem"|' \
    crates/qtc/qtc.example.toml > "$target/qtc-deb/qtc.toml"
grep -q '^dir = "/var/lib/qtc"$' "$target/qtc-deb/qtc.toml"
grep -q '^cert = "qtc-cert.pem"$' "$target/qtc-deb/qtc.toml"
grep -q '^key = "qtc-key.pem"$' "$target/qtc-deb/qtc.toml"

echo "== cargo build --release -p qtc"
cargo build --release -p qtc
# A binary with packed relocations starts only on glibc >= 2.36, which the computed dependency
# misses (Cargo.toml, [package.metadata.deb.variants.relr]).
variant=()
# (Read whole first: with pipefail, `grep -q` leaving early would fail readelf's pipe.)
needs=$(readelf -V "$target/release/qtc")
if grep -q GLIBC_ABI_DT_RELR <<<"$needs"; then
  echo "the binary has packed relocations: the package depends on libc6 (>= 2.36)"
  variant=(--variant relr)
fi

echo "== cargo deb"
# --strip: the release profile keeps symbol names for backtraces; the package need not.
# Its output goes to a file first: `tee /dev/stderr` would reopen (and truncate) a log file
# that standard error is redirected to.
cargo deb -p qtc --no-build "${variant[@]}" --strip --output "$target/debian/" \
  >"$target/qtc-deb/cargo-deb.log" 2>&1 || { cat "$target/qtc-deb/cargo-deb.log" >&2; exit 1; }
cat "$target/qtc-deb/cargo-deb.log" >&2
deb=$(grep '\.deb$' "$target/qtc-deb/cargo-deb.log" | tail -1)
[ -f "$deb" ] || { echo "no .deb produced"; exit 1; }

echo "== checking $deb"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg -x "$deb" "$root"
ctl="$root/DEBIAN"
dpkg -e "$deb" "$ctl"
fail=0
need() { if [ ! -e "$root/$1" ]; then echo "missing: /$1"; fail=1; else echo "ok: /$1"; fi; }
need usr/bin/qtc
need etc/qtc/qtc.toml
need usr/share/doc/qtc/operating.md
need usr/share/doc/qtc/qtc.example.toml
if [ -e "$root/lib/systemd/system/qtc.service" ]; then need lib/systemd/system/qtc.service
else need usr/lib/systemd/system/qtc.service; fi
grep -qx '/etc/qtc/qtc.toml' "$ctl/conffiles" && echo "ok: /etc/qtc/qtc.toml is a conffile" \
  || { echo "not a conffile: /etc/qtc/qtc.toml"; fail=1; }
grep -q 'adduser --system' "$ctl/postinst" && echo "ok: postinst creates the qtc user" \
  || { echo "postinst does not create the qtc user"; fail=1; }
grep -q 'deb-systemd-helper' "$ctl/postinst" && echo "ok: postinst enables qtc.service" \
  || { echo "postinst does not enable qtc.service"; fail=1; }
grep -q 'qtc -c /etc/qtc/qtc.toml cert' "$ctl/postinst" && echo "ok: postinst makes the certificate" \
  || { echo "postinst does not make the certificate"; fail=1; }
if [ -e "$root/etc/qtc/qtc-key.pem" ]; then echo "a private key is shipped"; fail=1; fi
if [ ${#variant[@]} -gt 0 ]; then
  grep -q '^Depends:.*libc6 (>= 2.36)' "$ctl/control" && echo "ok: depends on libc6 (>= 2.36)" \
    || { echo "the binary needs glibc 2.36 and the package does not say so"; fail=1; }
fi
# The packaged binary runs; it makes the certificate as postinst does, and the packaged config
# is valid, uses it and points at /var/lib/qtc.
"$root/usr/bin/qtc" --version
"$root/usr/bin/qtc" -c "$root/etc/qtc/qtc.toml" cert
"$root/usr/bin/qtc" -c "$root/etc/qtc/qtc.toml" check | tee "$root/check.txt"
grep -q '^data: /var/lib/qtc/qtc.sqlite$' "$root/check.txt" || { echo "data is not in /var/lib/qtc"; fail=1; }
grep -q '^tls: certificate .*/etc/qtc/qtc-cert.pem, SHA-256 fingerprint ' "$root/check.txt" \
  || { echo "the packaged config does not use its certificate"; fail=1; }
[ $fail -eq 0 ] || { echo "FAILED"; exit 1; }
echo "built and checked $deb in $(( $(date +%s) - start )) s"
