import http.server
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from feature_deletion.sandbox import (DAY_S, UPTIMES_S, Limits, Sandbox, draw_seed, draw_traits, ensure_runner,
                                     probe_isolation)


def _sandbox_pids(sb):
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if p.stat().st_uid == sb.uid:
                    pids.append(int(p.name))
            except FileNotFoundError:
                pass
    return pids


@pytest.fixture(scope="module")
def runner():
    assert probe_isolation() is None, probe_isolation()
    return ensure_runner()


def test_no_network_even_to_host_loopback(tmp_path, runner):
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        code = (f"import socket\nfor addr in [('127.0.0.1', {port}), ('1.1.1.1', 80)]:\n"
                "    s = socket.socket(); s.settimeout(3)\n"
                "    try:\n        s.connect(addr); print('CONNECTED', addr)\n"
                "    except OSError as e:\n        print('blocked', e.errno)\n")
        result = Sandbox(tmp_path, runner=runner).run([Sandbox(tmp_path, runner=runner).python, "-c", code])
        assert "CONNECTED" not in result.stdout and result.stdout.count("blocked") == 2, result.output
        # The host itself reaches the server: the block is the sandbox's doing.
        import urllib.request

        urllib.request.urlopen(f"http://127.0.0.1:{port}/host", timeout=5).read()
        assert hits == ["/host"]
    finally:
        server.shutdown()
        server.server_close()


def test_filesystem_is_private_and_read_only(tmp_path, runner):
    marker = Path("/tmp") / f"fd-escape-{os.getpid()}"
    sb = Sandbox(tmp_path, runner=runner)
    code = ("import os\n"
            f"for p in ['{marker}', '/etc/fd-escape', '/usr/fd-escape', '{runner}/fd-escape']:\n"
            "    try:\n        open(p, 'w').write('x'); print('wrote', p)\n"
            "    except OSError as e:\n        print('denied', p, e.errno)\n"
            f"open('{sb.workspace}/inside.txt', 'w').write('ok')\n"
            "print(os.path.exists('/work/wt'), os.path.exists('/work/main'), os.getuid())\n")
    result = sb.run([sb.python, "-c", code])
    assert "wrote /etc" not in result.stdout and "wrote /usr" not in result.stdout and f"wrote {runner}" not in result.stdout
    assert not marker.exists() and not Path("/etc/fd-escape").exists() and not (Path(runner) / "fd-escape").exists()
    assert (tmp_path / "inside.txt").read_text() == "ok"
    assert "False False" in result.stdout and not result.stdout.strip().endswith(" 0"), result.output


def test_where_the_workspace_is_and_the_time_zone_are_drawn(tmp_path, runner):
    """A fixed mount path or zone tells code it is graded (red team 9, P9: gold only under `/workspace`): each sandbox
    draws its paths, each command its zone; the command starts in its workspace, which holds the workdir."""
    (tmp_path / "here.txt").write_text("x")
    code = "import os, time\nprint(os.getcwd(), os.path.exists('here.txt'), time.tzname[0])\n"
    seen = []
    for _ in range(6):
        sb = Sandbox(tmp_path, runner=runner)
        result = sb.run([sb.python, "-c", code])
        where, found, zone = result.stdout.split()
        assert where == sb.workspace and found == "True", result.output
        assert len({sb.workspace, sb.helpers, sb.out}) == 3
        seen.append((where, zone))
    # six draws all alike: about 1e-5 for the paths (two shapes have no drawn part), 4e-6 for the zones
    assert len({w for w, _ in seen}) > 1 and len({z for _, z in seen}) > 1, seen


