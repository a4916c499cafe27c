"""A minimal nfnetlink_queue client spoken directly over a NETLINK_NETFILTER socket.

Only what the delay emulator needs: bind a queue number, choose the copy mode and the kernel queue
length, receive queued packets (their id and arrival), and issue verdicts, one at a time or as a
batch. The batch verdict (NFQNL_MSG_VERDICT_BATCH) accepts every queued packet whose id is at most
the given id; an emulator that releases packets in FIFO order therefore needs one message per
release round instead of one per packet.

Message layouts are those of include/uapi/linux/netfilter/nfnetlink_queue.h and
include/uapi/linux/netlink.h; all nfnetlink payload fields are big-endian.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
SO_RCVBUFFORCE = 33
SO_TIMESTAMP = 29  # asm-generic/socket.h (SO_TIMESTAMP_OLD); not exported by Python

NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4

NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3

NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_TIMESTAMP = 4
NFQA_PAYLOAD = 10

NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3

NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2

COPY_NONE = 0
COPY_META = 1
COPY_PACKET = 2

NF_DROP = 0
NF_ACCEPT = 1

_NLMSGHDR = struct.Struct("=IHHII")
_NFGENMSG = struct.Struct("=BBH")  # family, version, res_id (already big-endian, packed by caller)
_NLATTR = struct.Struct("=HH")
_PACKET_HDR = struct.Struct(">IHB")
_VERDICT_HDR = struct.Struct(">II")
_TIMESTAMP = struct.Struct(">QQ")


class NfQueueError(OSError):
    """The kernel refused a queue configuration request (for example: queue already bound)."""


@dataclass(slots=True)
class QueuedPacket:
    """One packet the kernel handed to user space.

    `size` is the IP total length when known; `timestamp` is the kernel's receive time (CLOCK_REALTIME,
    seconds) when the kernel stamped the packet, else 0.0 (see `enable_receive_timestamps`).
    """

    packet_id: int
    size: int
    timestamp: float = 0.0


def _attr(attr_type: int, payload: bytes) -> bytes:
    length = _NLATTR.size + len(payload)
    padding = b"\0" * ((4 - length % 4) % 4)
    return _NLATTR.pack(length, attr_type) + payload + padding


def _ip_total_length(payload: bytes | memoryview) -> int:
    if len(payload) >= 4 and payload[0] >> 4 == 4:
        return int.from_bytes(payload[2:4], "big")
    if len(payload) >= 6 and payload[0] >> 4 == 6:
        return 40 + int.from_bytes(payload[4:6], "big")
    return 0


class NfQueue:
    """A bound nfnetlink queue; use as a context manager so the queue is unbound on exit."""

    def __init__(self, queue_num: int, *, max_len: int = 65536, copy_range: int = 64,
                 rcvbuf: int = 64 << 20) -> None:
        self.queue_num = queue_num
        self._res_id = socket.htons(queue_num)
        self._seq = 0
        self._pending: list[QueuedPacket] = []
        self._buf = bytearray(1 << 17)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.bind((0, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
        # Without this, an overrun socket reports ENOBUFS on the next recv; the packets are gone either
        # way and the kernel counts them (queue_user_dropped), which is where health checks read them.
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        copy_mode = COPY_PACKET if copy_range > 0 else COPY_META
        self._config(_attr(NFQA_CFG_CMD, struct.pack(">BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET)))
        self._config(_attr(NFQA_CFG_PARAMS, struct.pack(">IB", copy_range, copy_mode))
                     + _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", max_len)))
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        if self.sock.fileno() < 0:
            return
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(1.0)
            self._config(_attr(NFQA_CFG_CMD, struct.pack(">BxH", NFQNL_CFG_CMD_UNBIND, socket.AF_INET)))
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> NfQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _message(self, msg_type: int, flags: int, body: bytes) -> bytes:
        self._seq += 1
        header = _NFGENMSG.pack(socket.AF_UNSPEC, 0, self._res_id)
        length = _NLMSGHDR.size + len(header) + len(body)
        return _NLMSGHDR.pack(length, (NFNL_SUBSYS_QUEUE << 8) | msg_type, flags, self._seq, 0) + header + body

    def _config(self, body: bytes) -> None:
        self.sock.send(self._message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, body))
        wanted = self._seq
        while True:
            data = self.sock.recv(65536)
            for msg_type, seq, payload in _split(data):
                if msg_type == NLMSG_ERROR and seq == wanted:
                    code = struct.unpack_from("=i", payload)[0]
                    if code != 0:
                        raise NfQueueError(-code, f"nfqueue {self.queue_num}: {os.strerror(-code)}")
                    return
                if msg_type == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                    self._pending.append(_parse_packet(payload))

    def receive(self, limit: int = 64) -> list[tuple[int, float]]:
        """Return up to about `limit` queued packets as (packet id, kernel timestamp or 0.0), without blocking.

        This is the emulator's hot path (one call per wake-up, one recv per packet), so it reads the two
        attributes it needs in place instead of building a QueuedPacket per packet.
        """
        packets = [(p.packet_id, p.timestamp) for p in self._pending]
        self._pending = []
        buf = self._buf
        recv_into = self.sock.recv_into
        header = _NLMSGHDR.unpack_from
        attr = _NLATTR.unpack_from
        packet_hdr = _PACKET_HDR.unpack_from
        stamp = _TIMESTAMP.unpack_from
        packet_type = (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET
        while len(packets) < limit:
            try:
                n = recv_into(buf)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:
                    continue
                raise
            offset = 0
            while offset + _NLMSGHDR.size <= n:
                length, msg_type, _flags, _seq, _pid = header(buf, offset)
                if length < _NLMSGHDR.size:
                    break
                if msg_type == packet_type:
                    end = offset + length
                    at = offset + _NLMSGHDR.size + _NFGENMSG.size
                    packet_id, timestamp = -1, 0.0
                    while at + _NLATTR.size <= end:
                        attr_len, attr_type = attr(buf, at)
                        attr_type &= 0x3FFF
                        if attr_type == NFQA_PACKET_HDR:
                            packet_id = packet_hdr(buf, at + _NLATTR.size)[0]
                        elif attr_type == NFQA_TIMESTAMP:
                            sec, usec = stamp(buf, at + _NLATTR.size)
                            timestamp = sec + usec / 1e6
                            break  # the kernel puts the timestamp after the header; nothing else is needed
                        if attr_len < _NLATTR.size:
                            break
                        at += (attr_len + 3) & ~3
                    packets.append((packet_id, timestamp))
                offset += (length + 3) & ~3
        return packets

    def verdict(self, packet_id: int, verdict: int) -> None:
        """Verdict for exactly one packet."""
        body = _attr(NFQA_VERDICT_HDR, _VERDICT_HDR.pack(verdict, packet_id))
        self._send(self._message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, body))

    def verdict_batch(self, max_packet_id: int, verdict: int) -> None:
        """Verdict for every still-queued packet whose id is <= max_packet_id."""
        body = _attr(NFQA_VERDICT_HDR, _VERDICT_HDR.pack(verdict, max_packet_id))
        self._send(self._message(NFQNL_MSG_VERDICT_BATCH, NLM_F_REQUEST, body))

    def _send(self, message: bytes) -> None:
        while True:
            try:
                self.sock.send(message)
                return
            except BlockingIOError:
                continue


def enable_receive_timestamps() -> socket.socket:
    """Make the kernel stamp received packets, so queued packets carry NFQA_TIMESTAMP.

    Receive timestamps are switched on host-wide while any socket asks for them (SO_TIMESTAMP); the
    returned socket must stay open for as long as the stamps are wanted.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
    return sock


