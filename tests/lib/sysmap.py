"""The guest kernel's System.map (build/guest/linux/System.map, from the
kernel build): a guest EIP as symbol+offset, as a reader of a report would
look it up."""

import bisect
import os

from vmitest import paths

SYSTEM_MAP = os.path.join(paths.BUILD, "guest", "linux", "System.map")


class SystemMap:
    def __init__(self, path=SYSTEM_MAP):
        text = []
        with open(path) as f:
            for line in f:
                addr, kind, name = line.split()[:3]
                if kind in "tT":
                    text.append((int(addr, 16), name))
        text.sort()
        self.addrs = [a for a, _ in text]
        self.names = [n for _, n in text]

    def symbol(self, eip):
        """'name+0xoff' of the kernel text symbol at or below eip, or None."""
        i = bisect.bisect_right(self.addrs, eip) - 1
        if i < 0 or eip - self.addrs[i] > 0x10000:
            return None
        return f"{self.names[i]}+{eip - self.addrs[i]:#x}"
