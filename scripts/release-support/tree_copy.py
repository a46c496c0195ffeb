"""Copies this working tree (tracked and untracked, not ignored files; symlinks as symlinks) into a directory, as
the source of another release that scripts/version-matrix and scripts/systemd-test build.

Unchanged files keep their modification time, and files no longer in the tree are removed, so that SwiftPM's
incremental build in the copy rebuilds only what changed. `content_key` names the copy's content, so a caller can
skip a build whose result it already has.
"""
import hashlib
import os
import subprocess


def tree_files(root):
    """(regular files, symlinks) of the working tree, relative to `root`, sorted."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, check=True,
                            capture_output=True).stdout.decode().split("\0")
    links = sorted(f for f in listed if f and os.path.islink(os.path.join(root, f)))
    files = sorted(f for f in listed if f and f not in links and os.path.isfile(os.path.join(root, f)))
    if os.path.exists(os.path.join(root, "Package.resolved")):  # ignored, but it pins the same dependencies
        files.append("Package.resolved")
    return files, links


def content_key(root, files, links, extra=b""):
    digest = hashlib.sha256(extra)
    for name in links:
        digest.update(name.encode() + b"\0" + os.readlink(os.path.join(root, name)).encode() + b"\0")
    for name in files:
        digest.update(name.encode() + b"\0")
        with open(os.path.join(root, name), "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()[:16]


def copy_tree(root, destination, files, links, skip=frozenset()):
    """Makes `destination` hold exactly `files` and `links` (minus `skip`), leaving build directories (.build*)
    alone."""
    wanted = set(files) - set(skip)
    os.makedirs(destination, exist_ok=True)
    for directory, subdirectories, names in os.walk(destination):
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".build")]
        for name in names + [d for d in subdirectories if os.path.islink(os.path.join(directory, d))]:
            relative = os.path.relpath(os.path.join(directory, name), destination)
            if relative not in wanted and relative not in links:
                os.remove(os.path.join(directory, name))
    for name in links:
        target = os.path.join(destination, name)
        if not os.path.islink(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(os.readlink(os.path.join(root, name)), target)
    for name in sorted(wanted):
        source = os.path.join(root, name)
        target = os.path.join(destination, name)
        with open(source, "rb") as handle:
            content = handle.read()
        old = None
        if os.path.exists(target):
            with open(target, "rb") as handle:
                old = handle.read()
        if old != content:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(content)
        os.chmod(target, os.stat(source).st_mode & 0o777)


def touch_manifest(destination):
    """Makes SwiftPM plan the copy's next build again: it evaluates build plugins (the version, the migrations)
    only when it plans, and plans only when the manifest or a target's file names change."""
    os.utime(os.path.join(destination, "Package.swift"))
