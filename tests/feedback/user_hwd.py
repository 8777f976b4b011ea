"""A user's own hardware description `mydev` (a folder given with --hwd-path) whose
execution unit names a performance feedback function; shared by the tests of the feedback
function API (discovery, and its messages in `mcl check`)."""

from __future__ import annotations

_USER_HDL = """
hardware_description mydev;
specializes perfect;

parallelism hierarchy {
  perfect.hierarchy.main;
  perfect.hierarchy.threads;
}

device mydev {
  mem;
  ic;
  cores;
}

memory mem {
  space(main);
  capacity = 1 GB;
}

interconnect ic {
  connects(mem, cores.core[*]);
  latency = 10 cycles;
}

execution_group cores {
  nr_units = 4;
  execution_unit core {
    slots(thread, 2);
    performance_feedback("%s");
    perfect.ops;
    load_store_unit lsu {
      slots(thread, 1);
      perfect.memory_ops;
    }
  }
}
"""


def user_hdl(function: str) -> str:
    """The text of mydev.hdl, naming `performance_feedback("<function>")`."""
    return _USER_HDL % function


KERNEL = """
mydev void add(int n, main float[n] c, main float[n] a, main float[n] b) {
  foreach (int i in n threads) {
    c[i] = a[i] + b[i];
  }
}
"""