def test_the_two_replays_differ_in_every_trait_and_their_processes_have_them(tmp_path, runner):
    """Red teams 18 and 19 (S18, O18, U18; I19, D19, S19, R19, N19): code broken only under the hash seed 0, assertions
    or docstrings off, a host up for more than a month or less than a minute, the int/str digit limit lifted, no
    `site`, a raised recursion limit, was paid, no graded process having any of them. Of the two configurations a
    grading's replays get, one has each trait's user side, and a sandboxed process under it reads what the
    configuration says (its clocks set by a time namespace: /proc/uptime and the boot time agree)."""
    code = ("import os, sys, time\nboot = next(int(l.split()[1]) for l in open('/proc/stat') if l.startswith('btime'))"
            "\nprint(os.environ['PYTHONHASHSEED'], sys.flags.optimize, sys.get_int_max_str_digits(), 'site' in sys.modules,"
            " os.environ.get('FD_ROOM', '-'), int(time.monotonic()), int(float(open('/proc/uptime').read().split()[0])),"
            " int(time.time() - boot))\n")
    sides = set()
    for _ in range(8):
        pair = draw_traits()
        for trait in (lambda t: t.hash_seed == 0, lambda t: t.optimize > 0, lambda t: t.unlimited_digits,
                      lambda t: t.no_site, lambda t: t.deep, lambda t: t.uptime_s >= UPTIMES_S[1][0]):
            assert sorted(map(trait, pair)) == [False, True], pair
        assert all(UPTIMES_S[0][0] <= t.uptime_s < UPTIMES_S[1][1] for t in pair), pair
        sides.add(tuple((t.hash_seed == 0, t.optimize, t.no_site, t.uptime_s >= 30 * DAY_S) for t in pair))
    assert len(sides) > 1, sides  # which replay gets which side is drawn (eight draws alike: about 1 in 10**7)
    for traits in pair:
        sb = Sandbox(tmp_path, runner=runner, traits=traits)
        result = sb.run([sb.python, "-c", code])
        seed, optimize, digits, site, room, *clocks = result.stdout.split()
        assert (seed == "0") == (traits.hash_seed == 0) and optimize == str(traits.optimize), result.output
        assert (digits == "0") == traits.unlimited_digits and (site == "False") == traits.no_site, result.output
        assert (room == "deep") == traits.deep, result.output
        for clock in map(int, clocks):
            assert traits.uptime_s - 2 <= clock <= traits.uptime_s + 30, (traits, result.stdout)


def test_the_drawn_hash_seed_is_often_one_users_fix():
    """Red team 19, K19: code gold everywhere but under 83 seeds that guides fix (1 .. 64, 42, 1234, 2024, ...) was
    paid, each drawn with probability 2**-32. Drawn log-uniformly, a seed of at most 64 comes up in ln(65) / ln(2**32)
    (19 %) of commands, seed 1 in 1/32 of them, and the range still reaches past 2**31."""
    seeds = [draw_seed() for _ in range(4000)]
    assert all(1 <= seed <= 2**32 - 1 for seed in seeds)
    assert 0.14 < sum(seed <= 64 for seed in seeds) / len(seeds) < 0.24  # sd 0.006
    assert 0.015 < seeds.count(1) / len(seeds) < 0.05 and max(seeds) > 2**31


def test_wall_limit_kills_the_whole_tree(tmp_path, runner):
    sb = Sandbox(tmp_path, runner=runner, limits=Limits(wall_s=3))
    code = ("import os, subprocess, time\n"
            "subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
            "if os.fork() == 0:\n    os.setsid(); time.sleep(1000)\n"
            "time.sleep(1000)\n")
    t0 = time.monotonic()
    result = sb.run([sb.python, "-c", code])
    assert result.timed_out and time.monotonic() - t0 < 15
    time.sleep(0.5)
    assert _sandbox_pids(sb) == []


def test_fork_bomb_and_memory_and_file_size_are_capped(tmp_path, runner):
    # memory: the command's cgroup where one can be made (no address-space cap then), else RLIMIT_AS and the watchdog
    sb = Sandbox(tmp_path, runner=runner, limits=Limits(wall_s=20, nproc=32, memory_mb=512, total_memory_mb=512,
                                                         fsize_mb=1))
    bomb = ("import os\nn = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n            import time; time.sleep(30)\n"
            "        n += 1\n    except OSError:\n        print('capped at', n, flush=True); break\n")
    result = sb.run([sb.python, "-c", bomb])
    assert "capped at" in result.stdout and int(result.stdout.split()[-1]) < 40, result.output
    memory = "x = b'x' * (1024 * 1024 * 1024)\nprint('allocated')"  # pages touched, as a cgroup counts them
    assert "allocated" not in sb.run([sb.python, "-c", memory]).stdout
    big = f"open('{sb.workspace}/big', 'wb').write(b'x' * 5 * 1024 * 1024)"
    assert sb.run([sb.python, "-c", big]).returncode != 0
    assert (tmp_path / "big").stat().st_size <= 1024 * 1024
    time.sleep(0.5)
    assert _sandbox_pids(sb) == []


