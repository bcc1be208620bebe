"""What the kernel must allow for an emulated network, and the few system calls around it.

An emulated network needs two capabilities: CAP_SYS_ADMIN, to create network namespaces and
enter them, and CAP_NET_ADMIN, to make links, shape them and install routes. Root has both.
Without them, where the kernel allows unprivileged user namespaces, the process moves itself
into a new user namespace in which it is root (:func:`enter_user_namespace`, what
``unshare --user --map-root-user --mount`` does): its namespaces then live in a private mount
table, invisible to other processes, and go away with the process. Otherwise
:func:`require_privileges` names what is missing, in one line.

Network namespaces are entered per thread (``setns(2)`` moves the calling thread only), so
:func:`in_namespace` runs a function on a short-lived thread inside a namespace (sysctls, probe
sockets) without moving the caller; a rank process calls :func:`enter_namespace` once, first
thing, so that every socket and thread it makes afterwards lives there.
"""

import ctypes
import errno
import os
import threading

from ..errors import EmulationError, EmulationUnavailableError

__all__ = ["require_netlink", "require_privileges", "privileged", "user_namespaces_allowed",
           "in_user_namespace", "enter_user_namespace", "prepare_process", "release_folder",
           "enter_namespace",
           "in_namespace", "write_sysctls", "NETNS_DIR"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_CAP_NET_ADMIN = 12
_CAP_SYS_ADMIN = 21
#: Where named network namespaces live (``ip netns`` reads them there).
NETNS_DIR = "/run/netns"

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def require_netlink():
    """Import pyroute2 (the netlink library) or say how to install it."""
    try:
        import pyroute2  # noqa: F401
    except ImportError:
        raise EmulationUnavailableError(
            "emulated networks need pyroute2, which is not installed; pip install "
            "'topocoll[emulate]'") from None


def _capabilities():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def privileged():
    """True when this process may create and configure network namespaces itself."""
    caps = _capabilities()
    return bool(caps >> _CAP_SYS_ADMIN & 1) and bool(caps >> _CAP_NET_ADMIN & 1)


def user_namespaces_allowed():
    """Why unprivileged user namespaces cannot be made here, or None if they can (as far as the
    kernel's settings tell; the attempt itself is the final word)."""
    try:
        with open("/proc/sys/user/max_user_namespaces") as f:
            if int(f.read().strip() or 0) == 0:
                return "user.max_user_namespaces is 0"
    except (OSError, ValueError):
        return "this kernel has no user namespaces"
    for path, word in (("/proc/sys/kernel/unprivileged_userns_clone", "0"),
                       ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1")):
        try:
            with open(path) as f:
                if f.read().strip() == word:
                    return f"{path.removeprefix('/proc/sys/').replace('/', '.')} is {word}"
        except OSError:
            continue
    return None


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def enter_user_namespace():
    """Move this process into a new user namespace (root inside, this user outside) with a
    private mount table; raise :class:`EmulationUnavailableError` naming why it cannot.

    The move is for good: the process stays there (children too). It needs a single-threaded
    process, so a library user calls it before starting threads; the CLI does so first.
    """
    uid, gid = os.geteuid(), os.getegid()
    libc = _c()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        why = ("this process runs several threads (numpy's start with its import): call "
               "topocoll.emulate.prepare_process() first, before importing numpy or starting "
               "threads, or run as root" if err == errno.EINVAL else os.strerror(err))
        raise EmulationUnavailableError(
            f"emulated networks need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) or an unprivileged "
            f"user namespace, and making one failed: {why}")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    except OSError as exc:
        raise EmulationUnavailableError(f"could not map this user into a user namespace: "
                                        f"{exc.strerror}") from None
    # our mounts (the namespace files) stay in our mount table, not the machine's
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise EmulationUnavailableError("could not make the mount table private in the user "
                                        f"namespace: {os.strerror(ctypes.get_errno())}")


def in_user_namespace():
    """True when this process runs in a user namespace other than the machine's own."""
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def require_privileges():
    """How this process may build networks: ``"root"`` (in the machine's own user namespace:
    namespaces are named in :data:`NETNS_DIR`, where ``ip netns`` sees them), ``"user
    namespace"`` (privileged inside a user namespace: namespaces in a private folder) or
    ``"unprivileged"`` (after :func:`enter_user_namespace`, the second); else
    :class:`EmulationUnavailableError` naming what is missing."""
    if privileged():
        return "user namespace" if in_user_namespace() else "root"
    why = user_namespaces_allowed()
    if why is None:
        return "unprivileged"
    raise EmulationUnavailableError(
        "emulated networks need root (CAP_SYS_ADMIN to create network namespaces, "
        f"CAP_NET_ADMIN for links, shaping and routes) or unprivileged user namespaces ({why}); "
        "run as root, e.g. with sudo")


def prepare_process():
    """Make this process able to build emulated networks, before it starts any thread: check
    for pyroute2, and where it lacks the privileges but the kernel allows user namespaces, move
    it into one (:func:`enter_user_namespace`). Returns the mode of
    :func:`require_privileges` that then holds; raises what is missing."""
    require_netlink()
    mode = require_privileges()
    if mode == "unprivileged":
        enter_user_namespace()
        mode = "user namespace"
    return mode


def release_folder(path):
    """Unmount (the namespace files' bind mount of) and remove a private namespace folder."""
    _c().umount2(os.fsencode(path), 2)   # MNT_DETACH; not mounted at all is fine too
    try:
        os.rmdir(path)
    except OSError:
        pass


def enter_namespace(path):
    """Move the calling thread into the network namespace bound at ``path`` (threads and
    sockets it makes afterwards live there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise EmulationError(f"network namespace {path}: {exc.strerror}") from None
    try:
        if _c().setns(fd, CLONE_NEWNET) != 0:
            raise EmulationError(f"cannot enter network namespace {path}: "
                                 f"{os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def in_namespace(path, fn, *args):
    """``fn(*args)`` on a thread inside the network namespace at ``path``; its result, or its
    exception raised here."""
    box = {}

    def body():
        try:
            enter_namespace(path)
            box["value"] = fn(*args)
        except BaseException as exc:   # handed back to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=body, name="topocoll-netns", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _write_all(values):
    for key, value in values.items():
        try:
            _write("/proc/sys/" + key.replace(".", "/"), str(value))
        except OSError as exc:
            raise EmulationError(f"cannot set {key} = {value}: {exc.strerror}") from None


def write_sysctls(path, values):
    """Set ``values`` (``{"net.ipv4.ip_forward": 1, ...}``) inside the namespace at ``path``."""
    try:
        in_namespace(path, _write_all, values)
    except EmulationError as exc:
        raise EmulationError(f"{os.path.basename(path)}: {exc}") from None
