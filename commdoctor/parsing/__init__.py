"""Pure text -> records: parsers for the output of NCCL, torch, gloo, MPI, UCX and py-spy.

Promise: standard library only (an optional multi-pattern scanner is used when
installed); no function here touches files, sockets or processes, and none of
them raises on any input: malformed text becomes ``None`` or a counted skip.
"""
