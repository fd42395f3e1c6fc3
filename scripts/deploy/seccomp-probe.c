/*
 * seccomp-probe: shows from inside a container that the container runtime's
 * seccomp filter (scripts/deploy/seccomp.json) is on. Used only by
 * scripts/deploy/test-image, which compiles it statically and mounts it into
 * the lackpy image (it is not part of the image).
 *
 * Each line of output is one probe, as JSON:
 *   {"call": "ptrace", "ret": -1, "errno": 1}
 *
 * - ptrace(PTRACE_TRACEME), keyctl(KEYCTL_GET_KEYRING_ID) and
 *   io_uring_setup() succeed for an unprivileged process on a stock kernel,
 *   so EPERM (the profile's defaultErrnoRet) from them means the filter
 *   refused them; under seccomp=unconfined they succeed (the test's control).
 * - unshare(CLONE_NEWUSER) is what lackpy's jail needs: the profile allows it.
 * - the Seccomp: line of /proc/self/status (2 = filter mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#define PTRACE_TRACEME_ 0
#define KEYCTL_GET_KEYRING_ID_ 0
#define KEY_SPEC_SESSION_KEYRING_ (-3)

static void report(const char *call, long ret, int err) {
    printf("{\"call\": \"%s\", \"ret\": %ld, \"errno\": %d}\n", call, ret, ret < 0 ? err : 0);
}

int main(void) {
    long r;
    errno = 0;
    r = syscall(SYS_ptrace, PTRACE_TRACEME_, 0, 0, 0);
    report("ptrace", r, errno);
    errno = 0;
    r = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID_, KEY_SPEC_SESSION_KEYRING_, 0);
    report("keyctl", r, errno);
    unsigned char params[120];
    memset(params, 0, sizeof params);
    errno = 0;
    r = syscall(SYS_io_uring_setup, 1, params);
    report("io_uring_setup", r, errno);
    errno = 0;
    r = unshare(CLONE_NEWUSER);
    report("unshare_user", r, errno);

    /* After unshare the process is in a new user namespace; /proc still
     * shows its own status. */
    FILE *f = fopen("/proc/self/status", "r");
    long mode = -1;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Seccomp:", 8) == 0) {
                sscanf(line + 8, "%ld", &mode);
            }
        }
        fclose(f);
    }
    printf("{\"call\": \"status_seccomp\", \"ret\": %ld, \"errno\": 0}\n", mode);
    return 0;
}
