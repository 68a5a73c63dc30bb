"""Process-wide switches read when a function is compiled (not when it runs).

>>> import dimgraph as dg
>>> dg.config.rewrite_trace = True   # record every rewrite that fires: f.rewrite_trace.events
>>> dg.config.rewrite_trace = False
"""

# Record which rewrite fired on which node for every compiled function (counts are always kept).
rewrite_trace = False

# Threads a large numba kernel may split its outer loop over (`backends/numba/threads.py`):
# 0 is one per core, 1 turns splitting off.
threads = 0
