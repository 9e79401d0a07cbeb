#!/usr/bin/env bash
# Install the system tools the lessons use, when running as root on Debian/Ubuntu.
# Otherwise print what is missing and carry on: every lesson still runs (it replays recordings).
# Idempotent: asks dpkg first and calls apt only for what is missing.
set -u
pkgs=(strace fio vmtouch util-linux coreutils openmpi-bin libopenmpi-dev fuse3 s3fs rclone s3cmd
      chromium hdparm locales slurm-wlm munge
      bpftrace    # optional: lesson 02 traces readahead with it as root, and replays a recorded trace otherwise
      node-configurable-http-proxy python3-venv sudo   # the class on a real JupyterHub (tests/test_hub.py; sudo: the hub on Slurm submits as the student)
      ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common attr   # lesson 08: a private CephFS (replays without)
      radosgw   # lesson 08's object store on that cluster (replays without)
      bwa samtools bcftools graphviz)   # lesson 09: seed 004's pipeline (wgsim ships inside samtools; replays without)
# dd prints a localized summary: lesson 06 and its tests parse a German one too
german_locale() {
  [ "$(id -u)" = 0 ] || return 0
  locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$' && return 0
  command -v localedef >/dev/null && localedef -i de_DE -f UTF-8 de_DE.UTF-8 2>/dev/null || true
}
# Students mount FUSE file systems (lessons 06, 08) with the setuid fusermount3, which opens /dev/fuse as
# the student: Debian's udev rule makes it 0666, some VMs create it 0600. Set Debian's mode once here, so
# that no test has to change a node-wide mode while another run beside it relies on it.
fuse_mode() {
  [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || return 0
  [ "$(stat -c %a /dev/fuse)" = 666 ] && return 0
  echo "/dev/fuse: mode $(stat -c %a /dev/fuse) -> 0666 (Debian's default; students' FUSE mounts need it)"
  chmod 0666 /dev/fuse || true
}
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then german_locale; fuse_mode; exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null || true
  apt-get -f install -y -q >/dev/null 2>&1 || true
  if ! apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}" >/tmp/iolab-apt.log 2>&1; then
    echo "apt-get could not install everything (see /tmp/iolab-apt.log); trying one by one"
    for p in "${missing[@]}"; do apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "$p" >>/tmp/iolab-apt.log 2>&1 || echo "  not installed: $p"; done
  fi
  german_locale
  fuse_mode
else
  echo "not root (or no apt): these system packages are missing: ${missing[*]}"
  echo "the lessons that need them replay recorded outputs; run 'iolab doctor' to see what each one changes"
fi
exit 0
