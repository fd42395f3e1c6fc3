#!/usr/bin/env python3
"""Generate scripts/deploy/seccomp.json: the container seccomp profile for lackpy.

Base: the container runtime's default allowlist (containers-common's
/usr/share/containers/seccomp.json, the same family as Docker's default.json).
Changes, and why:

- allowed without CAP_SYS_ADMIN (Docker's default gates them on it): unshare,
  clone/clone3 with namespace flags, setns, mount/umount2 (tmpfs and bind
  mounts inside the worker's own mount namespace), pivot_root, sethostname
  (inside its own UTS namespace). The kernel still checks that the caller owns
  the namespace it acts in, so these give no power over the host's namespaces.
- landlock_*, seccomp and prctl stay allowed (the worker applies its own,
  stricter, filter on top of this one).
- removed, because lackpy never needs them and they widen the kernel surface
  reachable from the container: keyctl, add_key, request_key, ptrace,
  process_vm_readv/writev, process_madvise, kcmp, pidfd_getfd, reboot, syslog,
  name_to_handle_at, open_by_handle_at, fanotify_*, the new mount API
  (fsopen, fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr),
  memfd_secret, userfaultfd, bpf, perf_event_open, io_uring_*, the NUMA policy
  calls, remap_file_pages, vmsplice, acct, quotactl, *_module, kexec_*,
  swapon/off, clock setting, iopl/ioperm, personality except the plain ones.

Usage: gen-seccomp.py [BASE] > seccomp.json
"""

import json
import sys

REMOVE = {
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv",
    "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd", "reboot",
    "syslog", "name_to_handle_at", "open_by_handle_at", "fanotify_init",
    "fanotify_mark", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr", "memfd_secret", "userfaultfd", "bpf",
    "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mbind", "set_mempolicy", "get_mempolicy", "migrate_pages", "move_pages",
    "remap_file_pages", "vmsplice", "acct", "quotactl", "init_module",
    "finit_module", "delete_module", "query_module", "kexec_load",
    "kexec_file_load", "swapon", "swapoff", "clock_settime", "clock_settime64",
    "settimeofday", "stime", "clock_adjtime", "clock_adjtime64", "adjtimex",
    "iopl", "ioperm", "lookup_dcookie", "setdomainname", "vhangup", "uselib",
    "ustat", "sysfs", "nfsservctl", "bdflush", "chroot",
}

# What lackpy's jail setup needs beyond the runtime default (see above).
ADD = [
    "unshare", "clone", "clone3", "setns", "mount", "umount2", "pivot_root",
    "sethostname", "landlock_create_ruleset", "landlock_add_rule",
    "landlock_restrict_self", "seccomp", "prctl", "pidfd_open",
    "pidfd_send_signal", "execveat", "openat2", "close_range",
]


def main():
    base_path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    base = json.load(open(base_path))
    allow = set()
    rules = []
    for rule in base["syscalls"]:
        # Capability-conditional rules are dropped: the container has no
        # capabilities, so only their "without the capability" half applies,
        # and it is the default action anyway.
        if rule.get("includes", {}).get("caps") or rule.get("excludes", {}).get("caps"):
            if rule["action"] == "SCMP_ACT_ALLOW" and rule.get("excludes", {}).get("caps"):
                # e.g. socket(AF_NETLINK, NETLINK_AUDIT) refused without CAP_AUDIT_WRITE.
                rules.append(rule)
            continue
        if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args") and not rule.get("includes"):
            allow.update(n for n in rule["names"] if n not in REMOVE)
        elif rule["action"] == "SCMP_ACT_ALLOW":
            names = [n for n in rule["names"] if n not in REMOVE]
            if names:
                rules.append(dict(rule, names=names))
    allow.update(ADD)
    allow -= REMOVE
    out = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "archMap": base["archMap"],
        "syscalls": [
            {"names": sorted(allow), "action": "SCMP_ACT_ALLOW", "comment": "runtime default allowlist plus lackpy's jail setup (see gen-seccomp.py)"}
        ] + rules,
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
