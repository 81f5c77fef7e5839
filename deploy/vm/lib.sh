# Shared by deploy/vm/run and deploy/vm/rehearse (sourced, not run): the
# guest kernel and its modules. The caller defines die and sets cache and
# tmp.

# vm_kernel sets kpkg, kver, vmlinuz and moddir: the package
# linux-image-cloud-amd64 depends on (or $MPQ_VM_KERNEL), fetched with
# apt-get download and unpacked once per version into $cache.
vm_kernel() {
  kpkg=${MPQ_VM_KERNEL:-$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')}
  [ -n "$kpkg" ] || die "apt-cache knows no linux-image-cloud-amd64 (run apt-get update)"
  kver=$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')
  [ -n "$kver" ] && [ "$kver" != "(none)" ] || die "no candidate version of $kpkg (run apt-get update)"
  local kdir=$cache/$kpkg-$kver
  if [ ! -f "$kdir/done" ]; then
    echo "${0#./}: fetching $kpkg $kver" >&2
    rm -rf "$kdir"
    mkdir -p "$kdir/deb"
    (cd "$kdir/deb" && apt-get download -q "$kpkg=$kver" >/dev/null 2>"$tmp/apt.err") ||
      { cat "$tmp/apt.err" >&2; die "apt-get download $kpkg=$kver failed"; }
    dpkg-deb -x "$kdir"/deb/*.deb "$kdir/x"
    touch "$kdir/done"
  fi
  vmlinuz=$(ls "$kdir"/x/boot/vmlinuz-* 2>/dev/null | head -1)
  [ -n "$vmlinuz" ] || die "no vmlinuz in $kpkg"
  moddir=$(ls -d "$kdir"/x/lib/modules/* | head -1)
}

# vm_modules ROOT MODULE... copies the modules into ROOT/lib/modules with
# what they depend on (.modinfo's depends=) and lists them in load order
# in ROOT/etc/modules.
vm_modules() {
  local root=$1 m
  shift
  declare -A seen=()
  local order=()
  mkdir -p "$root/lib/modules" "$root/etc"
  _vm_addmod() {
    local m=$1 f dep
    [ -n "${seen[$m]:-}" ] && return
    seen[$m]=1
    f=$(find "$moddir" -name "$m.ko" -o -name "${m//_/-}.ko" | head -1)
    [ -n "$f" ] || die "module $m not in $kpkg (built in?)"
    for dep in $(grep -a -o 'depends=[a-z0-9_,-]*' "$f" | head -1 | sed 's/depends=//; s/,/ /g'); do
      _vm_addmod "$dep"
    done
    cp "$f" "$root/lib/modules/"
    order+=("$(basename "$f")")
  }
  for m in "$@"; do _vm_addmod "$m"; done
  printf '%s\n' "${order[@]}" >"$root/etc/modules"
}
