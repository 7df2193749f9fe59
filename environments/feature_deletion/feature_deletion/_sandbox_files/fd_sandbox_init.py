"""Sandbox init: runs as pid 1 of fresh mount+pid+net namespaces (started by `unshare`).

Standard library only (and feature_deletion.fstree, which is); started with `python -I -S`. It first
joins the command's memory cgroup, so that everything it and the command do is charged to it. It builds
a new root on a tmpfs from read-only bind mounts; each writable directory (the workdir at its drawn path, the
grader's output dir) is staged: copied onto one tmpfs of the disk quota's size, mounted there, and
copied back once the command is over (it exited, or SIGTERM: the host's wall clock or memory watchdog)
and every process it left is dead, so that nothing can write past the quota and nothing changes a tree
while it is copied. Then it chroots, drops to an unprivileged uid with rlimits, runs the command and
reaps every process until the command exits. When this process exits the kernel kills everything left
in the pid namespace.
"""

import ctypes
import json
import os
import resource
import signal
import sys

sys.path.insert(0, json.loads(sys.argv[1])["lib"])
from fstree import mirror  # noqa: E402  (the package dir is only known from the spec)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

libc = ctypes.CDLL(None, use_errno=True)


def mount(src, target, fstype, flags, data=None):
    args = [ctypes.c_char_p(x.encode() if x is not None else None) for x in (src, target, fstype)]
    res = libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), ctypes.c_char_p(data.encode() if data else None))
    if res != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {src} -> {target}: {os.strerror(errno)}")


def make_point(path, is_dir):
    if is_dir:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()


def bind(root, src, dst, writable):
    target = root + dst
    if os.path.islink(src):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(src), target)
        return
    make_point(target, os.path.isdir(src))
    mount(src, target, None, MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV
    mount(None, target, None, flags if writable else flags | MS_RDONLY)


class Stop(Exception):
    """SIGTERM: the host ends the command (wall clock, memory); the staged trees are still copied back."""


def _stop(signum, frame):
    raise Stop()


def stage(spec, root):
    """Mount the staging tmpfs, copy each writable bind onto it and bind the copy instead of the host dir.
    Returns [(open staged dir, open host dir)] to copy back."""
    pairs = []
    writable = [(src, dst) for src, dst, w in spec["binds"] if w and os.path.isdir(src)]
    if not writable:
        return pairs
    point = spec["stage"]["point"]
    mount("tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={spec['stage']['mb']}m,nr_inodes={spec['stage']['inodes']},mode=755")
    for i, (src, dst) in enumerate(writable):
        staged = f"{point}/{i}"
        os.mkdir(staged, 0o755)
        try:
            mirror(src, staged, owner=spec["uid"])
        except OSError as exc:
            if exc.errno in (28, 122):  # ENOSPC, EDQUOT
                raise OSError(exc.errno, f"{src} holds more than the disk quota ({spec['stage']['mb']} MiB, "
                                         f"{spec['stage']['inodes']} entries)") from None
            raise
        pairs.append((os.open(staged, os.O_RDONLY | os.O_DIRECTORY), os.open(src, os.O_RDONLY | os.O_DIRECTORY)))
        make_point(root + dst, True)
        mount(staged, root + dst, None, MS_BIND)
        mount(None, root + dst, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    return pairs


def unstage(spec, pairs):
    """Copy the staged trees back to the host, once nothing else runs in the namespace."""
    for staged, host in pairs:
        mirror(staged, host, owner=spec["uid"])
    if pairs:
        st = os.fstatvfs(pairs[0][0])
        if st.f_bavail * st.f_frsize < 1 << 20 or st.f_favail < 16:
            os.write(2, f"\nsandbox: the command filled its disk quota ({spec['stage']['mb']} MiB, "
                        f"{spec['stage']['inodes']} entries): writes past it failed\n".encode())


def kill_all():
    """SIGKILL every other process of the pid namespace and reap them all."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main():
    spec = json.loads(sys.argv[1])
    signal.signal(signal.SIGTERM, _stop)
    if spec["cgroup"]:
        with open(spec["cgroup"], "w") as f:
            f.write("0")
        # The kernel's OOM kill (of the whole cgroup, on v2) spares this process, so the staged trees are still
        # copied back; the command resets its own score. Without CAP_SYS_RESOURCE an OOM kill may take this
        # process too: the command's writes are then lost, never half copied (nothing is copied before it ends).
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("-1000")
        except PermissionError:
            pass
    # Copying a staged tree holds two directories open per level of it.
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    root = spec["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    # The private /tmp comes first: an interpreter or venv that lives under the host's /tmp (a CI
    # checkout there, say) is then bound on top of it instead of being hidden by it.
    os.makedirs(root + "/tmp", exist_ok=True)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmp_mb']}m,mode=1777")
    for src, dst, writable in spec["binds"]:
        if os.path.lexists(src) and not (writable and os.path.isdir(src)):
            bind(root, src, dst, writable)
    pairs = stage(spec, root)
    for path in spec["masks"]:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")
    os.makedirs(root + "/proc", exist_ok=True)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/dev", exist_ok=True)
    mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for dev in ("null", "zero", "full", "random", "urandom"):
        make_point(root + "/dev/" + dev, False)
        mount("/dev/" + dev, root + "/dev/" + dev, None, MS_BIND)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chroot(root)
    os.chdir(spec["cwd"])
    uid = spec["uid"]
    limits = spec["limits"]
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("0")  # not the init's -1000
            os.setsid()
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for name, value in limits.items():
                res = getattr(resource, name)
                resource.setrlimit(res, (value, value))
            os.umask(0o022)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.execve(spec["argv"][0], spec["argv"], spec["env"])
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"sandbox: cannot start {spec['argv'][0]}: {exc}\n".encode())
            os._exit(127)
    status = 0
    try:
        while True:
            try:
                done, st = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if done == pid:
                status = st
                break
    except Stop:
        status = signal.SIGKILL  # as a killed process's wait status
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_all()
    try:
        unstage(spec, pairs)
    except OSError as exc:
        os.write(2, f"\nsandbox: the command's writes could not all be copied back: {exc}\n".encode())
        sys.exit(125)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    try:
        main()
    except Stop:
        sys.exit(128 + signal.SIGTERM)
    except OSError as exc:
        os.write(2, f"sandbox setup failed: {exc}\n".encode())
        sys.exit(125)
