"""Sandbox init: runs as pid 1 of fresh mount+pid+net namespaces (started by `unshare`).

Standard library only; started with `python -I -S`. It builds a new root on a tmpfs from
read-only bind mounts, mounts the workdir read-write at /workspace, chroots, drops to an
unprivileged uid with rlimits, runs the command and reaps every process until the command
exits. When this process exits the kernel kills everything left in the pid namespace.
"""

import ctypes
import json
import os
import resource
import signal
import sys

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


def main():
    spec = json.loads(sys.argv[1])
    root = spec["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    # The private /tmp comes first: an interpreter or venv that lives under the host's /tmp (a CI
    # checkout there, say) is then bound on top of it instead of being hidden by it.
    os.makedirs(root + "/tmp", exist_ok=True)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmp_mb']}m,mode=1777")
    for src, dst, writable in spec["binds"]:
        if os.path.lexists(src):
            bind(root, src, dst, writable)
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
    while True:
        try:
            done, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if done == pid:
            status = st
            break
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        os.write(2, f"sandbox setup failed: {exc}\n".encode())
        sys.exit(125)
