# cli_lib.sh: what the command-line tests share (sourced): a temporary folder removed at exit,
# fail, and one_line_error.
dir=$(mktemp -d)
trap '[ -n "${KEEP_DIR:-}" ] || rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
one_line_error() {  # one_line_error TEXT CMD...: CMD fails with one stderr line containing TEXT
  local pattern=$1; shift
  local msg
  msg=$("$@" 2>&1 >/dev/null) && fail "accepted: $*"
  [ "$(echo "$msg" | wc -l)" -eq 1 ] || fail "error is not one line: $msg"
  echo "$msg" | grep -qF -- "$pattern" || fail "expected '$pattern', got: $msg"
}