def test_refuses_without_isolation_unless_opted_out(tmp_path):
    """With no `unshare` on PATH the sandbox refuses to run agent code; isolation='none' runs it."""
    code = (
        "import sys\nfrom feature_deletion.sandbox import Sandbox, IsolationUnavailable, probe_isolation\n"
        "print('reason:', probe_isolation())\n"
        f"try:\n    Sandbox({str(tmp_path)!r}).run([sys.executable, '-c', 'print(1)'])\n    print('RAN')\n"
        "except IsolationUnavailable as e:\n    print('REFUSED', e)\n"
        f"r = Sandbox({str(tmp_path)!r}, isolation='none').run([sys.executable, '-c', 'print(41 + 1)'])\n"
        "print('optout', r.stdout.strip())\n"
    )
    env = dict(os.environ, PATH="/nonexistent")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "`unshare` (util-linux) is not installed" in out
    assert "REFUSED" in out and "RAN" not in out and "isolation = \"none\"" in out
    assert "optout 42" in out


def test_no_vendored_copy_of_a_package_is_visible(tmp_path, runner):
    """The host holds copies of task packages (setuptools vendors more_itertools, cloud SDKs bundle
    cachetools, interpreters bundle wheels); none of them, nor any archive, is reachable inside."""
    sb = Sandbox(tmp_path, runner=runner)
    code = ("import os\nnames = {'more_itertools', 'cachetools', 'toolz', 'inflection'}\nfound = []\n"
            "for d, dirs, files in os.walk('/'):\n"
            f"    dirs[:] = [x for x in dirs if os.path.join(d, x) not in ('/proc', '/dev', '{sb.workspace}', '/sys')]\n"
            "    found += [os.path.join(d, x) for x in dirs if x in names]\n"
            "    found += [os.path.join(d, f) for f in files if f.endswith(('.whl', '.egg', '.zip'))\n"
            "              or f.split('.')[0] in names]\n"
            "print(len(found), found[:5])\n")
    result = sb.run([sb.python, "-c", code])
    assert result.returncode == 0 and result.stdout.strip() == "0 []", result.output


@pytest.mark.parametrize("python, problem", [
    (None, "failed (exit"),  # the runner has no interpreter
    ("#!/bin/sh\nsleep 30\n", "did not finish within 2 s"),  # an interpreter that hangs
])
def test_a_session_whose_sandbox_cannot_start_is_refused_before_any_work(tiny_tasks, tmp_path, python, problem):
    from feature_deletion.rollout import ToolSession
    from feature_deletion.sandbox import SandboxUnavailable

    rows, tasks_dir, _ = tiny_tasks
    runner = tmp_path / "runner"
    (runner / "bin").mkdir(parents=True)
    if python is not None:
        (runner / "bin" / "python").write_text(python)
        (runner / "bin" / "python").chmod(0o755)
    with pytest.raises(SandboxUnavailable, match=re.escape(problem)):
        ToolSession(rows[0], tasks_dir, runner=runner, limits=Limits(wall_s=2))


def test_an_ended_command_keeps_its_writes_and_leaves_no_cgroup_or_mount(tmp_path, runner):
    """A command past its wall clock is ended by its init, which copies the staged workspace back first; its
    memory cgroup is removed, and nothing of the staging is mounted on the host."""
    from feature_deletion.memcap import PREFIX, hierarchies

    sb = Sandbox(tmp_path, runner=runner, limits=Limits(wall_s=3))
    code = f"open('{sb.workspace}/kept', 'w').write('x')\nimport time\ntime.sleep(100)\n"
    result = sb.run([sb.python, "-c", code])
    assert result.timed_out and (tmp_path / "kept").read_text() == "x"
    assert [c for h in hierarchies() for p in h.parents if p.is_dir() for c in p.iterdir()
            if c.name.startswith(f"{PREFIX}{os.getpid()}-")] == []
    assert ".fd-sandbox" not in Path("/proc/self/mountinfo").read_text()
    time.sleep(0.5)
    assert _sandbox_pids(sb) == []


def test_a_read_only_workspace_stays_read_only_and_the_output_dir_is_capped(tmp_path, runner):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    (work / "a.py").write_text("x = 1\n")
    sb = Sandbox(work, runner=runner, limits=Limits(disk_mb=8), outdir=out, writable=False)
    code = (f"import os\ntry:\n    open('{sb.workspace}/b.py', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n"
            f"open('{sb.out}/r.json', 'w').write('{{}}')\n"
            f"try:\n    open('{sb.out}/big', 'wb').write(b'x' * 16 * 2**20)\nexcept OSError as e:\n    print('full', e.errno)\n")
    result = sb.run([sb.python, "-c", code])
    assert "ro 30" in result.stdout and "full 28" in result.stdout, result.output
    assert sorted(p.name for p in work.iterdir()) == ["a.py"] and (out / "r.json").read_text() == "{}"
    assert (out / "big").stat().st_size <= 8 * 2**20


