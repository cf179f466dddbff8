# Shared helpers of the fleet tests (sourced).

# Pinned ansible-core from PyPI, in a virtualenv cached outside the clone
# (created once, reused by later CI runs). Prints the venv's path.
ANSIBLE_CORE_VERSION=2.18.19
ansible_venv() {
	local v=${BBRKIT_CI_CACHE:-$HOME/.cache/bbrkit-ci}/ansible-core-$ANSIBLE_CORE_VERSION
	if ! "$v/bin/ansible-playbook" --version >/dev/null 2>&1; then
		rm -rf "$v"
		python3 -m venv "$v" >&2
		"$v/bin/pip" install -q --disable-pip-version-check "ansible-core==$ANSIBLE_CORE_VERSION" >&2
	fi
	echo "$v"
}

# Purges the bbrkit package when the calling script exits (also on failure),
# unless it was installed before the script started.
purge_bbrkit_on_exit() {
	if dpkg-query -W -f='${Status}' bbrkit 2>/dev/null | grep -q 'ok installed'; then
		echo "bbrkit is already installed on this machine: not touching it" >&2
		exit 2
	fi
	trap 'dpkg --purge bbrkit >/dev/null 2>&1 || true' EXIT
}

# Prints the elapsed time of the calling script (for the CI budget).
elapsed() { echo "time $1: $((SECONDS))s"; }
