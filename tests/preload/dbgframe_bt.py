# gdb script for tests/preload/dbgframe_check.sh: runs the program given to
# gdb (`ctrace run ... -- PROG`, whose exec gdb follows) and, at every call
# of the preloaded shim's pthread_cond_wait and pthread_join, writes to
# $DBGFRAME_BT_OUT the function, then the pcs and the names of the frames
# above it, outermost last, one line per call:
#   pthread_cond_wait | 0x... 0x... ... | wait_here c2 ...
# (The shim's stacks start with a pc in its own wrapper; the frames above
# it are these, but for the shim's own beneath the program's, which the
# tracer leaves out.)
import os

import gdb

out = open(os.environ["DBGFRAME_BT_OUT"], "w")


class Calls(gdb.Breakpoint):
    def stop(self):
        f = gdb.newest_frame()
        if "libctrace-preload" not in (gdb.solib_name(f.pc()) or ""):
            return False  # libc's, which the shim calls in turn
        pcs, names = [], []
        f = f.older()
        while f is not None:
            # The shim's frames beneath the program's (its thread
            # trampoline) are the tracer's own, which no stack shows.
            if "libctrace-preload" not in (gdb.solib_name(f.pc()) or ""):
                pcs.append("%#x" % f.pc())
                names.append(f.name() or "?")
            f = f.older()
        out.write("%s | %s | %s\n" % (self.location, " ".join(pcs), " ".join(names)))
        out.flush()
        return False


for setting in ["breakpoint pending on", "pagination off", "startup-with-shell off",
                "backtrace past-main on", "backtrace past-entry on", "print thread-events off",
                "print inferior-events off", "debuginfod enabled off"]:
    try:
        gdb.execute("set " + setting)
    except gdb.error:
        pass  # an older gdb without the setting
Calls("pthread_cond_wait")
Calls("pthread_join")
gdb.execute("run")
out.close()