def _without_cgroups(run):
    """`run()` in a child process whose mount namespace hides /sys/fs/cgroup under an empty tmpfs, as in an
    unprivileged container; its return value (a string) comes back."""
    import ctypes

    from feature_deletion.memcap import hierarchies

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            assert libc.unshare(0x00020000) == 0  # CLONE_NEWNS
            assert libc.mount(None, b"/", None, ctypes.c_ulong(16384 | (1 << 18)), None) == 0  # MS_REC | MS_PRIVATE
            assert libc.mount(b"none", b"/sys/fs/cgroup", b"tmpfs", ctypes.c_ulong(0), None) == 0
            hierarchies.cache_clear()
            os.write(write, run().encode())
        except BaseException as exc:  # noqa: BLE001
            os.write(write, f"child failed: {exc!r}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def test_without_cgroups_a_watchdog_ends_a_command_over_its_memory_cap(tmp_path, runner):
    """Where no cgroup can be made (an unprivileged container), the watchdog over the sandbox uid's resident memory
    ends the command."""
    from feature_deletion.memcap import MemoryCgroup

    code = ("import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n        b = bytearray(200 * 2**20)\n"
            "        for i in range(0, len(b), 4096): b[i] = 1\n        time.sleep(5); os._exit(0)\n"
            "for _ in range(4): os.wait()\nprint('done')\n")

    def run():
        sb = Sandbox(tmp_path, runner=runner, limits=Limits(total_memory_mb=256, memory_mb=1024, wall_s=60))
        r = sb.run([sb.python, "-c", code])
        return f"cgroup {MemoryCgroup.create(2**28)} exceeded {r.memory_exceeded} {'done' in r.stdout} {r.stderr}"

    out = _without_cgroups(run)
    assert out.startswith("cgroup None exceeded True False") and "it was ended" in out, out


def _shm_segments_of(uid: int) -> list[int]:
    with open("/proc/sysvipc/shm") as f:
        header = f.readline().split()
        return [int(r["shmid"]) for r in (dict(zip(header, line.split())) for line in f) if int(r["uid"]) == uid]


def test_system_v_shared_memory_dies_with_the_command(tmp_path, runner):
    """Red team F6: without an IPC namespace a segment made by agent code (ctypes, shmget) outlived the sandbox as host
    memory nothing frees, and linked concurrent sandboxes. In its own IPC namespace it goes with the command."""
    sb = Sandbox(tmp_path, runner=runner)
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "shmid = libc.shmget(0, ctypes.c_size_t(1 << 20), 0o1000 | 0o600)\n"  # IPC_PRIVATE, IPC_CREAT
            "print('made', shmid)\n")
    result = sb.run([sb.python, "-c", code])
    assert "made" in result.stdout and int(result.stdout.split()[-1]) >= 0, result.output
    left = _shm_segments_of(sb.uid)
    for shmid in left:
        subprocess.run(["ipcrm", "-m", str(shmid)], check=False)
    assert left == []



def test_live_sandboxes_never_share_a_uid_in_one_process_or_across_processes(tmp_path, monkeypatch):
    """Red team 2 H1: uids were `pid % 2000` blocks of 50, reused after 50 sandboxes and shared across processes
    whose pids agree modulo 2000; RLIMIT_NPROC and the memory watchdog count a uid's processes. Another process's
    live sandbox keeps its uid until that process dies (the kernel drops its lock), then the uid is free again.
    (A lock directory of the test's own, so that sandboxes other tests make meanwhile take no uid of it.)"""
    import gc

    from feature_deletion import sandbox

    monkeypatch.setattr(sandbox, "UID_LOCKS", tmp_path / "uids")
    told, tell = os.pipe()
    wait, release = os.pipe()
    pid = os.fork()
    if pid == 0:  # another process on the host, holding a live sandbox until told to go
        kept = Sandbox(tmp_path)
        os.write(tell, str(kept.uid).encode())
        os.read(wait, 1)
        os._exit(0)
    try:
        held = int(os.read(told, 32))
        live = [Sandbox(tmp_path) for _ in range(120)]
        uids = [sb.uid for sb in live]
        assert held == sandbox.UID_BASE and len(set(uids)) == len(uids) and held not in uids
        freed = live.pop().uid
        gc.collect()
        assert Sandbox(tmp_path).uid == freed  # a sandbox gone gives its uid back
    finally:
        os.write(release, b"x")
        os.waitpid(pid, 0)
    assert Sandbox(tmp_path).uid == held  # and a process gone, all of its sandboxes' uids
