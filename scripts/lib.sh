# Shared by scripts/quickstart and scripts/test: installing what is missing
# and building.  Sourced, not run.

MISCFS_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build needs, and those the test suite adds.
BUILD_PKGS="gcc pkg-config meson ninja-build fuse3 libfuse3-dev liburing-dev libxxhash-dev libnbd-dev"
TEST_PKGS="clang libclang-rt-14-dev python3 attr acl e2fsprogs util-linux xfsprogs rsync tar git dpkg-dev debhelper lintian nbdkit"

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Install whichever of the given packages are not installed yet.
install_missing() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "Installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure_tree DIR [meson options...]: set the tree up once (with $CC
# if set), reconfigure it if the directory exists; nothing is compiled.
configure_tree() {
	local dir=$1; shift
	if [ -f "$MISCFS_TOP/$dir/build.ninja" ]; then
		meson configure "$MISCFS_TOP/$dir" "$@" >/dev/null
	else
		meson setup "$MISCFS_TOP/$dir" "$MISCFS_TOP" "$@" >/dev/null
	fi
}

# configure_build DIR [meson options...]: configure_tree, then build.
configure_build() {
	configure_tree "$@" && ninja -C "$MISCFS_TOP/$1" -j2 >/dev/null
}
