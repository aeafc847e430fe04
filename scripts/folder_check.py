"""Whether a folder can take the files a script writes, asked before the script's work (a
folder that exists but takes no file, /proc or a read-only one, ended in a traceback after it)."""
import os
import tempfile


def folder_problem(path):
    """Why `path` cannot be a folder to write into ("" when it can be): made where it is missing,
    then a file made in it and removed."""
    if os.path.exists(path) and not os.path.isdir(path):
        return "%s exists and is not a folder" % path
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".pil-write-check-", dir=path)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        return "cannot make a file in %s: %s" % (path, e.strerror or e)
    return ""