def _split(data: bytes | memoryview) -> Iterator[tuple[int, int, memoryview]]:
    view = memoryview(data)
    offset = 0
    while offset + _NLMSGHDR.size <= len(view):
        length, msg_type, _flags, seq, _pid = _NLMSGHDR.unpack_from(view, offset)
        if length < _NLMSGHDR.size:
            return
        yield msg_type, seq, view[offset + _NLMSGHDR.size: offset + length]
        offset += (length + 3) & ~3


def _parse_packet(payload: memoryview) -> QueuedPacket:
    offset = _NFGENMSG.size
    packet_id = -1
    size = 0
    timestamp = 0.0
    end = len(payload)
    while offset + _NLATTR.size <= end:
        length, attr_type = _NLATTR.unpack_from(payload, offset)
        if length < _NLATTR.size:
            break
        attr_type &= 0x3FFF
        if attr_type == NFQA_PACKET_HDR:
            packet_id = _PACKET_HDR.unpack_from(payload, offset + _NLATTR.size)[0]
        elif attr_type == NFQA_TIMESTAMP:
            sec, usec = _TIMESTAMP.unpack_from(payload, offset + _NLATTR.size)
            timestamp = sec + usec / 1e6
        elif attr_type == NFQA_PAYLOAD:
            size = _ip_total_length(payload[offset + _NLATTR.size: offset + length])
        offset += (length + 3) & ~3
    return QueuedPacket(packet_id, size, timestamp)
